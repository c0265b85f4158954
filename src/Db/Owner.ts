/**
 * Whether the process that ran the embedded PostgreSQL still runs. Its PID alone does not say:
 * a process killed under a parent that has not reaped it yet (a container's PID 1 that never
 * reaps) lingers as a zombie, which `kill(pid, 0)` calls alive, and a PID is reused by the next
 * process that gets it. So the owner file holds the PID and, where Linux's /proc tells it, the
 * process's identity: the boot's id and the process's start time since boot in clock ticks
 * (proc(5)), which a later holder of the PID cannot share (it starts after the owner ended, and the
 * owner ran far longer than a tick). Without /proc (macOS, the BSDs) the PID alone decides, as
 * `kill(pid, 0)` says.
 */
import * as fs from "node:fs/promises"

/** The owner as recorded: `identity` is absent where /proc is not (and in files of older versions). */
export interface Owner {
  readonly pid: number
  readonly identity?: string
}

/** What the owner check reads of the system: a file's text (`undefined` if it cannot be read), and `kill(pid, 0)`. */
export interface Processes {
  readonly read: (file: string) => Promise<string | undefined>
  readonly signalZero: (pid: number) => boolean
}

/** Whether `kill(pid, 0)` finds the process: EPERM says it runs, as another user. */
const signalZero = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

export const systemProcesses: Processes = {
  read: (file) => fs.readFile(file, "utf8").catch(() => undefined),
  signalZero
}

/** The fields of /proc/<pid>/stat the check needs: the state letter (3) and the start time in clock ticks (22). */
export interface Stat {
  readonly state: string
  readonly startTicks: string
}

/**
 * Parses /proc/<pid>/stat. Its second field, the command name in parentheses, may itself hold
 * spaces and parentheses, so the fields are counted from the last `)`.
 */
export const parseStat = (text: string): Stat | undefined => {
  const close = text.lastIndexOf(")")
  if (close < 0) return undefined
  // the text after ") " starts at field 3
  const fields = text.slice(close + 2).trim().split(" ")
  const state = fields[0]
  const startTicks = fields[22 - 3]
  if (state === undefined || !/^[A-Za-z]$/.test(state) || startTicks === undefined || !/^\d+$/.test(startTicks)) {
    return undefined
  }
  return { state, startTicks }
}

const bootIdFile = "/proc/sys/kernel/random/boot_id"

/** The identity of the process `pid` (`self` for this one), when /proc tells it. */
export const identityOf = async (pid: number | "self", processes: Processes = systemProcesses, stat?: Stat) => {
  const found = stat ?? parseStat((await processes.read(`/proc/${pid}/stat`)) ?? "")
  if (found === undefined) return undefined
  const bootId = (await processes.read(bootIdFile))?.trim() || "-"
  return `${bootId} ${found.startTicks}`
}

/** The owner file's text for this process: its PID, then its identity on a line of its own. */
export const ownerRecord = async (processes: Processes = systemProcesses): Promise<string> => {
  const identity = await identityOf("self", processes)
  return identity === undefined ? `${process.pid}\n` : `${process.pid}\n${identity}\n`
}

/** The owner in an owner file's text (`undefined`: none recorded). A file of older versions holds the PID alone. */
export const parseOwner = (text: string | undefined): Owner | undefined => {
  const [pidLine, identity] = (text ?? "").split("\n").map((line) => line.trim())
  const pid = Number(pidLine)
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined
  return identity ? { pid, identity } : { pid }
}

/**
 * Whether `owner` still runs. A zombie (state Z, or X while it is being reaped) has ended; a
 * process whose identity differs from the recorded one is another process that got the PID. When
 * /proc cannot tell (no /proc, or a process it hides), `kill(pid, 0)` decides.
 */
export const ownerRuns = async (owner: Owner, processes: Processes = systemProcesses): Promise<boolean> => {
  const stat = parseStat((await processes.read(`/proc/${owner.pid}/stat`)) ?? "")
  if (stat === undefined) return processes.signalZero(owner.pid)
  if (stat.state === "Z" || stat.state === "X") return false
  if (owner.identity === undefined) return true
  return (await identityOf(owner.pid, processes, stat)) === owner.identity
}

/**
 * Whether the process `pid` runs (a zombie has ended): for a PID whose identity was not recorded,
 * such as a PostgreSQL postmaster's.
 */
export const processRuns = (pid: number, processes: Processes = systemProcesses) => ownerRuns({ pid }, processes)
