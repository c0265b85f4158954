/**
 * `npm run token` mints development tokens the service accepts: with AUTH_JWT_SECRET, and without
 * it from the secret generated into DATA_DIR (by the command, or by the service on first start).
 * The token alone is the last line of standard output.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as jose from "jose"
import { spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { expectError, get } from "./support/Http.ts"
import { freshDatabase, type Running, Service, startService, testJwtSecret } from "./support/Service.ts"

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The settings the command reads, all unset unless given: the test controls them completely. */
const authSettings = [
  "AUTH_JWT_SECRET",
  "AUTH_JWKS_URL",
  "AUTH_ISSUER",
  "AUTH_AUDIENCE",
  "AUTH_ADMIN_CLAIM",
  "ADMIN_SUBJECTS",
  "AUTH_MAX_TOKEN_LIFETIME_SECONDS",
  "DATA_DIR"
]

/** `npm run -s token -- <args>` in the project, with exactly the given auth settings. */
const runTokenCommand = (args: ReadonlyArray<string>, settings: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<CommandResult>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = { ...process.env }
      for (const name of authSettings) delete env[name]
      Object.assign(env, settings)
      const child = spawn("npm", ["run", "-s", "token", "--", ...args], { cwd: projectRoot, env, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
      const timer = setTimeout(() => child.kill("SIGKILL"), 45_000)
      child.on("error", reject)
      child.on("close", (code) => {
        clearTimeout(timer)
        resolve({ code, stdout, stderr })
      })
    })
  )

/** The last line of standard output is the token alone: three base64url segments. */
const tokenOf = (result: CommandResult) => {
  expect(result.code, result.stderr).toBe(0)
  const lines = result.stdout.split("\n").filter((line) => line !== "")
  const last = lines.at(-1) ?? ""
  expect(last, `stdout: ${JSON.stringify(result.stdout)}`).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
  return last
}

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-token-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const asBearer = (service: Running, token: string, pathAndQuery: string) => get(service, pathAndQuery, { token })

const adminOnly = "/publishers/unclaimed/nodes?include_banned=true"

