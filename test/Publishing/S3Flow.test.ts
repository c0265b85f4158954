/**
 * Publishing with STORAGE=s3 over real HTTP, real PostgreSQL and a real S3-compatible server
 * (s3rver on loopback): two instances share the database and the bucket, and no disk. Publish on
 * one, upload through the other, install from the first and download (whole, by range, HEAD)
 * from the bucket the first redirects to, or from the public base when one is set; delete a
 * version or the node on one and see it gone on the other; an upload refused mid-stream leaves
 * nothing in the bucket; the same bytes uploaded again, or at once through both, are replays; an
 * archive lost from the bucket sends its version
 * back to Pending when an instance starts, as a crash's loss on the local disk does.
 */
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { archiveKey, archiveLostReason } from "../../src/Publishing/Archives.ts"
import { downloadUrlTtlSeconds } from "../../src/Storage/S3Storage.ts"
import { decodeVersion } from "../support/Catalogue.ts"
import { bytesOf, clientFor, onInstance } from "../support/Client.ts"
import { queryOne } from "../support/Db.ts"
import { eventually } from "../support/Eventually.ts"
import { expectError, expectStatus, send } from "../support/Http.ts"
import { type ObjectStore, startObjectStore } from "../support/ObjectStore.ts"
import { freshDatabase, type Running, startService } from "../support/Service.ts"
import { rawZip, zipOf } from "../support/Zip.ts"
import { download, expectRejected, install, installed, makePublisher, pathOf, published, upload } from "./Flow.ts"

/** The archive limit of these instances: a few of the tests' small parts. */
const maxArchiveBytes = 64 * 1024

const onBucket = (store: ObjectStore) => (databaseUrl: string) =>
  startService(databaseUrl, (c) => ({ ...c, storage: { ...c.storage, maxArchiveBytes, backend: { _tag: "s3", ...store.settings } } }))

/** An object store, a fresh database, two instances on both, and publisher `acme` made through the first. */
const twoInstancesOnOneBucket = Effect.gen(function*() {
  const store = yield* startObjectStore()
  const { url } = yield* freshDatabase
  const a = yield* onBucket(store)(url)
  const b = yield* onBucket(store)(url)
  return { store, a, b, acme: yield* makePublisher(a, "acme") }
})

/** `PUT` a body of `bytes` bytes with no declared length (chunked), so it is refused mid-stream. */
const uploadChunked = (service: Running, signedUrl: string, bytes: number) =>
  Effect.promise(async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let sent = 0; sent < bytes; sent += 8192) controller.enqueue(new Uint8Array(Math.min(8192, bytes - sent)))
        controller.close()
      }
    })
    const init = { method: "PUT", body, duplex: "half", headers: { "content-type": "application/zip" } }
    const response = await service.fetch(pathOf(signedUrl), init as RequestInit)
    return response.status
  })

const bucketKeys = (store: ObjectStore) =>
  Effect.promise(async () =>
    ((await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket }))).Contents ?? []).map((o) => o.Key!).sort()
  )

/**
 * s3rver does not verify signatures, so the test does: the URL is exactly the one the SDK signs
 * for `method` on `key` with the bucket's credentials at the URL's own time, so it is bound to the
 * method, the key and the file name, and a URL for another method would not match.
 */
const expectSignedFor = (store: ObjectStore, location: string, method: "GET" | "HEAD", key: string, fileName: string) =>
  Effect.promise(async () => {
    const query = new URL(location).searchParams
    const stamp = query.get("X-Amz-Date")!.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z")
    const target = { Bucket: store.bucket, Key: key }
    const command = method === "HEAD"
      ? new HeadObjectCommand(target)
      : new GetObjectCommand({ ...target, ResponseContentDisposition: `attachment; filename="${fileName}"` })
    expect(query.get("X-Amz-Expires")).toBe(String(downloadUrlTtlSeconds))
    expect(await getSignedUrl(store.client, command, { expiresIn: downloadUrlTtlSeconds, signingDate: new Date(stamp) })).toBe(location)
  })

