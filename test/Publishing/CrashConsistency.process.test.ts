/**
 * Crash consistency of archive uploads (issue 12, finding 1). The service runs as a child process
 * (`node dist/main.js`, as `npm start`) on its own DATA_DIR and a fresh database;
 * FAULT_INJECT_STORAGE makes it SIGKILL itself at one step of an upload. Restarted on the same
 * data, it must never hand out a download URL that answers 404, and a version that came back
 * Pending must take a new upload. An in-process instance on the same database sets up the
 * publisher and publishes (it never uploads, so its own start-up checks see no archive).
 *
 * Beside it, the start-up repair on its own: installable versions whose archive is not in the
 * store go back to Pending with a reason, and nothing else moves.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { type ChildProcess } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { type StorageFaultStep, storageFaultSteps } from "../../src/Config.ts"
import { archiveKey, archiveLostReason, looksMisplaced } from "../../src/Publishing/Archives.ts"
import { decodeVersion } from "../support/Catalogue.ts"
import { queryOne } from "../support/Db.ts"
import { expectError, expectStatus, get } from "../support/Http.ts"
import { type ServiceProcess, spawnService } from "../support/Process.ts"
import { freshDatabase, type Running, startService } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"
import { download, install, makePublisher, pathOf, published, upload } from "./Flow.ts"
import { forAllSync } from "../support/Property.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-crash-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.signalCode)
    : new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_, signal) => resolve(signal)))

/** The service as `npm start` runs it, on `dataDir` and `databaseUrl`; killed when the scope closes. */
const startChild = (dataDir: string, databaseUrl: string, fault?: StorageFaultStep) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      spawnService({ env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl, STORAGE_DIR: undefined, FAULT_INJECT_STORAGE: fault } })
    ),
    (service) =>
      Effect.promise(async () => {
        service.child.kill("SIGKILL")
        await exited(service.child)
      })
  )

/** The in-process instance's helpers, sent to the child. */
const onChild = (setup: Running, child: ServiceProcess): Running => ({
  ...setup,
  baseUrl: child.baseUrl,
  fetch: (pathAndQuery, init) => fetch(child.baseUrl + pathAndQuery, init)
})

const versionStatus = (service: Running, nodeId: string, version: string) =>
  Effect.map(
    queryOne<{ id: string; status: string; status_reason: string | null; archive_bytes: string | null }>(
      service,
      "SELECT id::text, status, status_reason, archive_bytes FROM node_versions WHERE node_id = $1 AND version = $2",
      [nodeId, version]
    ),
    (row) => row ?? expect.fail(`no version ${nodeId}@${version}`)
  )

/**
 * Install and the version's read hand out a download URL only when it serves `zip`; answers
 * whether the version is installable.
 */
const noDeadUrl = (service: Running, nodeId: string, version: string, zip: Buffer) =>
  Effect.gen(function*() {
    const read = decodeVersion(expectStatus(yield* get(service, `/nodes/${nodeId}/versions/${version}`), 200, "version read").body)
    const installing = yield* install(service, nodeId, version)
    if (installing.status === 404) expectError(installing, 404, "no_installable_version")
    const installed = installing.status === 404 ? undefined : decodeVersion(expectStatus(installing, 200, "install").body)
    expect(installed?.downloadUrl).toBe(read.downloadUrl)
    if (read.downloadUrl === undefined) return false
    const served = yield* download(service, read.downloadUrl)
    expect(served.status, `${read.downloadUrl} serves the archive`).toBe(200)
    expect(served.bytes.equals(zip)).toBe(true)
    return true
  })

/** Uploads `zip` to `signedUrl` on a child that kills itself meanwhile; answers its signal. */
const uploadUntilKilled = (child: ServiceProcess, signedUrl: string, zip: Buffer) =>
  Effect.promise(async () => {
    const answered = await fetch(child.baseUrl + pathOf(signedUrl), {
      method: "PUT",
      body: zip,
      headers: { "content-type": "application/zip" }
    }).then((r) => r.status, () => undefined)
    expect(answered, "no answer from a killed upload").toBeUndefined()
    return await exited(child.child)
  })

/** An upload killed at `step`: the version and the zip it was to get. */
interface Crash {
  readonly step: StorageFaultStep
  readonly nodeId: string
  readonly signedUrl: string
  readonly zip: Buffer
}

/** After a restart: only a crash after the commit left an installable version, and its URL serves the zip. */
const expectRecovered = (service: Running, crash: Crash) =>
  Effect.gen(function*() {
    const committed = crash.step === "after-commit"
    expect(yield* noDeadUrl(service, crash.nodeId, "1.0.0", crash.zip), `${crash.step}: installable`).toBe(committed)
    expect((yield* versionStatus(service, crash.nodeId, "1.0.0")).status, crash.step)
      .toBe(committed ? "NodeVersionStatusActive" : "NodeVersionStatusPending")
  })

/**
 * What the old order of steps (the status committed, then the rename) left after a crash: an
 * Active version without its archive. Killed and restarted, the service puts it back to Pending
 * with one WARN, and it takes a new upload.
 */
const archiveLost = (setup: Running, running: ServiceProcess, dataDir: string, url: string, crash: Crash) =>
  Effect.gen(function*() {
    const { id } = yield* versionStatus(setup, crash.nodeId, "1.0.0")
    running.child.kill("SIGKILL")
    yield* Effect.promise(() => exited(running.child))
    yield* Effect.promise(() => fs.rm(path.join(dataDir, "archives", archiveKey(id))))
    const child = yield* startChild(dataDir, url)
    const restarted = onChild(setup, child)
    expect(yield* noDeadUrl(restarted, crash.nodeId, "1.0.0", crash.zip)).toBe(false)
    expect(yield* versionStatus(restarted, crash.nodeId, "1.0.0"))
      .toEqual({ id, status: "NodeVersionStatusPending", status_reason: archiveLostReason, archive_bytes: null })
    const warnings = child.output().split("\n").filter((line) => line.includes("missing from storage"))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/WARN/)
    expect(warnings[0]).toContain(`archive of ${crash.nodeId} 1.0.0 missing`)
    expectStatus(yield* upload(restarted, crash.signedUrl, crash.zip), 200, "upload again")
    expect(yield* noDeadUrl(restarted, crash.nodeId, "1.0.0", crash.zip)).toBe(true)
  })

