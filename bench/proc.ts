/**
 * What Linux's /proc says of a process: its CPU time, which unlike requests or bytes per second
 * does not depend on how busy the machine is, and its memory.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"

const MiB = 1024 * 1024

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
  } catch {
    return 100
  }
})()

export interface ProcCpu {
  readonly ppid: number
  /** user + system CPU seconds of the process itself */
  readonly own: number
  /** ... and of its children that have exited */
  readonly children: number
}

/** The CPU times of `pid`; undefined once it is gone. */
export const procCpu = async (pid: number): Promise<ProcCpu | undefined> => {
  const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined)
  if (stat === undefined) return undefined
  // the fields after "(comm)": state, ppid, ..., utime (12th), stime, cutime, cstime
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number)
  return { ppid: f[1]!, own: (f[11]! + f[12]!) / clockTicks, children: (f[13]! + f[14]!) / clockTicks }
}

/** User + system CPU seconds of `pid` so far; NaN once it is gone. */
export const cpuSeconds = async (pid: number) => (await procCpu(pid))?.own ?? Number.NaN

/**
 * CPU seconds of PostgreSQL: the postmaster, its live children (the backends serving both
 * servers), and its children that have exited (closed connections), which the kernel adds to
 * the postmaster's account when it reaps them.
 */
export const postgresCpuSeconds = async (postmaster: number) => {
  const pids = (await fs.readdir("/proc").catch(() => [])).filter((d) => /^\d+$/.test(d)).map(Number)
  let total = 0
  for (const pid of pids) {
    const cpu = await procCpu(pid)
    if (cpu && pid === postmaster) total += cpu.own + cpu.children
    else if (cpu && cpu.ppid === postmaster) total += cpu.own
  }
  return total
}

/** VmRSS and VmHWM of a process, in bytes. */
export const memoryOf = async (pid: number) => {
  const status = await fs.readFile(`/proc/${pid}/status`, "utf8")
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
}

export interface Growth {
  /** VmRSS just before, MiB. */
  readonly beforeMiB: number
  /** The highest sampled VmRSS minus VmRSS before, MiB. */
  readonly sampledMiB: number
  /** VmHWM after minus VmRSS before, MiB; NaN when the peak could not be reset. */
  readonly hwmMiB: number
}

/**
 * Runs `work` while watching the RSS of `pid`: VmRSS sampled every 10 ms, and VmHWM reset just
 * before (writing 5 to /proc/<pid>/clear_refs), both as growth over VmRSS just before.
 */
export const watchingRss = async <A>(pid: number, work: () => Promise<A>): Promise<[A, Growth]> => {
  const reset = await fs.writeFile(`/proc/${pid}/clear_refs`, "5").then(() => true, () => false)
  const before = await memoryOf(pid)
  let peak = before.rss
  const sampler = setInterval(() => void memoryOf(pid).then((m) => (peak = Math.max(peak, m.rss)), () => {}), 10)
  try {
    const result = await work()
    const after = await memoryOf(pid)
    peak = Math.max(peak, after.rss)
    return [result, { beforeMiB: before.rss / MiB, sampledMiB: (peak - before.rss) / MiB, hwmMiB: reset ? (after.hwm - before.rss) / MiB : Number.NaN }]
  } finally {
    clearInterval(sampler)
  }
}
