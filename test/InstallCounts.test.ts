/**
 * Install counts (issue 12, finding 9): an install counts a download once per client address,
 * node and version an hour, agreed by two instances through PostgreSQL, under concurrent calls
 * from distinct loopback addresses.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Node } from "../src/Domain/Node.ts"
import { decodeExact } from "./support/Catalogue.ts"
import { query } from "./support/Db.ts"
import { asAnswer, fromAddress, publishFrom, tally } from "./support/FromAddress.ts"
import { expectStatus } from "./support/Http.ts"
import { clearOfHourEnd } from "./support/Hours.ts"
import { type Running, ServicePair } from "./support/Service.ts"
import { zipOf } from "./support/Zip.ts"
import { makePublisher, upload } from "./Publishing/Flow.ts"

const decodeNode = decodeExact(Node)

layer(ServicePair.layer, { excludeTestServices: true })("install counts", (it) => {
  const installFrom = (service: Running, from: string, node: string, version?: string) =>
    fromAddress(service, from, "GET", `/nodes/${node}/install${version === undefined ? "" : `?version=${version}`}`)

  const downloads = (service: Running, node: string) =>
    Effect.gen(function*() {
      const answer = yield* fromAddress(service, "127.0.0.1", "GET", `/nodes/${node}`)
      return decodeNode(expectStatus(asAnswer(answer), 200, "node").body).downloads ?? 0
    })

  it.effect("20 concurrent installs from one address over two instances count once; another address or version counts again", () =>
    Effect.gen(function*() {
      const { a, b } = yield* ServicePair
      yield* clearOfHourEnd(60)
      const tools = yield* makePublisher(a, "tools")
      const zip = yield* Effect.promise(() => zipOf({ "pkg/__init__.py": "NODES = {}\n" }))
      for (const version of ["1.0.0", "1.1.0"]) {
        const published = yield* publishFrom(a, "127.0.0.1", "tools", "counted", version, tools.pat)
        expect(published.status).toBe(201)
        expectStatus(yield* upload(a, (published.body as { signedUrl: string }).signedUrl, zip), 200, "upload")
      }

      // comfy-cli asks GET /nodes/{id}/install before each download (comfy_cli/registry/api.py)
      const burst = yield* Effect.all(
        Array.from({ length: 20 }, (_, i) => installFrom(i % 2 === 0 ? a : b, "127.0.0.2", "counted")),
        { concurrency: "unbounded" }
      )
      expect(tally(burst)).toEqual({ 200: 20 })
      expect(yield* downloads(b, "counted")).toBe(1)

      expect((yield* installFrom(b, "127.0.0.3", "counted")).status).toBe(200)
      expect(yield* downloads(a, "counted")).toBe(2)
      expect((yield* installFrom(a, "127.0.0.2", "counted", "1.0.0")).status).toBe(200)
      expect((yield* installFrom(b, "127.0.0.2", "counted", "1.1.0")).status).toBe(200)
      expect(yield* downloads(a, "counted")).toBe(3)

      // the address is kept only as a keyed hash
      const rows = yield* query<{ address_hash: Buffer; hour: Date }>(a, "SELECT address_hash, hour FROM install_counts")
      expect(rows).toHaveLength(3)
      for (const row of rows) {
        expect(row.address_hash).toHaveLength(32)
        expect(row.address_hash.toString("latin1")).not.toContain("127.0.0")
        expect(row.hour.getUTCMinutes()).toBe(0)
      }
    }))

  // rows of past hours are no longer pruned: the download statistics' roll-up folds them into
  // their days (test/Downloads/Downloads.test.ts)
})
