/**
 * The catalogue snapshot over real HTTP (`GET /catalogue/snapshot`, src/Sync/Snapshot.ts), on two
 * instances of one database: built in the background after changes, the listed nodes as GET /nodes
 * answers them, the same stored br and gzip bytes from either instance, 304 to its ETag, and a
 * cursor from which the feed carries what came after. Then the feed's retention: a cursor older
 * than what was pruned is a 410.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as http from "node:http"
import * as zlib from "node:zlib"
import { query } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { expectError, expectStatus, get, send } from "../support/Http.ts"
import { freshDatabase, type Running, startService } from "../support/Service.ts"
import { makePublisher, type Publisher, published } from "../Publishing/Flow.ts"

/** One answer's status, headers and bytes as sent (fetch would decode a coded body). */
const raw = (service: Running, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http.get(`${service.baseUrl}${path}`, { headers }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      }).on("error", reject)
    })
  )

interface Snapshot {
  readonly cursor: string
  readonly built_at: string
  readonly total: number
  readonly nodes: ReadonlyArray<{ readonly id: string }>
}

class Pair extends Context.Service<Pair, { readonly a: Running; readonly b: Running }>()("test/SnapshotPair") {
  static readonly layer = Layer.effect(
    Pair,
    Effect.gen(function*() {
      const { url } = yield* freshDatabase
      const quick = (c: Parameters<Parameters<typeof startService>[1] & {}>[0]) => ({ ...c, snapshotCheckMillis: 50 })
      return { a: yield* startService(url, quick), b: yield* startService(url, quick) }
    })
  )
}

