/**
 * Bounded shutdown (SHUTDOWN_GRACE_SECONDS): the service as a process on its embedded database,
 * stopped the ways it is stopped in the field: SIGTERM to the service (a process manager), SIGTERM
 * to `npm start` alone (a container whose PID 1 is npm), and Ctrl-C in a terminal (SIGINT to the
 * whole process group). Each must end with the service and its PostgreSQL gone, within the grace.
 * In process: an NDJSON answer the vendor keeps open ends at the grace. Every stop logs two lines
 * (issue 22): what was in flight when it began, and how each request ended and how long it took.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Logger, References, Scope } from "effect"
import { type ChildProcess } from "node:child_process"
import { readFileSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { parseOwner } from "../src/Db/Owner.ts"
import { FakeMusicVendor } from "./support/FakeMusicVendor.ts"
import { atFakeVendor, generatePath } from "./support/Music.ts"
import { serviceCommand, spawnService } from "./support/Process.ts"
import { closedAfterPromise, slowRequestPromise } from "./support/RawHttp.ts"
import { serviceOnFreshDatabase } from "./support/Service.ts"

/** What a stop may take beyond the grace: stopping PostgreSQL, on a busy machine. */
const margin = 6_000

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** A process that ended but that nobody reaped yet (a PID 1 that does not reap) counts as gone. */
const isZombie = (pid: number) => {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return !isZombie(pid)
  } catch (e) {
    // PostgreSQL runs as another user when the tests run as root
    return (e as NodeJS.ErrnoException).code === "EPERM" && !isZombie(pid)
  }
}

interface Started {
  readonly child: ChildProcess
  readonly port: number
  readonly output: () => string
  /** The node process serving (for `npm start`, a grandchild). */
  readonly servicePid: number
  readonly postgresPid: number
}

/** One data folder for the file: the cluster is initialised once and each test starts on it. */
let dataDir = ""
const everyStarted: Array<Started> = []
beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-shutdown-"))
})
// a failed test leaves nothing running: its process group, then its PostgreSQL (an immediate stop)
afterAll(async () => {
  for (const started of everyStarted) {
    if (isAlive(started.child.pid!)) process.kill(-started.child.pid!, "SIGKILL")
    if (isAlive(started.servicePid)) process.kill(started.servicePid, "SIGKILL")
    if (isAlive(started.postgresPid)) process.kill(started.postgresPid, "SIGQUIT")
  }
  await fs.rm(dataDir, { recursive: true, force: true })
})

/**
 * Runs `command` on the embedded database with a grace of `graceSeconds`, in its own process
 * group, logging JSON lines from info up.
 */
const start = async (command: ReadonlyArray<string>, graceSeconds: number): Promise<Started> => {
  const service = await spawnService({
    command,
    detached: true,
    env: {
      DATA_DIR: dataDir,
      DATABASE_URL: undefined,
      SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
      LOG_LEVEL: "info",
      LOG_FORMAT: "json"
    }
  })
  const servicePid = parseOwner(await fs.readFile(path.join(dataDir, "pg.owner"), "utf8"))!.pid
  const postmaster = await fs.readFile(path.join(dataDir, "pg", "postmaster.pid"), "utf8")
  const started = { ...service, servicePid, postgresPid: Number(postmaster.split("\n")[0]) }
  everyStarted.push(started)
  return started
}

interface LogLine {
  readonly level: string
  readonly message: string
}

/** The shutdown's lines (`shutdown began`, `shutdown done`) among the JSON lines of `output`. */
const shutdownLines = (output: string): Array<LogLine> =>
  output.split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { logLevel: string; message: unknown })
    .map(({ logLevel, message }) => ({ level: logLevel, message: String(message) }))
    .filter(({ message }) => /^shutdown (began|done)/.test(message))

/** The whole stop's and the HTTP drain's seconds in a `shutdown done` line, which must match `outcome`. */
const doneLine = (line: LogLine | undefined, outcome: string) => {
  const match = /^shutdown done in ([\d.]+) s \(HTTP drained in ([\d.]+) s\): (.*)$/.exec(line?.message ?? "")
  expect(match, line?.message).not.toBeNull()
  expect(match![3]).toBe(outcome)
  return { totalMillis: Number(match![1]) * 1000, drainMillis: Number(match![2]) * 1000 }
}