/** The version as `GET /nodes/{id}/versions/{version}` lists it. */
const listedVersion = (service: Running, nodeId: string, version: string) =>
  Effect.map(send(service, "GET", `/nodes/${nodeId}/versions/${version}`), (answer) => {
    expectStatus(answer, 200, `the version ${nodeId}@${version}`)
    return decodeVersion(answer.body)
  })

const versionRow = (service: Running, nodeId: string, version: string) =>
  Effect.map(
    queryOne<{ id: string; status: string; status_reason: string | null }>(
      service,
      "SELECT id::text, status, status_reason FROM node_versions WHERE node_id = $1 AND version = $2",
      [nodeId, version]
    ),
    (row) => row ?? expect.fail(`no version ${nodeId}@${version}`)
  )

it.live("two instances on one database and one bucket: publish on one, upload through the other, download from the first", () =>
  Effect.gen(function*() {
    const { store, a, b, acme } = yield* twoInstancesOnOneBucket

    const first = yield* published(a, acme, "image-tools", "1.0.0")
    const archive = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n", "README.md": "# Image tools\n" }))
    expectStatus(yield* upload(b, first.signedUrl, archive), 200, "upload through b")
    const row = yield* versionRow(a, "image-tools", "1.0.0")
    expect(row.status).toBe("NodeVersionStatusActive")
    // the archive is in the bucket under its key, and nothing else is
    expect(yield* bucketKeys(store)).toEqual([archiveKey(row.id)])
    // its digest was taken as it streamed into the bucket: the same bytes again, through the other
    // instance, are a replay; other bytes are refused; the bucket is unchanged
    const again = expectStatus(yield* upload(a, first.signedUrl, archive), 200, "the same bytes through a")
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expectError(yield* upload(a, first.signedUrl, rawZip([{ name: "other.py", content: "x" }])), 409, "version_immutable")
    expect(yield* bucketKeys(store)).toEqual([archiveKey(row.id)])

    // install names the bucket itself, with a URL signed for GET: the download skips the service
    const installing = yield* installed(a, "image-tools", "1.0.0")
    yield* expectSignedFor(store, installing.downloadUrl!, "GET", archiveKey(row.id), "image-tools-1.0.0.zip")
    // the bucket's answer carries no digest of ours: the install answer does, to check the bytes against
    expect(installing.sha256).toBe(createHash("sha256").update(archive).digest("hex"))
    const straight = yield* Effect.promise(() => fetch(installing.downloadUrl!))
    expect(straight.status).toBe(200)
    expect(Buffer.from(yield* Effect.promise(() => straight.arrayBuffer()))).toEqual(archive)
    expect(straight.headers.get("content-disposition")).toBe('attachment; filename="image-tools-1.0.0.zip"')

    // a listing keeps the service's URL, which lives as long as the listing: the service sends
    // the client to the bucket, with a URL signed for the request's method
    const version = yield* listedVersion(a, "image-tools", "1.0.0")
    expect(new URL(version.downloadUrl!).pathname).toBe("/archives/image-tools/1.0.0")
    for (const method of ["GET", "HEAD"] as const) {
      const redirect = yield* Effect.promise(() => a.fetch(pathOf(version.downloadUrl!), { method, redirect: "manual" }))
      expect(redirect.status).toBe(302)
      expect(redirect.headers.get("cache-control")).toBe("no-store")
      // the archive's digest on the redirect: the store's own answer has none of ours
      expect(redirect.headers.get("repr-digest")).toBe(`sha-256=:${createHash("sha256").update(archive).digest("base64")}:`)
      const location = redirect.headers.get("location")!
      expect(location.startsWith(`${store.endpoint}/${store.bucket}/${archiveKey(row.id)}?`)).toBe(true)
      yield* expectSignedFor(store, location, method, archiveKey(row.id), "image-tools-1.0.0.zip")
    }
    // followed, as the clients' HTTP libraries do
    const whole = yield* download(a, version.downloadUrl!)
    expect(whole.status).toBe(200)
    expect(whole.bytes).toEqual(archive)
    expect(whole.headers.get("content-disposition")).toBe('attachment; filename="image-tools-1.0.0.zip"')
    // and by the typed client over Node's HTTP client, which does not follow them by itself
    const typed = yield* Effect.flatMap(clientFor(a), (client) => client.download(onInstance(a, version.downloadUrl!)))
    expect(typed.size).toBe(archive.length)
    expect(yield* bytesOf(typed.bytes)).toEqual(archive)
    const ranged = yield* Effect.promise(() => a.fetch(pathOf(version.downloadUrl!), { headers: { range: "bytes=10-29" } }))
    expect(ranged.status).toBe(206)
    expect(Buffer.from(yield* Effect.promise(() => ranged.arrayBuffer()))).toEqual(archive.subarray(10, 30))
    const head = yield* Effect.promise(() => b.fetch(pathOf(version.downloadUrl!), { method: "HEAD" }))
    expect(head.status).toBe(200)
    expect(head.headers.get("content-length")).toBe(String(archive.length))

    // an upload past the limit is refused mid-stream and leaves no object behind
    const second = yield* published(b, acme, "image-tools", "1.1.0")
    expect(yield* uploadChunked(a, second.signedUrl, maxArchiveBytes + 20_000)).toBe(413)
    expect(yield* bucketKeys(store)).toEqual([archiveKey(row.id)])
    expect((yield* versionRow(a, "image-tools", "1.1.0")).status).toBe("NodeVersionStatusPending")
    // an archive the checks fail is refused (422) and leaves no object behind, as on the local disk
    expectRejected(yield* upload(a, second.signedUrl, rawZip([{ name: "../evil", content: "x" }])))
    expect((yield* versionRow(a, "image-tools", "1.1.0")).status).toBe("NodeVersionStatusPending")
    expect(yield* bucketKeys(store)).toEqual([archiveKey(row.id)])

    // uploads of one version at once through both instances: one records it, the others find
    // their own bytes recorded (replays), and none leaves an object behind
    const third = yield* published(a, acme, "image-tools", "1.2.0")
    const raced = yield* Effect.all([a, b, a, b].map((service) => upload(service, third.signedUrl, archive)), { concurrency: "unbounded" })
    expect(raced.map((answer) => answer.status)).toEqual([200, 200, 200, 200])
    expect(raced.filter((answer) => answer.headers.get("idempotent-replayed") === null)).toHaveLength(1)
    const thirdRow = yield* versionRow(a, "image-tools", "1.2.0")
    expect(yield* bucketKeys(store)).toEqual([archiveKey(row.id), archiveKey(thirdRow.id)].sort())
  }))

