/**
 * Start-up of `npm start` on the embedded PostgreSQL (DATABASE_URL unset on purpose): after a
 * SIGKILL, after zombies, with a stale owner PID. Every test here starts its own embedded server,
 * so CI's pass on Debian's PostgreSQL leaves this file out (.ci/run): it would test nothing new.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { identityOf, ownerRuns, parseOwner, parseStat } from "../../src/Db/Owner.ts"
import { serviceCommand, spawnService } from "../support/Process.ts"

/** `npm start`'s command on the embedded database in `dataDir`. */
const startProcess = (dataDir: string) => spawnService({ env: { DATA_DIR: dataDir, DATABASE_URL: undefined } })

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))

const execFileAsync = promisify(execFile)

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

/** The state letter of process `pid` in /proc (`undefined`: no such process). */
const stateOf = async (pid: number) => parseStat(await fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => ""))?.state

/** Whether `kill(pid, 0)` finds `pid`: the whole of the owner check before issue 22. */
const signalZero = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * `command` under a parent that never reaps it: `sh` starts it in the background, then becomes
 * `sleep`, which never waits for a child. Killed, `command` stays a zombie while that parent
 * lives, as under a container's PID 1 that reaps late or never.
 */
const underNonReapingParent = (command: ReadonlyArray<string>) => ["sh", "-c", `"$@" & exec sleep 600`, "sh", ...command]

/** Waits until `pid`'s state in /proc is `state` (at most 10 s). */
const untilState = async (pid: number, state: string) => {
  for (const deadline = Date.now() + 10_000; (await stateOf(pid)) !== state; await sleep(10)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} is in state ${await stateOf(pid)}, not ${state}`)
  }
}

/** The user the embedded PostgreSQL runs as: `postgres` when the tests run as root, else this one. */
const postgresUser = async () =>
  process.getuid?.() === 0
    ? { uid: Number((await execFileAsync("id", ["-u", "postgres"])).stdout), gid: Number((await execFileAsync("id", ["-g", "postgres"])).stdout) }
    : {}

/**
 * A zombie: a child killed once its parent has become `sleep`, which never reaps it (the shell
 * before the exec might). It stays a zombie until the parent is killed. `user`: whose processes
 * they are (`kill(pid, 0)` of another user's process fails with EPERM, which PostgreSQL and
 * pg_ctl take for a process that is gone).
 */
const aZombie = async (user: { uid?: number; gid?: number } = {}) => {
  const parent = spawn("sh", ["-c", "sleep 600 & echo $!; exec sleep 600"], { ...user, stdio: ["ignore", "pipe", "ignore"] })
  const zombie = Number(await new Promise<string>((resolve) => parent.stdout!.once("data", (d) => resolve(String(d)))))
  for (const deadline = Date.now() + 10_000; !(await fs.readFile(`/proc/${parent.pid}/stat`, "utf8")).includes("(sleep)"); await sleep(10)) {
    if (Date.now() > deadline) throw new Error("the zombie's parent did not become sleep")
  }
  process.kill(zombie, "SIGKILL")
  await untilState(zombie, "Z")
  return { parent, zombie }
}

/** The PID of the process that owns the embedded database in `dataDir`. */
const ownerPid = async (dataDir: string) => parseOwner(await fs.readFile(path.join(dataDir, "pg.owner"), "utf8"))!.pid

/** Stops what a failed test left behind in `dataDir`: its PostgreSQL, at once (SIGQUIT is its immediate stop). */
const stopLeftPostgres = async (dataDir: string) => {
  const pid = Number((await fs.readFile(path.join(dataDir, "pg", "postmaster.pid"), "utf8").catch(() => "")).split("\n")[0])
  if (pid > 0 && signalZero(pid) && (await stateOf(pid)) !== "Z") process.kill(pid, "SIGQUIT")
}

describe("start-up on the embedded database", () => {
  it.live("starts again after being killed with SIGKILL, on the same data", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-start-"))
      try {
        const first = await startProcess(dataDir)
        const secret = await fs.readFile(path.join(dataDir, "jwt-secret"), "utf8")
        first.child.kill("SIGKILL")
        await exited(first.child)
        // its PostgreSQL server is still running: the next start must clean it up
        const second = await startProcess(dataDir)
        expect(await fs.readFile(path.join(dataDir, "jwt-secret"), "utf8")).toBe(secret)
        const health = await fetch(`http://127.0.0.1:${second.port}/health`)
        expect(await health.json()).toEqual({ status: "ok" })
        second.child.kill("SIGTERM")
        expect(await exited(second.child)).toBe(0)
        // a clean stop leaves no server behind
        await expect(fs.access(path.join(dataDir, "pg", "postmaster.pid"))).rejects.toThrow()
      } finally {
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 120_000)
})

/**
 * A service killed with SIGKILL stays a zombie until its parent reaps it. Node reaps its own
 * children at once, so the service runs under a parent that never does, and each next start
 * meets a real zombie (state Z, which `kill(pid, 0)` calls alive) and its orphaned PostgreSQL:
 * that is the case of a container's PID 1 that reaps late or never. PID reuse is made by
 * pointing the owner file at a live process started after the owner; a zombie postmaster by
 * pointing its lock file at a zombie of its user.
 */