const node = serviceCommand
const npmStart = ["npm", "start", "--silent"]

/** The exit code (or the signal that ended it) of `child`, and the milliseconds since `from`. */
const exitOf = (child: ChildProcess, from: number) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null; millis: number }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resolve({ code: child.exitCode, signal: child.signalCode, millis: Date.now() - from })
    }
    child.once("exit", (code, signal) => resolve({ code, signal, millis: Date.now() - from }))
  })

/** Waits until the service and its PostgreSQL are gone, at the latest at `deadline` (epoch milliseconds). */
const goneBy = async (started: Started, deadline: number) => {
  while (Date.now() < deadline) {
    if (!isAlive(started.servicePid) && !isAlive(started.postgresPid)) return
    await sleep(50)
  }
  throw new Error(`still running at the deadline: service ${isAlive(started.servicePid)}, ` +
    `PostgreSQL ${isAlive(started.postgresPid)}\n${started.output()}`)
}

/** PostgreSQL was stopped cleanly (pg_ctl removes its pid file), not left for the next start. */
const expectPostgresStopped = async () => {
  await expect(fs.access(path.join(dataDir, "pg", "postmaster.pid"))).rejects.toThrow()
}

/** Whether a new connection to `port` is refused. */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => (socket.destroy(), resolve(false)))
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"))
  })

const jsonPost = (length: number) =>
  `POST /publishers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`

/**
 * A megabyte of JSON at 2 KB/s (200 bytes every 100 ms), which the service reads whole before it
 * answers: the milliseconds from connecting until the server closes the connection.
 */
const slowUpload = (port: number) =>
  closedAfterPromise(`http://127.0.0.1:${port}`, (socket) => {
    socket.write(jsonPost(1_000_000))
    const timer = setInterval(() => socket.write(" ".repeat(200)), 100)
    socket.on("close", () => clearInterval(timer))
  })

