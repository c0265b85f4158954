/**
 * Media storage under STORAGE=s3 (s3rver on loopback), as `comfy_api_nodes/util/upload_helpers.py`
 * uses it: POST /customers/storage, a PUT of the bytes with their Content-Type, a plain GET of
 * `download_url`, which answers 302 to a presigned URL of the bucket serving the file's type and
 * name. The bytes live in the bucket, not on the instance's disk; an upload over the limit leaves
 * no object; the sweep deletes an expired file's object with its row.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import { onInstance } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { expectStatus, send } from "./support/Http.ts"
import { type ObjectStore, startObjectStore } from "./support/ObjectStore.ts"
import { type Running, serviceOnFreshDatabase } from "./support/Service.ts"

const maxFileBytes = 64 * 1024

const bucketKeys = (store: ObjectStore) =>
  Effect.promise(async () =>
    ((await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket }))).Contents ?? []).map((o) => o.Key!).sort()
  )

/** `sync_op` of the API nodes: the user's bearer token, `{file_name, content_type}`. */
const createFile = (service: Running, jwt: string, fileName: string) =>
  Effect.map(
    send<{ upload_url: string; download_url: string }>(service, "POST", "/customers/storage", {
      token: jwt,
      body: { file_name: fileName, content_type: "image/png" }
    }),
    (answer) => expectStatus(answer, 200, "POST /customers/storage").body
  )

/** `upload_file`: a PUT of the bytes with their Content-Type. */
const put = (service: Running, url: string, bytes: Uint8Array) =>
  Effect.promise(() =>
    fetch(onInstance(service, url), { method: "PUT", body: bytes, headers: { "content-type": "image/png" } }).then((r) => r.status)
  )

it.live("media files go to the bucket: upload, download, a refused upload leaves nothing, the sweep deletes the object", () =>
  Effect.gen(function*() {
    const store = yield* startObjectStore()
    const service = yield* serviceOnFreshDatabase((c) => ({
      ...c,
      storage: { ...c.storage, backend: { _tag: "s3", ...store.settings } },
      media: { ...c.media, maxFileBytes, sweepIntervalMillis: 200 }
    }))
    const jwt = yield* Effect.promise(() => service.token({ sub: "ada" }))
    const png = randomBytes(40_000)
    const file = yield* createFile(service, jwt, "uploaded_image.png")
    expect(yield* put(service, file.upload_url, png)).toBe(204)
    const [{ id }] = (yield* query<{ id: string }>(service, "SELECT id::text FROM media_files")) as [{ id: string }]
    expect(yield* bucketKeys(store)).toEqual([`media-${id}`])
    // nothing on the instance's disk
    expect(yield* Effect.promise(() => fs.readdir(service.config.storage.dir).catch(() => []))).toEqual([])

    // the service sends the vendor to the bucket, presigned, with the type and name to serve
    const redirect = yield* Effect.promise(() => fetch(onInstance(service, file.download_url), { redirect: "manual" }))
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get("cache-control")).toBe("no-store")
    expect(redirect.headers.get("location")!.startsWith(`${store.endpoint}/${store.bucket}/media-${id}?`)).toBe(true)
    const got = yield* Effect.promise(async () => {
      const response = await fetch(onInstance(service, file.download_url))
      return {
        status: response.status,
        type: response.headers.get("content-type"),
        disposition: response.headers.get("content-disposition"),
        bytes: Buffer.from(await response.arrayBuffer())
      }
    })
    expect(got).toEqual({
      status: 200,
      type: "image/png",
      disposition: `inline; filename="uploaded_image.png"; filename*=UTF-8''uploaded_image.png`,
      bytes: png
    })

    const tooLarge = yield* createFile(service, jwt, "too_large.png")
    expect(yield* put(service, tooLarge.upload_url, randomBytes(maxFileBytes + 1))).toBe(413)
    expect(yield* bucketKeys(store)).toEqual([`media-${id}`])

    yield* query(service, "UPDATE media_files SET expires_at = now() - interval '1 second'")
    for (let i = 0; i < 50 && (yield* bucketKeys(store)).length > 0; i++) yield* Effect.sleep("100 millis")
    expect(yield* bucketKeys(store)).toEqual([])
    expect(yield* query(service, "SELECT 1 FROM media_files WHERE id = $1", [id])).toEqual([])
  }))