describe("a crash never blocks the next start (issue 22)", () => {
  it.live("killed with SIGKILL three times in a row, left a zombie each time: each next start is ready at once", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-crash-"))
      const parents: Array<ChildProcess> = []
      try {
        let killed: number | undefined
        for (let round = 1; round <= 3; round++) {
          // started right after the previous one was killed, while that one is a zombie
          const service = await spawnService({
            command: underNonReapingParent(serviceCommand),
            env: { DATA_DIR: dataDir, DATABASE_URL: undefined }
          })
          parents.push(service.child)
          if (killed !== undefined) {
            expect(await stateOf(killed)).toBe("Z")
            expect(service.output()).toMatch(/stopping a PostgreSQL server left behind by a previous run/)
          }
          const pid = await ownerPid(dataDir)
          expect(pid).not.toBe(service.child.pid)
          expect(await (await fetch(`${service.baseUrl}/health`)).json()).toEqual({ status: "ok" })
          process.kill(pid, "SIGKILL")
          await untilState(pid, "Z")
          // what the check before this issue relied on: the zombie answers as if it lived
          expect(signalZero(pid)).toBe(true)
          killed = pid
        }
        // a last start, stopped cleanly, leaves nothing running
        const last = await startProcess(dataDir)
        expect(await stateOf(killed!)).toBe("Z")
        last.child.kill("SIGTERM")
        expect(await exited(last.child)).toBe(0)
        await expect(fs.access(path.join(dataDir, "pg", "postmaster.pid"))).rejects.toThrow()
      } finally {
        // the parents go, and their zombies with them (to the init, which reaps them)
        for (const parent of parents) parent.kill("SIGKILL")
        await stopLeftPostgres(dataDir)
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 240_000)

  it.live("an owner PID now held by another process does not block the start; a live owner does", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-reuse-"))
      let stranger: ChildProcess | undefined
      try {
        const first = await startProcess(dataDir)
        const owner = parseOwner(await fs.readFile(path.join(dataDir, "pg.owner"), "utf8"))!
        first.child.kill("SIGKILL")
        await exited(first.child)
        // the killed owner's PID is now a live stranger's, started after it: the recorded start time is not its own
        stranger = spawn("sleep", ["600"], { stdio: "ignore" })
        await fs.writeFile(path.join(dataDir, "pg.owner"), `${stranger.pid}\n${owner.identity}\n`)
        const second = await startProcess(dataDir)
        expect(await ownerPid(dataDir)).not.toBe(stranger.pid)
        second.child.kill("SIGKILL")
        await exited(second.child)
        // a live owner, as recorded, still keeps a second service out of its data folder
        await fs.writeFile(path.join(dataDir, "pg.owner"), `${stranger.pid}\n${await identityOf(stranger.pid!)}\n`)
        await expect(startProcess(dataDir)).rejects.toThrow(`is in use by process ${stranger.pid}`)
      } finally {
        stranger?.kill("SIGKILL")
        await stopLeftPostgres(dataDir)
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 180_000)

  it.live("a postmaster killed with the service and left a zombie does not block the next start", () =>
    Effect.promise(async () => {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-postmaster-"))
      let parent: ChildProcess | undefined
      try {
        const first = await startProcess(dataDir)
        // the postmaster's own user's, as a killed postmaster's zombie is
        const made = await aZombie(await postgresUser())
        parent = made.parent
        const lockFile = path.join(dataDir, "pg", "postmaster.pid")
        const [postmaster, ...rest] = (await fs.readFile(lockFile, "utf8")).split("\n")
        first.child.kill("SIGKILL")
        process.kill(Number(postmaster), "SIGKILL")
        await exited(first.child)
        // the lock file names a zombie, as when the postmaster's parent (the init) has not reaped it yet
        await fs.writeFile(lockFile, [String(made.zombie), ...rest].join("\n"))
        const second = await startProcess(dataDir)
        expect(second.output()).toMatch(/removing the lock file of a PostgreSQL server that no longer runs/)
        second.child.kill("SIGTERM")
        expect(await exited(second.child)).toBe(0)
        await expect(fs.access(lockFile)).rejects.toThrow()
      } finally {
        parent?.kill("SIGKILL")
        await stopLeftPostgres(dataDir)
        await fs.rm(dataDir, { recursive: true, force: true })
      }
    }), 180_000)

  it("the owner check on real processes: a zombie has ended, a live process runs, as itself only", async () => {
    const { parent, zombie } = await aZombie()
    try {
      expect(signalZero(zombie)).toBe(true)
      expect(await ownerRuns({ pid: zombie })).toBe(false)
      const live = parent.pid!
      const identity = (await identityOf(live))!
      expect(await ownerRuns({ pid: live, identity })).toBe(true)
      const [boot, ticks] = identity.split(" ")
      expect(await ownerRuns({ pid: live, identity: `${boot} ${Number(ticks) + 1}` })).toBe(false)
    } finally {
      parent.kill("SIGKILL")
    }
  })
})
