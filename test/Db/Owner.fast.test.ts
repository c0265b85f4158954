/**
 * The embedded database's owner check (issue 22, item 6) over a stub /proc: a zombie owner and
 * an owner whose PID another process now holds count as gone, a live owner as running, and
 * without /proc the PID alone decides, as `kill(pid, 0)` says. The same check on real processes
 * (a real zombie, a live process with another identity) is in Startup.process.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "fast-check"
import { ownerRecord, ownerRuns, parseOwner, parseStat, type Processes } from "../../src/Db/Owner.ts"
import { forAllSync } from "../support/Property.ts"

const bootId = "aee71cfa-4de8-40b8-b65c-2edfa83e894f"

/** A /proc/<pid>/stat line as Linux writes it (52 fields), with `state` in field 3 and `startTicks` in field 22. */
const statLine = (pid: number, comm: string, state: string, startTicks: number) => {
  // fields 4 to 21, then 23 to 52
  const before = ["1", String(pid), String(pid), "0", "-1", "4194560", "1450", "0", "0", "0", "3", "1", "0", "0", "20", "0", "1", "0"]
  const after = Array.from({ length: 30 }, (_, i) => String(i * 7))
  return `${pid} (${comm}) ${state} ${before.join(" ")} ${startTicks} ${after.join(" ")}\n`
}

/** A system whose /proc holds `files`; `signalled` are the PIDs `kill(pid, 0)` finds. */
const stubProcesses = (files: Record<string, string>, signalled: ReadonlyArray<number> = []): Processes => ({
  read: (file) => Promise.resolve(files[file]),
  signalZero: (pid) => signalled.includes(pid)
})

/** A Linux system on which process 4242 (`node`) started `startTicks` after boot, in `state`. */
const linux = (state: string, startTicks: number, boot = bootId) =>
  stubProcesses({
    "/proc/4242/stat": statLine(4242, "node", state, startTicks),
    "/proc/sys/kernel/random/boot_id": `${boot}\n`
  }, [4242])

describe("parseStat", () => {
  it("reads the state and the start time of a process", () => {
    expect(parseStat(statLine(4242, "node", "S", 987654))).toEqual({ state: "S", startTicks: "987654" })
  })

  it("counts fields from the last parenthesis: a command name may hold spaces and parentheses", () => {
    expect(parseStat(statLine(7, "a) Z 1 (b", "R", 55))).toEqual({ state: "R", startTicks: "55" })
    expect(parseStat(statLine(7, ") )", "Z", 56))).toEqual({ state: "Z", startTicks: "56" })
  })

  it("refuses what is not a stat line", () => {
    expect(parseStat("")).toBeUndefined()
    expect(parseStat("4242 (node) S 1 2 3")).toBeUndefined()
  })

  // comm is at most 15 bytes of the executable's name or of what the process set (prctl), any bytes but
  // NUL, read as UTF-8: any code point but NUL and the surrogates. (fast-check's "binary" unit would do,
  // but its first use costs 1.7 s, a sixth of this tier's run.)
  const codePoint = FastCheck.integer({ min: 1, max: 0x10ffff }).filter((c) => c < 0xd800 || c > 0xdfff).map((c) => String.fromCodePoint(c))
  it("any command name, any state, any start time", () => forAllSync([
    FastCheck.string({ unit: codePoint, maxLength: 15 }),
    FastCheck.constantFrom("R", "S", "D", "Z", "T", "t", "X", "I"),
    FastCheck.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })
  ], ([comm, state, startTicks]) => {
    expect(parseStat(statLine(31, comm, state, startTicks))).toEqual({ state, startTicks: String(startTicks) })
  }))
})

describe("parseOwner", () => {
  it("reads the PID and the identity; a missing file or no PID is no owner", () => {
    expect(parseOwner(`4242\n${bootId} 987654\n`)).toEqual({ pid: 4242, identity: `${bootId} 987654` })
    expect(parseOwner(undefined)).toBeUndefined()
    expect(parseOwner("")).toBeUndefined()
    expect(parseOwner("0")).toBeUndefined()
    expect(parseOwner("not a pid\n")).toBeUndefined()
  })

  it("reads the PID alone from a file of an older version", () => {
    expect(parseOwner("4242")).toEqual({ pid: 4242 })
  })
})

describe("ownerRuns", () => {
  const owner = { pid: 4242, identity: `${bootId} 987654` }

  it("a live owner runs", async () => {
    expect(await ownerRuns(owner, linux("S", 987654))).toBe(true)
    expect(await ownerRuns(owner, linux("R", 987654))).toBe(true)
  })

  it("a zombie owner (killed, not yet reaped) does not run, though kill(pid, 0) finds it", async () => {
    expect(await ownerRuns(owner, linux("Z", 987654))).toBe(false)
    expect(await ownerRuns(owner, linux("X", 987654))).toBe(false)
    expect(await ownerRuns({ pid: 4242 }, linux("Z", 987654))).toBe(false)
  })

  it("a PID now held by another process (another start time, or another boot) is not the owner", async () => {
    expect(await ownerRuns(owner, linux("S", 1_200_000))).toBe(false)
    expect(await ownerRuns(owner, linux("S", 987654, "0d6a0a50-8c2f-4a43-9a4b-1f0e0a1c2b3d"))).toBe(false)
  })

  it("a PID that no process holds is no owner", async () => {
    expect(await ownerRuns(owner, stubProcesses({ "/proc/sys/kernel/random/boot_id": bootId }))).toBe(false)
  })

  it("a file of an older version, without the identity: the live PID is taken for the owner", async () => {
    expect(await ownerRuns({ pid: 4242 }, linux("S", 1_200_000))).toBe(true)
  })

  it("without /proc, or where it hides the process, kill(pid, 0) decides", async () => {
    expect(await ownerRuns(owner, stubProcesses({}, [4242]))).toBe(true)
    expect(await ownerRuns(owner, stubProcesses({}, []))).toBe(false)
  })

  it("the record written for a process identifies it", async () => {
    const self = stubProcesses({
      "/proc/self/stat": statLine(process.pid, "node", "R", 31337),
      [`/proc/${process.pid}/stat`]: statLine(process.pid, "node", "R", 31337),
      "/proc/sys/kernel/random/boot_id": `${bootId}\n`
    })
    const record = await ownerRecord(self)
    expect(record).toBe(`${process.pid}\n${bootId} 31337\n`)
    expect(await ownerRuns(parseOwner(record)!, self)).toBe(true)
    // without /proc, the PID alone
    expect(await ownerRecord(stubProcesses({}))).toBe(`${process.pid}\n`)
  })
})
