/**
 * Three instances on one database and one bucket (STORAGE=s3, s3rver on loopback), behind a
 * round-robin client: each request goes to the next instance, as a load balancer sends them.
 * After every acknowledged write, every read of it on every instance sees it within the notify
 * delay: each instance's list cache (`GET /nodes`, search, a publisher's nodes) is dropped by the
 * NOTIFY of the write, and the other reads go to PostgreSQL. A read is polled for at most
 * `boundMillis`; one still showing the old state after that fails the test, and the worst delay
 * seen is checked against the bound and reported.
 *
 * Before each write every read runs once on every instance, so that the caches hold the old
 * page and a missed invalidation would show.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fc from "fast-check"
import semver from "semver"
import { eventually } from "./support/Eventually.ts"
import { type Answer, expectStatus, send } from "./support/Http.ts"
import { startObjectStore } from "./support/ObjectStore.ts"
import { forAll } from "./support/Property.ts"
import { freshDatabase, type Running, startService } from "./support/Service.ts"
import { zipOf } from "./support/Zip.ts"
import { decodePublished, makePublisher, type Publisher, upload } from "./Publishing/Flow.ts"

/** How long a write may take to reach every instance's reads: the notify delay, with room for a busy CI. */
const boundMillis = 2_000

/** Between two reads of one check: every check polls at once, and the polls must not be most of the load. */
const pollMillis = 50

interface Instances {
  readonly all: ReadonlyArray<Running>
  /** The next instance in turn: the round-robin client's target. */
  readonly next: () => Running
  /** The worst delay seen so far between an acknowledged write and a read on any instance seeing it. */
  readonly worst: { millis: number; read: string }
}

class Three extends Context.Service<Three, Instances>()("test/Three") {
  static readonly layer = Layer.effect(
    Three,
    Effect.gen(function*() {
      const store = yield* startObjectStore()
      const { url } = yield* freshDatabase
      const start = () => startService(url, (c) => ({ ...c, storage: { ...c.storage, backend: { _tag: "s3", ...store.settings } } }))
      const all = [yield* start(), yield* start(), yield* start()]
      let turn = 0
      return { all, next: () => all[turn++ % all.length]!, worst: { millis: 0, read: "" } }
    })
  )
}

/** A read and what it must show once the write is seen. */
interface Read {
  readonly path: string
  readonly token?: string | undefined
  readonly holds: (answer: Answer<any>) => boolean
}

/**
 * Warms every read on every instance, makes the write through the round-robin client, then
 * polls every read on every instance at once until it holds, for at most `boundMillis` from the
 * write's acknowledgment; the delay recorded is the time from the acknowledgment to the first
 * answer that holds.
 */
const afterWrite = <R>(label: string, write: (target: Running) => Effect.Effect<unknown, never, R>, reads: ReadonlyArray<Read>) =>
  Effect.gen(function*() {
    const instances = yield* Three
    for (const service of instances.all) for (const read of reads) yield* send(service, "GET", read.path, { token: read.token })
    yield* write(instances.next())
    const acknowledged = Date.now()
    const checks = instances.all.flatMap((service, index) => reads.map((read) => ({ service, index, read })))
    yield* Effect.forEach(checks, ({ index, read, service }) =>
      Effect.gen(function*() {
        const get = send<any>(service, "GET", read.path, { token: read.token })
        // within the bound counted from the write's acknowledgement, not from this check's start
        const { value: answer } = yield* eventually(get, read.holds, boundMillis - (Date.now() - acknowledged), pollMillis)
        const where = `${label}: GET ${read.path} on instance ${index}`
        const millis = Date.now() - acknowledged
        if (!read.holds(answer)) expect.fail(`${where} still answers ${answer.status} ${answer.text} after ${millis} ms`)
        if (millis > instances.worst.millis) Object.assign(instances.worst, { millis, read: where })
      }), { concurrency: "unbounded", discard: true })
  })

const ok = (status: number, label: string) => (answer: Answer) => Effect.asVoid(Effect.sync(() => expectStatus(answer, status, label)))