it.live("two instances: a version or node deleted on one is gone on the other; its archive stays in the bucket, as on disk", () =>
  Effect.gen(function*() {
    const { store, a, b, acme } = yield* twoInstancesOnOneBucket
    const zip = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n" }))
    for (const version of ["1.0.0", "1.1.0"]) {
      const created = yield* published(a, acme, "image-tools", version)
      expectStatus(yield* upload(b, created.signedUrl, zip), 200, `upload ${version}`)
    }
    const older = yield* versionRow(a, "image-tools", "1.0.0")
    const newer = yield* versionRow(a, "image-tools", "1.1.0")
    const keys = [archiveKey(older.id), archiveKey(newer.id)].sort()
    const archiveStatus = (service: Running, version: string) =>
      Effect.promise(async () => (await service.fetch(`/archives/image-tools/${version}`, { method: "HEAD", redirect: "manual" })).status)
    // both instances have served the newer version, so a stale cache would show
    for (const service of [a, b]) expect((yield* installed(service, "image-tools")).version).toBe("1.1.0")

    // a version deleted through b: refused and unserved on a, the latest falls back to the older one
    expectStatus(yield* send(b, "DELETE", "/publishers/acme/nodes/image-tools/versions/1.1.0", { token: acme.ownerJwt }), 204, "delete 1.1.0")
    for (const service of [a, b]) {
      expectError(yield* install(service, "image-tools", "1.1.0"), 404, "no_installable_version")
      expect(yield* archiveStatus(service, "1.1.0")).toBe(404)
      expectError(yield* send(service, "GET", "/nodes/image-tools/versions/1.1.0"), 404)
      const latest = yield* eventually(install(service, "image-tools"), (answer) => answer.status === 200 && (answer.body as { version: string }).version === "1.0.0")
      expect((latest.value.body as { version: string }).version).toBe("1.0.0")
      expect(yield* archiveStatus(service, "1.0.0")).toBe(302)
    }
    // the delete is soft (an admin may restore it), so its archive stays in the bucket as on the local disk
    expect(yield* bucketKeys(store)).toEqual(keys)

    // the node deleted through a: gone from b's reads, lists and downloads
    expectStatus(yield* send(a, "DELETE", "/publishers/acme/nodes/image-tools", { token: acme.ownerJwt }), 204, "delete the node")
    for (const service of [a, b]) {
      expectError(yield* send(service, "GET", "/nodes/image-tools"), 404)
      expectError(yield* install(service, "image-tools", "1.0.0"), 404)
      expect(yield* archiveStatus(service, "1.0.0")).toBe(404)
      const listed = yield* eventually(
        send<{ nodes: ReadonlyArray<{ id: string }> }>(service, "GET", "/nodes"),
        (answer) => answer.body.nodes.length === 0
      )
      expect(listed.value.body.nodes).toEqual([])
    }
    expect(yield* bucketKeys(store)).toEqual(keys)
  }))