describe("shutdown", () => {
  it("SIGTERM: a request in flight is answered, new connections are refused, a 2 KB/s upload is cut at the grace", async () => {
    const grace = 2
    const service = await start(node, grace)
    const upload = slowUpload(service.port)
    // the body's two bytes arrive 600 and 1,200 ms after the head: the answer comes after the signal
    const answer = slowRequestPromise(`http://127.0.0.1:${service.port}`, jsonPost(2), ["{", "}"], 600)
    await sleep(300)
    const signalled = Date.now()
    service.child.kill("SIGTERM")
    await sleep(300)
    expect(await refused(service.port)).toBe(true)
    const response = await answer
    // no login: the publisher is refused, but the refusal is the request's own answer
    expect(response.status).toBe(401)
    expect(JSON.parse(response.body)).toMatchObject({ error: expect.any(String) })
    expect(response.headers.connection).toBe("close")
    const exit = await exitOf(service.child, signalled)
    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(exit.millis).toBeLessThan(grace * 1000 + margin)
    // drained for the grace, then cut
    expect(await upload).toBeGreaterThanOrEqual(grace * 1000)
    await goneBy(service, Date.now() + 1000)
    await expectPostgresStopped()
    // both bodies were still arriving at the signal; one request was answered, the upload cut
    const [began, done, ...more] = shutdownLines(service.output())
    expect(more).toEqual([])
    expect(began).toEqual({ level: "INFO", message: `shutdown began: 2 requests in flight (2 uploads), given up to ${grace} s to finish` })
    expect(done?.level).toBe("WARN")
    const { totalMillis, drainMillis } = doneLine(done, "1 finished (1 upload), 1 cut at the grace (1 upload)")
    expect(drainMillis).toBeGreaterThanOrEqual(grace * 1000 - 10)
    expect(drainMillis).toBeLessThan(grace * 1000 + margin)
    expect(totalMillis).toBeGreaterThanOrEqual(drainMillis)
    expect(totalMillis).toBeLessThanOrEqual(exit.millis + 10)
  }, 120_000)

  it("SIGTERM with one request in flight that finishes: logged when it begins and when it ends, without waiting for the grace", async () => {
    const grace = 10
    const service = await start(node, grace)
    // the body's two bytes arrive 600 and 1,200 ms after the head: the answer comes after the signal
    const answer = slowRequestPromise(`http://127.0.0.1:${service.port}`, jsonPost(2), ["{", "}"], 600)
    await sleep(300)
    const signalled = Date.now()
    service.child.kill("SIGTERM")
    expect((await answer).status).toBe(401)
    const exit = await exitOf(service.child, signalled)
    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(exit.millis).toBeLessThan(grace * 1000)
    await expectPostgresStopped()
    const [began, done, ...more] = shutdownLines(service.output())
    expect(more).toEqual([])
    expect(began).toEqual({ level: "INFO", message: `shutdown began: 1 request in flight (1 upload), given up to ${grace} s to finish` })
    expect(done?.level).toBe("INFO")
    const { totalMillis, drainMillis } = doneLine(done, "1 finished (1 upload)")
    // the answer came about 900 ms after the signal, then the connection closed
    expect(drainMillis).toBeGreaterThanOrEqual(500)
    expect(drainMillis).toBeLessThan(grace * 1000)
    expect(totalMillis).toBeGreaterThanOrEqual(drainMillis)
    expect(totalMillis).toBeLessThanOrEqual(exit.millis + 10)
  }, 120_000)

  it("SIGTERM to the npm process alone (a container's PID 1) stops the service and PostgreSQL", async () => {
    const grace = 10
    const service = await start(npmStart, grace)
    expect(service.servicePid).not.toBe(service.child.pid)
    const signalled = Date.now()
    process.kill(service.child.pid!, "SIGTERM")
    const exit = await exitOf(service.child, signalled)
    // nothing in flight: no wait for the grace
    await goneBy(service, signalled + grace * 1000)
    // npm passes on its script's exit code: the service's 0
    expect(exit).toMatchObject({ code: 0, signal: null })
    await expectPostgresStopped()
    const lines = shutdownLines(service.output())
    expect(lines.map(({ level }) => level)).toEqual(["INFO", "INFO"])
    expect(lines[0]!.message).toBe("shutdown began: no request in flight")
    expect(lines[1]!.message).toMatch(/^shutdown done in [\d.]+ s: no request was in flight$/)
  }, 120_000)

  it("Ctrl-C, twice (SIGINT to the process group of `npm start`), stops the service and PostgreSQL", async () => {
    const grace = 2
    const service = await start(npmStart, grace)
    // an upload in flight keeps the service draining while the second Ctrl-C arrives
    const upload = slowUpload(service.port)
    await sleep(500)
    const signalled = Date.now()
    // npm passes each SIGINT on as well: the service receives up to four, some while it stops
    process.kill(-service.child.pid!, "SIGINT")
    await sleep(500)
    expect(isAlive(service.servicePid)).toBe(true)
    process.kill(-service.child.pid!, "SIGINT")
    expect(await upload).toBeGreaterThanOrEqual(grace * 1000)
    const exit = await exitOf(service.child, signalled)
    await goneBy(service, signalled + grace * 1000 + margin)
    expect(exit).toMatchObject({ code: 0, signal: null })
    await expectPostgresStopped()
  }, 120_000)
})

/** A logger that keeps the instance's lines from info up in `lines`. */
const keptIn = (lines: Array<LogLine>) =>
  Layer.merge(
    Logger.layer([
      Logger.make(({ logLevel, message }) => void lines.push({ level: logLevel.toUpperCase(), message: [message].flat().join(" ") }))
    ]),
    Layer.succeed(References.MinimumLogLevel, "Info")
  )

/** The shutdown's lines among `lines`. */
const shutdownOf = (lines: ReadonlyArray<LogLine>) => lines.filter(({ message }) => /^shutdown (began|done)/.test(message))

/**
 * The service on a fresh database with `grace` to stop in, its lines kept, and a music stream
 * from `fake` under way: its reader, after the first chunk (the vendor's duration event).
 */