const ids = (answer: Answer<any>): ReadonlyArray<string> => answer.status === 200 ? answer.body.nodes.map((n: { id: string }) => n.id) : []

/** The node in a list answer, if listed. */
const listed = (answer: Answer<any>, nodeId: string) =>
  answer.status === 200 ? answer.body.nodes.find((n: { id: string }) => n.id === nodeId) as any : undefined

/** The node's Active versions, as `GET /nodes/{id}/versions` answers them: `version` and `deprecated`. */
const versionsOf = (answer: Answer<any>) =>
  answer.status === 200 ? (answer.body as ReadonlyArray<any>).map((v) => `${v.version}${v.deprecated === true ? " deprecated" : ""}`) : []

/** Publishes `version` of `nodeId` and uploads its archive, each through the next instance. */
const publishAndUpload = (publisher: Publisher, nodeId: string, version: string, archive: Uint8Array) => (target: Running) =>
  Effect.gen(function*() {
    const { next } = yield* Three
    const answer = yield* send(target, "POST", `/publishers/${publisher.id}/nodes/${nodeId}/versions`, {
      body: { personal_access_token: publisher.pat, node: { name: nodeId }, node_version: { version } }
    })
    const { signedUrl } = decodePublished(expectStatus(answer, 201, `publish ${nodeId}@${version}`).body)
    expectStatus(yield* upload(next(), signedUrl, archive), 200, `upload ${nodeId}@${version}`)
  })

const archive = Effect.promise(() => zipOf({ "pkg/__init__.py": "NODES = {}\n" }))