layer(Pair.layer, { excludeTestServices: true })("the catalogue snapshot", (it) => {
  let acme: Publisher

  /** The snapshot once it holds `holds`. */
  const snapshotWhen = (service: Running, holds: (s: Snapshot) => boolean) =>
    Effect.map(
      eventually(get(service, "/catalogue/snapshot"), (answer) => answer.status === 200 && holds(answer.body as Snapshot), 15_000, 50),
      ({ value }) => expectStatus(value, 200, "snapshot").body as Snapshot
    )

  it.effect("setup: a publisher and three nodes", () =>
    Effect.gen(function*() {
      const { a } = yield* Pair
      acme = yield* makePublisher(a, "acme")
      for (const id of ["snap-c", "snap-a", "snap-b"]) yield* published(a, acme, id, "1.0.0")
    }))

  it.effect("holds every listed node as GET /nodes answers it, by id, with the cursor it was cut at", () =>
    Effect.gen(function*() {
      const { a } = yield* Pair
      const snapshot = yield* snapshotWhen(a, (s) => s.total === 3)
      const listed = expectStatus(yield* get(a, "/nodes?sort=id&limit=500"), 200, "list").body as Snapshot
      expect(snapshot.nodes).toEqual(listed.nodes)
      expect(snapshot.nodes.map((n) => n.id)).toEqual(["snap-a", "snap-b", "snap-c"])
      // the feed after its cursor holds nothing yet: the snapshot holds every change up to it
      const after = expectStatus(yield* get(a, `/catalogue/changes?cursor=${snapshot.cursor}`), 200, "feed").body
      expect(after).toMatchObject({ changes: [], next_cursor: snapshot.cursor })
    }))

  it.effect("both instances send the same stored bytes, in br, gzip or none, and 304 to the ETag", () =>
    Effect.gen(function*() {
      const { a, b } = yield* Pair
      const snapshot = yield* snapshotWhen(a, (s) => s.total === 3)
      const [stored] = yield* query<{ gzip: Buffer; br: Buffer }>(
        a,
        `SELECT string_agg(bytes, '' ORDER BY part) FILTER (WHERE coding = 'gzip') AS gzip,
                string_agg(bytes, '' ORDER BY part) FILTER (WHERE coding = 'br') AS br
         FROM catalogue_snapshot_parts WHERE cursor = $1`,
        [snapshot.cursor]
      )
      for (const service of [a, b]) {
        const br = yield* raw(service, "/catalogue/snapshot", { "accept-encoding": "br" })
        expect(br.headers["content-encoding"]).toBe("br")
        expect(br.body.equals(stored!.br)).toBe(true)
        const gz = yield* raw(service, "/catalogue/snapshot", { "accept-encoding": "gzip" })
        expect(gz.headers["content-encoding"]).toBe("gzip")
        expect(gz.body.equals(stored!.gzip)).toBe(true)
        const plain = yield* raw(service, "/catalogue/snapshot")
        expect(plain.headers["content-encoding"]).toBeUndefined()
        expect(plain.body.equals(zlib.gunzipSync(stored!.gzip))).toBe(true)
        expect(zlib.brotliDecompressSync(br.body).equals(plain.body)).toBe(true)
        expect(plain.headers.etag).toBe(`"snapshot-${snapshot.cursor}"`)
        expect(plain.headers.vary).toMatch(/accept-encoding/i)
        const again = yield* raw(service, "/catalogue/snapshot", { "if-none-match": plain.headers.etag!, "accept-encoding": "br" })
        expect(again.status).toBe(304)
        expect(again.body.byteLength).toBe(0)
      }
    }))

  it.effect("a change is in a new snapshot within seconds; the old cursor's feed carries it", () =>
    Effect.gen(function*() {
      const { a, b } = yield* Pair
      const before = yield* snapshotWhen(a, (s) => s.total === 3)
      yield* published(b, acme, "snap-d", "1.0.0")
      const started = Date.now()
      const after = yield* snapshotWhen(a, (s) => s.total === 4)
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(after.nodes.map((n) => n.id)).toContain("snap-d")
      // built from the nodes rendered before and the one the feed named: still what GET /nodes answers
      const listed = expectStatus(yield* get(a, "/nodes?sort=id&limit=500&latest=true"), 200, "list").body as Snapshot
      expect(after.nodes).toEqual(listed.nodes)
      const feed = expectStatus(yield* get(a, `/catalogue/changes?cursor=${before.cursor}`), 200, "feed").body as {
        changes: ReadonlyArray<{ kind: string; node_id: string }>
        next_cursor: string
      }
      expect(feed.changes.map((c) => `${c.kind} ${c.node_id}`)).toEqual(["node_created snap-d", "version_published snap-d"])
      expect(feed.next_cursor).toBe(after.cursor)
      // the newest two are kept
      const [kept] = yield* query<{ n: number }>(a, "SELECT count(*)::int AS n FROM catalogue_snapshots")
      expect(kept!.n).toBeLessThanOrEqual(2)
    }))

  it.effect("a node changed and a node deleted: the next snapshot renders them again, and equals GET /nodes", () =>
    Effect.gen(function*() {
      const { a } = yield* Pair
      expectStatus(
        yield* send(a, "PUT", "/publishers/acme/nodes/snap-b", { token: acme.ownerJwt, body: { description: "Rendered again" } }),
        200,
        "describe snap-b"
      )
      expectStatus(yield* send(a, "DELETE", "/publishers/acme/nodes/snap-c", { token: acme.ownerJwt }), 204, "delete snap-c")
      const after = yield* snapshotWhen(a, (s) => s.total === 3)
      expect(after.nodes.map((n) => n.id)).toEqual(["snap-a", "snap-b", "snap-d"])
      const listed = expectStatus(yield* get(a, "/nodes?sort=id&limit=500&latest=true"), 200, "list").body as Snapshot
      expect(after.nodes).toEqual(listed.nodes)
      expect((after.nodes[1] as { description?: string }).description).toBe("Rendered again")
    }))

  it.effect("changes past the retention are pruned at the next build: a cursor before the last pruned is a 410, later ones stay valid", () =>
    Effect.gen(function*() {
      const { a } = yield* Pair
      const current = yield* snapshotWhen(a, (s) => s.total === 3)
      yield* query(a, "UPDATE catalogue_changes SET at = now() - interval '31 days'")
      yield* published(a, acme, "snap-e", "1.0.0")
      const newest = yield* snapshotWhen(a, (s) => s.total === 4)
      yield* eventually(query(a, "SELECT 1 FROM catalogue_changes_pruned"), (rows) => rows.length === 1, 5_000, 50)
      const expired = yield* get(a, "/catalogue/changes?cursor=0.0")
      expectError(expired, 410, "cursor_expired")
      expect((expired.body as { message: string }).message).toMatch(/^cursor: 0\.0 is older than the change feed keeps \(30 days\)/)
      // a change pruned away, before the last one pruned: what came between is gone
      expectError(yield* get(a, "/catalogue/changes?cursor=1.1"), 410, "cursor_expired")
      // the cursor of the last change pruned is whole: everything after it is kept
      const [pruned] = yield* query<{ cursor: string }>(a, "SELECT seq || '.' || id AS cursor FROM catalogue_changes_pruned")
      expect(pruned!.cursor).toBe(current.cursor)
      const rest = expectStatus(yield* get(a, `/catalogue/changes?cursor=${current.cursor}`), 200, "after the pruned").body as {
        changes: ReadonlyArray<{ node_id: string }>
        next_cursor: string
      }
      expect(rest.changes.map((c) => c.node_id)).toEqual(["snap-e", "snap-e"])
      expect(rest.next_cursor).toBe(newest.cursor)
      expectStatus(yield* get(a, `/catalogue/changes?cursor=${newest.cursor}`), 200, "newest cursor")
    }))
})