const streamingUnderGrace = (fake: FakeMusicVendor["Service"], grace: number) =>
  Effect.gen(function*() {
    const lines: Array<LogLine> = []
    const serviceScope = yield* Scope.make()
    const service = yield* Scope.provide(
      serviceOnFreshDatabase(atFakeVendor(fake, (c) => ({ ...c, shutdownGraceMillis: grace })), keptIn(lines)),
      serviceScope
    )
    const token = yield* Effect.promise(() => service.token({ sub: "shutdown-listener" }))
    const { reader, first } = yield* Effect.promise(async () => {
      const response = await service.fetch(generatePath, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: new URLSearchParams({ video: "https://a.example/v" })
      })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      const first = new TextDecoder().decode((await reader.read()).value)
      expect(first).toContain('"duration"')
      return { reader, first }
    })
    return { lines, serviceScope, reader, first }
  })

describe("shutdown of a streamed answer", () => {
  it.live("an NDJSON answer in flight (the music proxy) ends within the grace", () =>
    Effect.gen(function*() {
      const grace = 1000
      const fake = yield* FakeMusicVendor
      // one event, then the vendor holds its stream open, and the service sends keep-alive lines
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration_sec":3}'], end: "hold" })
      const { lines, serviceScope, reader } = yield* streamingUnderGrace(fake, grace)
      const stopping = Date.now()
      const streamEnd = Effect.runPromise(Effect.promise(async () => {
        for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return Date.now() - stopping
      }))
      yield* Scope.close(serviceScope, Exit.void)
      const stopMillis = Date.now() - stopping
      const streamMillis = yield* Effect.promise(() => streamEnd)
      expect(streamMillis).toBeGreaterThanOrEqual(grace - 50)
      expect(streamMillis).toBeLessThan(grace + 2000)
      expect(stopMillis).toBeLessThan(grace + 4000)
      const [began, done, ...more] = shutdownOf(lines)
      expect(more).toEqual([])
      expect(began).toEqual({ level: "INFO", message: "shutdown began: 1 request in flight (1 streamed answer), given up to 1 s to finish" })
      expect(done?.level).toBe("WARN")
      const { totalMillis, drainMillis } = doneLine(done, "1 cut at the grace (1 streamed answer)")
      expect(drainMillis).toBeGreaterThanOrEqual(grace - 10)
      expect(totalMillis).toBeLessThanOrEqual(stopMillis + 10)
    }).pipe(Effect.provide(FakeMusicVendor.layer), Effect.scoped), 60_000)

  it.live("an NDJSON answer that completes within the grace finishes, and the stop does not wait for the grace", () =>
    Effect.gen(function*() {
      const grace = 10_000
      const fake = yield* FakeMusicVendor
      // the vendor's events 400 ms apart: the last one comes about 800 ms after the first
      fake.behave({
        kind: "stream",
        lines: ['{"type":"duration","duration_sec":3}', '{"type":"titles","titles":["a"]}', '{"type":"complete"}'],
        delayMillis: 400
      })
      const { lines, serviceScope, ...body } = yield* streamingUnderGrace(fake, grace)
      const rest = Effect.runPromise(Effect.promise(async () => {
        let text = body.first
        for (let chunk = await body.reader.read(); !chunk.done; chunk = await body.reader.read()) text += new TextDecoder().decode(chunk.value)
        return text
      }))
      const stopping = Date.now()
      yield* Scope.close(serviceScope, Exit.void)
      const stopMillis = Date.now() - stopping
      // the whole answer arrived: the stream ran to its end during the stop
      expect(yield* Effect.promise(() => rest)).toContain('"complete"')
      expect(stopMillis).toBeLessThan(grace)
      const [began, done, ...more] = shutdownOf(lines)
      expect(more).toEqual([])
      expect(began).toEqual({ level: "INFO", message: "shutdown began: 1 request in flight (1 streamed answer), given up to 10 s to finish" })
      expect(done?.level).toBe("INFO")
      const { totalMillis, drainMillis } = doneLine(done, "1 finished (1 streamed answer)")
      expect(drainMillis).toBeGreaterThanOrEqual(300)
      expect(drainMillis).toBeLessThan(grace)
      expect(totalMillis).toBeGreaterThanOrEqual(drainMillis)
      expect(totalMillis).toBeLessThanOrEqual(stopMillis + 10)
    }).pipe(Effect.provide(FakeMusicVendor.layer), Effect.scoped), 60_000)
})