layer(Three.layer, { excludeTestServices: true, timeout: 120_000 })("three instances behind a round-robin client", (it) => {
  it.effect("every write is read back on every instance within the notify delay", () =>
    Effect.gen(function*() {
      const { all, worst } = yield* Three
      const owner = yield* Effect.promise(() => all[0]!.token({ sub: "owner-of-lumen" }))
      const zip = yield* archive

      yield* afterWrite(
        "create publisher",
        (s) => Effect.flatMap(send(s, "POST", "/publishers", { token: owner, body: { id: "lumen", name: "Lumen" } }), ok(201, "create")),
        [
          { path: "/publishers/lumen", holds: (r) => r.status === 200 && r.body.name === "Lumen" },
          { path: "/users/publishers", token: owner, holds: (r) => r.status === 200 && r.body.some((p: any) => p.id === "lumen") }
        ]
      )
      yield* afterWrite(
        "update publisher",
        (s) => Effect.flatMap(send(s, "PUT", "/publishers/lumen", { token: owner, body: { name: "Lumen Labs" } }), ok(200, "update")),
        [{ path: "/publishers/lumen", holds: (r) => r.status === 200 && r.body.name === "Lumen Labs" }]
      )
      const created = yield* Effect.flatMap(
        send<{ token: string }>(all[1]!, "POST", "/publishers/lumen/tokens", { token: owner, body: { name: "cli" } }),
        (answer) => Effect.sync(() => expectStatus(answer, 201, "token").body.token)
      )
      const lumen: Publisher = { id: "lumen", ownerJwt: owner, pat: created }

      yield* afterWrite(
        "create node",
        (s) =>
          Effect.flatMap(
            send(s, "POST", "/publishers/lumen/nodes", { token: owner, body: { id: "film-grain", name: "Film grain", description: "Halation" } }),
            ok(201, "create node")
          ),
        [
          { path: "/nodes/film-grain", holds: (r) => r.status === 200 },
          { path: "/nodes?limit=50", holds: (r) => ids(r).includes("film-grain") },
          { path: "/nodes/search?search=halation", holds: (r) => ids(r).includes("film-grain") },
          { path: "/publishers/lumen/nodes", token: owner, holds: (r) => r.status === 200 && JSON.stringify(r.body).includes("film-grain") }
        ]
      )
      for (const version of ["1.0.0", "1.1.0"]) {
        yield* afterWrite(`publish and upload ${version}`, publishAndUpload(lumen, "film-grain", version, zip), [
          { path: "/nodes/film-grain", holds: (r) => r.status === 200 && r.body.latest_version?.version === version },
          { path: `/nodes/film-grain/install?version=${version}`, holds: (r) => r.status === 200 },
          { path: "/nodes/film-grain/versions", holds: (r) => versionsOf(r).includes(version) },
          { path: "/nodes?limit=50", holds: (r) => listed(r, "film-grain")?.latest_version?.version === version },
          { path: "/nodes/search?search=halation", holds: (r) => listed(r, "film-grain")?.latest_version?.version === version }
        ])
      }
      yield* afterWrite(
        "update node",
        (s) =>
          Effect.flatMap(
            send(s, "PUT", "/publishers/lumen/nodes/film-grain", { token: owner, body: { name: "Film grain", description: "Vignette" } }),
            ok(200, "update node")
          ),
        [
          { path: "/nodes/film-grain", holds: (r) => r.status === 200 && r.body.description === "Vignette" },
          { path: "/nodes?limit=50", holds: (r) => listed(r, "film-grain")?.description === "Vignette" },
          { path: "/nodes/search?search=vignette", holds: (r) => ids(r).includes("film-grain") },
          { path: "/nodes/search?search=halation", holds: (r) => !ids(r).includes("film-grain") }
        ]
      )
      yield* afterWrite(
        "deprecate 1.0.0",
        (s) =>
          Effect.flatMap(
            send(s, "PUT", "/publishers/lumen/nodes/film-grain/versions/1.0.0", { token: owner, body: { deprecated: true } }),
            ok(200, "deprecate")
          ),
        [
          { path: "/nodes/film-grain/versions/1.0.0", holds: (r) => r.status === 200 && r.body.deprecated === true },
          { path: "/nodes/film-grain/versions", holds: (r) => versionsOf(r).includes("1.0.0 deprecated") }
        ]
      )
      yield* afterWrite(
        "delete 1.1.0",
        (s) => Effect.flatMap(send(s, "DELETE", "/publishers/lumen/nodes/film-grain/versions/1.1.0", { token: owner }), ok(204, "delete version")),
        [
          { path: "/nodes/film-grain/versions/1.1.0", holds: (r) => r.status === 404 },
          { path: "/nodes/film-grain/install?version=1.1.0", holds: (r) => r.status === 404 },
          { path: "/nodes/film-grain", holds: (r) => r.status === 200 && r.body.latest_version?.version === "1.0.0" },
          { path: "/nodes?limit=50", holds: (r) => listed(r, "film-grain")?.latest_version?.version === "1.0.0" }
        ]
      )
      yield* afterWrite(
        "delete node",
        (s) => Effect.flatMap(send(s, "DELETE", "/publishers/lumen/nodes/film-grain", { token: owner }), ok(204, "delete node")),
        [
          { path: "/nodes/film-grain", holds: (r) => r.status === 404 },
          { path: "/nodes/film-grain/install", holds: (r) => r.status === 404 },
          { path: "/nodes?limit=50", holds: (r) => !ids(r).includes("film-grain") },
          { path: "/nodes/search?search=vignette", holds: (r) => r.status === 200 && !ids(r).includes("film-grain") }
        ]
      )
      // the deleted node's archive is served by no instance
      for (const service of all) {
        const answer = yield* Effect.promise(() => service.fetch("/archives/film-grain/1.0.0", { redirect: "manual" }))
        expect(answer.status).toBe(404)
      }
      console.info(`three instances: worst read-after-write delay ${worst.millis} ms (${worst.read})`)
      expect(worst.millis).toBeLessThan(boundMillis)
    }))

  type Step =
    | { readonly kind: "publish"; readonly version: string }
    | { readonly kind: "describe"; readonly word: string }
    | { readonly kind: "deprecate"; readonly version: string; readonly deprecated: boolean }
    | { readonly kind: "delete"; readonly version: string }

  const versions = ["0.1.0", "0.2.0", "1.0.0", "1.0.1"]
  const words = ["amber", "cobalt", "sienna", "umber"]
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("publish" as const), version: fc.constantFrom(...versions) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("describe" as const), word: fc.constantFrom(...words) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("deprecate" as const), version: fc.constantFrom(...versions), deprecated: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), version: fc.constantFrom(...versions) }) }
  )
  let run = 0

  it.effect(
    "random writes, each through the next instance, are read back on every instance as the model says",
    () =>
      forAll(
        { steps: fc.array(step, { minLength: 3, maxLength: 8 }) },
        ({ steps }) =>
          Effect.gen(function*() {
            const { all, worst } = yield* Three
            const nodeId = `drift-${run}`
            const owner = `owner-of-drift-${run++}`
            const publisher = yield* makePublisher(all[0]!, owner.replace("owner-of-", "p-"), owner)
            const zip = yield* archive
            let description = "plain"
            // the model: versions published and not deleted (all uploaded, so Active), with their deprecation
            const live = new Map<string, boolean>()
            const gone = new Set<string>()
            const expected = () => [...live.entries()].sort(([x], [y]) => semver.rcompare(x, y)).map(([v, d]) => `${v}${d ? " deprecated" : ""}`)
            const latest = () => [...live.keys()].sort(semver.rcompare)[0]
            const modelReads = (): ReadonlyArray<Read> => [
              { path: `/nodes/${nodeId}/versions`, holds: (r) => JSON.stringify(versionsOf(r)) === JSON.stringify(expected()) },
              { path: `/nodes/${nodeId}`, holds: (r) => r.status === 200 && r.body.description === description && r.body.latest_version?.version === latest() },
              { path: "/nodes?limit=100", holds: (r) => listed(r, nodeId)?.description === description && listed(r, nodeId)?.latest_version?.version === latest() },
              { path: `/nodes/search?search=${description}`, holds: (r) => ids(r).includes(nodeId) }
            ]
            const jwt = publisher.ownerJwt
            const base = `/publishers/${publisher.id}/nodes/${nodeId}`
            yield* afterWrite(
              "create node",
              (s) => Effect.flatMap(send(s, "POST", `/publishers/${publisher.id}/nodes`, { token: jwt, body: { id: nodeId, name: nodeId, description } }), ok(201, "create")),
              modelReads()
            )
            for (const s of steps) {
              const label = JSON.stringify(s)
              switch (s.kind) {
                case "publish": {
                  // a number once published is refused forever, deleted or not
                  if (live.has(s.version) || gone.has(s.version)) break
                  live.set(s.version, false)
                  yield* afterWrite(label, publishAndUpload(publisher, nodeId, s.version, zip), modelReads())
                  break
                }
                case "describe": {
                  description = s.word
                  yield* afterWrite(label, (t) => Effect.flatMap(send(t, "PUT", base, { token: jwt, body: { name: nodeId, description } }), ok(200, label)), modelReads())
                  break
                }
                case "deprecate": {
                  if (!live.has(s.version)) break
                  live.set(s.version, s.deprecated)
                  const write = (t: Running) => Effect.flatMap(send(t, "PUT", `${base}/versions/${s.version}`, { token: jwt, body: { deprecated: s.deprecated } }), ok(200, label))
                  yield* afterWrite(label, write, modelReads())
                  break
                }
                case "delete": {
                  if (!live.has(s.version)) break
                  live.delete(s.version)
                  gone.add(s.version)
                  const reads = [...modelReads(), { path: `/nodes/${nodeId}/install?version=${s.version}`, holds: (r: Answer) => r.status === 404 }]
                  yield* afterWrite(label, (t) => Effect.flatMap(send(t, "DELETE", `${base}/versions/${s.version}`, { token: jwt }), ok(204, label)), reads)
                  break
                }
              }
            }
            expect(worst.millis).toBeLessThan(boundMillis)
          }),
        { numRuns: 3 }
      ),
    120_000
  )
})
