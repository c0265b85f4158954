/**
 * The service as a process: with LOG_FORMAT=json its stdout is JSON, one entry a line, and a
 * request's access line is there with the id it was sent; what a dependency prints (the
 * object-store SDK's multi-line warning) and the embedded PostgreSQL's notices are JSON lines
 * too. The formats' details are in
 * Logs.test.ts, the routing's in PrintedAsLogs.fast.test.ts.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { objectStoreCredentials, startObjectStore } from "../support/ObjectStore.ts"
import { serviceNodeOptions, spawnService } from "../support/Process.ts"
import { freshDatabase } from "../support/Service.ts"

it.live("LOG_FORMAT=json: every stdout line is a JSON object, the access line among them", () =>
  Effect.scoped(Effect.gen(function*() {
    const { url } = yield* freshDatabase
    const service = yield* Effect.acquireRelease(
      Effect.promise(() => spawnService({ env: { DATABASE_URL: url, LOG_LEVEL: "info", LOG_FORMAT: "json", AUTH_JWT_SECRET: "s".repeat(40) } })),
      (s) => Effect.sync(() => s.child.kill("SIGKILL"))
    )
    let stdout = ""
    service.child.stdout!.on("data", (d) => (stdout += d))
    const answer = yield* Effect.promise(() => fetch(`${service.baseUrl}/nodes?limit=3`, { headers: { "x-request-id": "from-the-process-test" } }))
    expect(answer.headers.get("x-request-id")).toBe("from-the-process-test")
    yield* Effect.promise(() => answer.text())
    const entries = yield* Effect.promise(async () => {
      for (let i = 0; i < 100 && !stdout.includes("from-the-process-test"); i++) await new Promise((r) => setTimeout(r, 50))
      return stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { message: unknown; annotations: Record<string, unknown> })
    })
    const access = entries.filter((e) => e.message === "http" && e.annotations.request_id === "from-the-process-test")
    expect(access).toHaveLength(1)
    expect(access[0]!.annotations).toMatchObject({ method: "GET", route: "/nodes", status: 200 })
  })), 120_000)

/**
 * The SDK warns, once, from the constructor of its client, that it will soon need a newer Node;
 * the service itself needs Node 22.19 and no longer starts under the Node 20 that warning was
 * met on. So the process is told it runs Node 20 before anything loads: the SDK's own warning,
 * its own nine lines, through process.emitWarning as under Node 20.
 */
const underNode20 = `data:text/javascript,Object.defineProperty(process,"version",{value:"v20.20.2"})`

it.live("LOG_FORMAT=json with STORAGE=s3: the object-store SDK's multi-line warning is one JSON line, and stdout holds nothing else", () =>
  Effect.scoped(Effect.gen(function*() {
    const { url } = yield* freshDatabase
    const store = yield* startObjectStore()
    const service = yield* Effect.acquireRelease(
      Effect.promise(() =>
        spawnService({
          command: [process.execPath, "--import", underNode20, ...serviceNodeOptions, "dist/main.js"],
          env: {
            DATABASE_URL: url,
            LOG_LEVEL: "info",
            LOG_FORMAT: "json",
            AUTH_JWT_SECRET: "s".repeat(40),
            STORAGE: "s3",
            S3_ENDPOINT: store.endpoint,
            S3_BUCKET: store.bucket,
            S3_FORCE_PATH_STYLE: "true",
            AWS_ACCESS_KEY_ID: objectStoreCredentials.accessKeyId,
            AWS_SECRET_ACCESS_KEY: objectStoreCredentials.secretAccessKey,
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: undefined
          }
        })
      ),
      (s) => Effect.sync(() => s.child.kill("SIGKILL"))
    )
    yield* Effect.promise(() => fetch(`${service.baseUrl}/nodes?limit=1`).then((r) => r.text()))
    const lines = yield* Effect.promise(async () => {
      for (let i = 0; i < 100 && !service.stdout().includes("\"route\":\"/nodes\""); i++) await new Promise((r) => setTimeout(r, 50))
      return service.stdout().split("\n").filter((line) => line !== "")
    })
    const entries = lines.map((line) => {
      try {
        return JSON.parse(line) as { message: string; logLevel: string; annotations: Record<string, unknown> }
      } catch {
        throw new Error(`a stdout line is not JSON: ${line}`)
      }
    })
    const warnings = entries.filter((e) => e.message.includes("NodeVersionSupportWarning"))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ logLevel: "WARN", annotations: { source: "warning" } })
    expect(warnings[0]!.message).toContain("The AWS SDK for JavaScript (v3)\n")
    expect(entries.some((e) => e.message === "http" && e.annotations.route === "/nodes")).toBe(true)
    // Node's printer no longer writes it to stderr
    expect(service.output()).not.toContain("(node:")
  })), 120_000)

it.live("LOG_FORMAT=json with the embedded PostgreSQL: its notices are JSON lines, from the first start to the stop", () =>
  Effect.gen(function*() {
    const dataDir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-logs-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const service = yield* Effect.promise(() =>
      spawnService({ env: { DATABASE_URL: undefined, DATA_DIR: dataDir, LOG_LEVEL: "info", LOG_FORMAT: "json" } })
    )
    // a stop by signal stops the embedded server too, which a kill would leave running
    const code = yield* Effect.promise(() =>
      new Promise<number | null>((resolve) => {
        service.child.on("exit", resolve)
        service.child.kill("SIGTERM")
      })
    )
    expect(code).toBe(0)
    const entries = service.stdout().split("\n").filter((line) => line !== "").map((line) => {
      try {
        return JSON.parse(line) as { message: string; logLevel: string }
      } catch {
        throw new Error(`a stdout line is not JSON: ${line}`)
      }
    })
    expect(entries.find((e) => e.message.startsWith("embedded PostgreSQL: initialising a PostgreSQL cluster"))?.logLevel).toBe("INFO")
    expect(entries.some((e) => e.message.startsWith("shutdown done"))).toBe(true)
  }).pipe(Effect.scoped), 180_000)