it.live("with ARCHIVE_PUBLIC_BASE_URL, install, the listings and the service's archive URL all lead to the public base (a CDN)", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const { url } = yield* freshDatabase
    const cdn = "https://cdn.example.org/archives"
    const a = yield* startService(url, (c) => ({
      ...c,
      storage: { ...c.storage, backend: { _tag: "s3", ...store.settings, publicBaseUrl: Option.some(cdn) } }
    }))
    const acme = yield* makePublisher(a, "acme")
    const first = yield* published(a, acme, "image-tools", "1.0.0")
    expectStatus(yield* upload(a, first.signedUrl, yield* Effect.promise(() => zipOf({ "a/__init__.py": "\n" }))), 200, "upload")
    const { id } = yield* versionRow(a, "image-tools", "1.0.0")
    // install and the listings name the CDN; the service's own URL sends the client there too
    expect((yield* installed(a, "image-tools", "1.0.0")).downloadUrl).toBe(`${cdn}/${archiveKey(id)}`)
    expect((yield* listedVersion(a, "image-tools", "1.0.0")).downloadUrl).toBe(`${cdn}/${archiveKey(id)}`)
    const redirect = yield* Effect.promise(() => a.fetch("/archives/image-tools/1.0.0", { redirect: "manual" }))
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get("location")).toBe(`${cdn}/${archiveKey(id)}`)
  }))

it.live("an archive lost from the bucket goes back to Pending when an instance starts; all of them lost is a wrong bucket", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const { url } = yield* freshDatabase
    const a = yield* onBucket(store)(url)
    const acme = yield* makePublisher(a, "acme")
    const zip = yield* Effect.promise(() => zipOf({ "kept/__init__.py": "\n" }))
    for (const node of ["kept", "lost", "other"]) {
      const created = yield* published(a, acme, node, "1.0.0")
      expectStatus(yield* upload(a, created.signedUrl, zip), 200, `upload ${node}`)
    }
    const lost = yield* versionRow(a, "lost", "1.0.0")
    yield* Effect.promise(() => store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: archiveKey(lost.id) })))

    const c = yield* onBucket(store)(url)
    expect(yield* versionRow(c, "lost", "1.0.0")).toMatchObject({ status: "NodeVersionStatusPending", status_reason: archiveLostReason })
    expectError(yield* install(c, "lost", "1.0.0"), 404, "no_installable_version")
    expect((yield* versionRow(c, "kept", "1.0.0")).status).toBe("NodeVersionStatusActive")

    // every archive missing is a wrong bucket, not a crash: nothing moves
    for (const node of ["kept", "other"]) {
      const { id } = yield* versionRow(c, node, "1.0.0")
      yield* Effect.promise(() => store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: archiveKey(id) })))
    }
    const d = yield* onBucket(store)(url)
    for (const node of ["kept", "other"]) expect((yield* versionRow(d, node, "1.0.0")).status).toBe("NodeVersionStatusActive")
  }))