describe("uploads killed at each step", () => {
  // One database and one data folder for all steps, one child per step: the child that a step
  // kills is restarted as the next step's, which first checks every earlier crash (re-uploads
  // wait for a child without a fault). Seven starts in all, one after another; the time limit
  // allows for a loaded machine (each start takes seconds of CPU).
  it.live("every restart hands out no dead URL; a version back to Pending takes a new upload; a lost archive is repaired", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const setup = yield* startService(url)
      const dataDir = yield* tempDir
      const acme = yield* makePublisher(setup, "acme")
      const crashes: Array<Crash> = []
      for (const step of storageFaultSteps) {
        const child = yield* startChild(dataDir, url, step)
        for (const crash of crashes) yield* expectRecovered(onChild(setup, child), crash)
        const nodeId = `crash-${step}`
        const zip = yield* Effect.promise(() => zipOf({ [`${nodeId}/__init__.py`]: `# ${step}\n` }))
        const { signedUrl } = yield* published(setup, acme, nodeId, "1.0.0")
        expect(yield* uploadUntilKilled(child, signedUrl, zip), step).toBe("SIGKILL")
        crashes.push({ step, nodeId, signedUrl, zip })
      }

      const last = yield* startChild(dataDir, url)
      const restarted = onChild(setup, last)
      for (const crash of crashes) {
        yield* expectRecovered(restarted, crash)
        if (crash.step === "after-commit") continue
        const again = expectStatus(yield* upload(restarted, crash.signedUrl, crash.zip), 200, `${crash.step}: upload again`)
        expect(decodeVersion(again.body).status).toBe("NodeVersionStatusActive")
        expect(yield* noDeadUrl(restarted, crash.nodeId, "1.0.0", crash.zip)).toBe(true)
      }
      yield* archiveLost(setup, last, dataDir, url, crashes.find((c) => c.step === "after-commit")!)
    }), 420_000)
})

describe("the start-up repair", () => {
  it.live("moves only installable versions whose archive is missing, and leaves them open to a new upload", () =>
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const first = yield* startService(url)
      const acme = yield* makePublisher(first, "acme")
      const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "print('hello')\n" }))
      const uploaded = (nodeId: string, bytes: Buffer) =>
        Effect.gen(function*() {
          const answer = yield* published(first, acme, nodeId, "1.0.0")
          expectStatus(yield* upload(first, answer.signedUrl, bytes), 200, `upload ${nodeId}`)
          return answer
        })
      yield* uploaded("kept", zip)
      const lost = yield* uploaded("lost", zip)
      // Flagged by a moderator after its upload (the checks refuse a bad archive outright now)
      const flagged = yield* uploaded("flagged", zip)
      yield* first.writes.setVersionStatus("flagged", "1.0.0", "NodeVersionStatusFlagged")
      yield* first.writes.insertVersions([{ node_id: "kept", version: "0.9.0", status: "NodeVersionStatusActive" }])
      const dir = first.config.storage.dir
      for (const v of [lost, flagged]) yield* Effect.promise(() => fs.rm(path.join(dir, archiveKey(v.node_version.id!))))

      const second = yield* startService(url, (c) => ({ ...c, storage: { ...c.storage, dir } }))
      expect(yield* versionStatus(second, "lost", "1.0.0"))
        .toMatchObject({ status: "NodeVersionStatusPending", status_reason: archiveLostReason, archive_bytes: null })
      expect((yield* versionStatus(second, "kept", "1.0.0")).status).toBe("NodeVersionStatusActive")
      expect((yield* versionStatus(second, "kept", "0.9.0")).status).toBe("NodeVersionStatusActive")
      expect((yield* versionStatus(second, "flagged", "1.0.0")).status).toBe("NodeVersionStatusFlagged")
      expect(yield* noDeadUrl(second, "kept", "1.0.0", zip)).toBe(true)
      expect(yield* noDeadUrl(second, "lost", "1.0.0", zip)).toBe(false)
      expectStatus(yield* upload(second, lost.signedUrl, zip), 200, "upload again")
      expect(yield* noDeadUrl(second, "lost", "1.0.0", zip)).toBe(true)

      // an instance started on an empty storage folder finds every archive missing: a wrong
      // folder, not a crash, and it changes nothing
      yield* Effect.forEach(["more-a", "more-b"], (id) => uploaded(id, zip), { discard: true })
      const elsewhere = yield* startService(url)
      for (const nodeId of ["kept", "lost", "more-a", "more-b"]) {
        expect((yield* versionStatus(elsewhere, nodeId, "1.0.0")).status, nodeId).toBe("NodeVersionStatusActive")
      }
    }))

  it("a folder is misplaced when two or more archives are lost and they are half of all or more", () => forAllSync([
    fc.integer({ min: 0, max: 10_000 }),
    fc.integer({ min: 0, max: 10_000 })
  ], ([a, b]) => {
    const [lost, installable] = a <= b ? [a, b] : [b, a]
    // one lost archive is always a crash's; otherwise the share decides
    expect(looksMisplaced(lost, installable)).toBe(lost >= 2 && lost >= installable / 2)
  }))
})