/** A token signed with the suite's fixed secret (what the other test services accept). */
const suiteSecretToken = () =>
  Effect.promise(() =>
    new jose.SignJWT({ sub: "suite-secret-user" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("10m")
      .sign(new TextEncoder().encode(testJwtSecret))
  )

layer(Service.layer(), { excludeTestServices: true })("npm run token", (it) => {
  it.effect("with AUTH_JWT_SECRET: --admin mints a site admin's token, without it a plain user's; another secret's tokens are refused", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const dataDir = yield* tempDir
      // three independent runs side by side (each is a few seconds of process start-up)
      const [adminRun, plainRun, otherRun] = yield* Effect.all([
        runTokenCommand(["--sub", "dev", "--email", "d@example.com", "--admin"], { AUTH_JWT_SECRET: testJwtSecret, DATA_DIR: dataDir }),
        runTokenCommand(["--sub", "dev-plain", "--name", "Dev Plain"], { AUTH_JWT_SECRET: testJwtSecret, DATA_DIR: dataDir }),
        runTokenCommand(["--sub", "dev-other"], { AUTH_JWT_SECRET: "some-other-secret-than-the-service-uses-000000", DATA_DIR: dataDir })
      ], { concurrency: 3 })

      const admin = tokenOf(adminRun)
      // it says which key it signed with, since another data folder's key gets a 401
      expect(adminRun.stderr).toContain("signed with AUTH_JWT_SECRET")
      const claims = jose.decodeJwt(admin)
      expect(claims).toMatchObject({ sub: "dev", email: "d@example.com", admin: true })
      expect(claims.exp).toBeGreaterThan(Date.now() / 1000)
      // 30 days by default, the longest the service accepts (AUTH_MAX_TOKEN_LIFETIME_SECONDS), never more
      expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(2_592_000)
      expect(claims.exp! - claims.iat!).toBeGreaterThanOrEqual(2_592_000 - 1)
      expect(jose.decodeProtectedHeader(admin).alg).toBe("HS256")
      // the configured secret was used: none generated into DATA_DIR
      expect(yield* Effect.promise(() => fs.readdir(dataDir))).not.toContain("jwt-secret")
      expect((yield* asBearer(service, admin, "/publishers/unclaimed/nodes")).status).toBe(200)
      const asAdmin = yield* asBearer(service, admin, adminOnly)
      expect(asAdmin.status).toBe(200)
      expect(asAdmin.body).toEqual([])

      const plain = tokenOf(plainRun)
      expect(jose.decodeJwt(plain)).toMatchObject({ sub: "dev-plain", name: "Dev Plain" })
      expect(jose.decodeJwt(plain)).not.toHaveProperty("admin")
      expect((yield* asBearer(service, plain, "/publishers/unclaimed/nodes")).status).toBe(200)
      expectError(yield* asBearer(service, plain, adminOnly), 403, "forbidden")

      expectError(yield* asBearer(service, tokenOf(otherRun), "/publishers/unclaimed/nodes"), 401, "unauthorized")
    }), 120_000)

  it.effect("without AUTH_JWT_SECRET it generates DATA_DIR/jwt-secret, and a service on that DATA_DIR accepts its tokens", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const firstRun = yield* runTokenCommand(["--sub", "dev", "--email", "d@example.com", "--admin"], { DATA_DIR: dataDir })
      const first = tokenOf(firstRun)
      const secretFile = path.join(dataDir, "jwt-secret")
      expect(firstRun.stderr).toContain(`signed with ${secretFile}`)
      const stat = yield* Effect.promise(() => fs.stat(secretFile))
      expect(stat.isFile()).toBe(true)
      // a secret, so readable by its owner only
      expect(stat.mode & 0o077).toBe(0)
      const secret = yield* Effect.promise(() => fs.readFile(secretFile, "utf8"))
      expect(Buffer.from(secret.trim(), "base64url").length).toBeGreaterThanOrEqual(32)

      // a second run reuses the secret rather than replacing it
      const second = tokenOf(yield* runTokenCommand(["--sub", "dev2"], { DATA_DIR: dataDir }))
      expect(yield* Effect.promise(() => fs.readFile(secretFile, "utf8"))).toBe(secret)

      const { url } = yield* freshDatabase
      const service = yield* startService(url, (c) => ({ ...c, dataDir, auth: { ...c.auth, jwtSecret: Option.none() } }))
      const admin = yield* asBearer(service, first, adminOnly)
      expect(admin.status).toBe(200)
      expect(admin.body).toEqual([])
      expect((yield* asBearer(service, second, "/publishers/unclaimed/nodes")).status).toBe(200)
      // and it is that secret, not the suite's fixed one, that the service verifies with
      expectError(yield* asBearer(service, yield* suiteSecretToken(), "/publishers/unclaimed/nodes"), 401, "unauthorized")
    }), 120_000)

  it.effect("a service started first generates the secret; the command then mints with it", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const { url } = yield* freshDatabase
      const service = yield* startService(url, (c) => ({ ...c, dataDir, auth: { ...c.auth, jwtSecret: Option.none() } }))
      const token = tokenOf(yield* runTokenCommand(["--sub", "after-start", "--admin"], { DATA_DIR: dataDir }))
      const admin = yield* asBearer(service, token, adminOnly)
      expect(admin.status).toBe(200)
    }), 120_000)

  it.effect("usage errors: no --sub, a JWKS configured, or --expires past the longest lifetime, exit non-zero without a token", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const [noSub, jwks, tooLong] = yield* Effect.all([
        runTokenCommand(["--email", "d@example.com"], { AUTH_JWT_SECRET: testJwtSecret, DATA_DIR: dataDir }),
        runTokenCommand(["--sub", "dev"], { AUTH_JWKS_URL: "http://127.0.0.1:9/jwks.json", DATA_DIR: dataDir }),
        runTokenCommand(["--sub", "dev", "--expires", "31d"], { AUTH_JWT_SECRET: testJwtSecret, DATA_DIR: dataDir })
      ], { concurrency: 3 })
      expect(tooLong.code).not.toBe(0)
      expect(tooLong.stdout.trim()).toBe("")
      expect(tooLong.stderr).toMatch(/AUTH_MAX_TOKEN_LIFETIME_SECONDS/)
      expect(noSub.code).not.toBe(0)
      expect(noSub.stdout.trim()).toBe("")
      expect(noSub.stderr).toMatch(/--sub/)
      expect(jwks.code).not.toBe(0)
      expect(jwks.stdout.trim()).toBe("")
      expect(jwks.stderr).toMatch(/AUTH_JWKS_URL/)
    }), 120_000)
})
