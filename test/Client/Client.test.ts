/**
 * The typed client (src/client.ts) against the real service: bearer calls, a publish with a
 * personal access token, the error classes as `catchTag` sees them, an upload streamed from disk
 * with its progress, a download as a stream, and the music stream as typed events; then error
 * answers the service seldom gives, from a stub HTTP client.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Result, Stream } from "effect"
import { HttpClient, type HttpClientRequest, HttpClientResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import {
  ArchiveRejected,
  BadRequest,
  type ClientConfig,
  errorCode,
  InternalError,
  makeClient,
  NotFound,
  RateLimited,
  type RegistryClient,
  VersionExists
} from "../../src/client.ts"
import { bytesOf, clientFor, onInstance, withFiles } from "../support/Client.ts"
import { FakeMusicVendor } from "../support/FakeMusicVendor.ts"
import { serviceWithFakeVendor } from "../support/Music.ts"
import { type Running, Service } from "../support/Service.ts"
import { mp4 } from "../support/Video.ts"
import { zipOf } from "../support/Zip.ts"

/** The publisher of these tests, its owner's client and a client holding its personal access token. */
let owner: RegistryClient
let cli: RegistryClient

const tempFile = (name: string, bytes: Uint8Array) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-client-"))
      await fs.writeFile(path.join(dir, name), bytes)
      return path.join(dir, name)
    }),
    (file) => Effect.promise(() => fs.rm(path.dirname(file), { recursive: true, force: true }))
  )

/** Publishes `nodeId`@`version` with the token; the version, and where to upload it on this instance. */
const publish = (service: Running, nodeId: string, version: string, changelog = `release ${version}`) =>
  Effect.map(
    cli.publish("acme", nodeId, { node: { name: nodeId }, node_version: { version, changelog } }),
    (published) => ({ ...published, signedUrl: onInstance(service, published.signedUrl) })
  )

layer(serviceWithFakeVendor(), { excludeTestServices: true })("typed client", (it) => {
  it.effect("bearer calls: a publisher and a personal access token, read back typed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      // the public operations endpoints need no credentials
      const anonymous = yield* clientFor(service)
      expect(yield* anonymous.api.system.health()).toEqual({ status: "ok" })
      expect(yield* anonymous.api.system.ready()).toEqual({ status: "ready", database: "up" })
      owner = yield* clientFor(service, { bearer: yield* Effect.promise(() => service.token({ sub: "ann", email: "ann@example.com" })) })
      const created = yield* owner.api.publishers.createPublisher({ payload: { id: "acme", name: "Acme" } })
      expect(created).toMatchObject({ id: "acme", name: "Acme", status: "PublisherStatusActive" })
      expect(created.createdAt).toBeInstanceOf(Date)
      const mine = yield* owner.api.publishers.listMyPublishers()
      expect(mine.map((p) => p.id)).toEqual(["acme"])
      const { token } = yield* owner.api.tokens.createToken({ params: { publisherId: "acme" }, payload: { name: "cli" } })
      expect(token.length).toBeGreaterThan(20)
      const listed = yield* owner.api.tokens.listTokens({ params: { publisherId: "acme" } })
      expect(listed.map((t) => t.name)).toEqual(["cli"])
      cli = yield* clientFor(service, { pat: token })
      // the token is not a bearer credential: calls that need one fail with their class
      const refused = yield* Effect.flip(cli.api.publishers.listMyPublishers())
      expect(refused._tag).toBe("Unauthorized")
      expect(errorCode(refused)).toBe("unauthorized")
    }))

  it.effect("a publish with the personal access token; the same again is a replay, another one is caught as VersionExists", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const first = yield* publish(service, "image-tools", "1.0.0")
      expect(first.node_version).toMatchObject({ node_id: "image-tools", version: "1.0.0", status: "NodeVersionStatusPending" })
      expect(first.signedUrl).toMatch(/\/archives\/image-tools\/1\.0\.0\?expires=\d+&signature=/)
      // a retry (its answer lost) gets the same version
      expect((yield* publish(service, "image-tools", "1.0.0")).node_version).toEqual(first.node_version)

      const again = yield* publish(service, "image-tools", "1.0.0", "another release").pipe(
        Effect.as("published twice"),
        Effect.catchTag("VersionExists", (e) => Effect.succeed(`caught: ${errorCode(e)}`))
      )
      expect(again).toBe("caught: version_exists")
      const error = yield* Effect.flip(publish(service, "image-tools", "1.0.0", "another release"))
      expect(error).toBeInstanceOf(VersionExists)
      expect(error.message).toContain("1.0.0")
      // a wrong token is its own class
      const stranger = yield* clientFor(service, { pat: "not-a-token-of-acme" })
      const refused = yield* Effect.flip(stranger.publish("acme", "image-tools", { node_version: { version: "2.0.0" } }))
      expect(refused._tag).toBe("InvalidToken")
    }))

  it.effect("an upload from disk tells its progress up to the file's size; the version goes Active, then downloads", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const published = yield* publish(service, "image-tools", "1.1.0")
      // random bytes do not compress: the file is larger than a read chunk, so progress comes in several steps
      const archive = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n", "weights.bin": randomBytes(300_000) }))
      const file = yield* tempFile("image-tools.zip", archive)
      const progress: Array<[number, number]> = []
      yield* withFiles(cli.uploadArchive(published.signedUrl, file, { onProgress: (sent, total) => progress.push([sent, total]) }))
      expect(progress.length).toBeGreaterThan(1)
      expect(progress.every(([, total]) => total === archive.length)).toBe(true)
      expect(progress.every(([sent], i) => i === 0 || sent > progress[i - 1]![0])).toBe(true)
      expect(progress.at(-1)).toEqual([archive.length, archive.length])

      const version = yield* owner.api.catalog.getNodeVersion({ params: { nodeId: "image-tools", versionId: "1.1.0" } })
      expect(version.status).toBe("NodeVersionStatusActive")
      // the host's version goes as the caller wrote it (a leading v tolerated)
      const forHost = yield* owner.api.catalog.listAllNodes({
        query: { latest: true, node_id: ["image-tools"], host_version: "v1.0.0" }
      })
      expect(forHost.nodes.map((n) => [n.id, n.latest_version?.version])).toEqual([["image-tools", "1.1.0"]])

      // install names the download URL; the archive comes back byte for byte, with its size
      const installed = yield* owner.api.catalog.installNode({ params: { nodeId: "image-tools" }, query: {} })
      expect(installed.version).toBe("1.1.0")
      const { size, bytes } = yield* owner.download(onInstance(service, installed.downloadUrl!))
      expect(size).toBe(archive.length)
      const got = yield* bytesOf(bytes)
      expect(Buffer.compare(got, archive)).toBe(0)
      // a path of the registry works too
      const byPath = yield* owner.download(new URL(installed.downloadUrl!).pathname)
      expect(byPath.size).toBe(archive.length)
      yield* Stream.runDrain(byPath.bytes)
    }))

  it.effect("an upload from memory that fails the checks fails with ArchiveRejected and its details; the version stays Pending", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const published = yield* publish(service, "image-tools", "1.2.0")
      const notAZip = new TextEncoder().encode("this is not a zip archive")
      const progress: Array<number> = []
      const refused = yield* Effect.flip(
        withFiles(cli.uploadArchive(published.signedUrl, notAZip, { onProgress: (sent) => progress.push(sent) }))
      )
      expect(progress).toEqual([notAZip.length])
      expect(refused).toBeInstanceOf(ArchiveRejected)
      expect((refused as ArchiveRejected).details).toEqual([{ check: "readable_zip", message: expect.stringMatching(/^not a readable zip/) }])
      const version = yield* owner.api.catalog.getNodeVersion({ params: { nodeId: "image-tools", versionId: "1.2.0" } })
      expect(version.status).toBe("NodeVersionStatusPending")
    }))

  it.effect("the hand-made calls fail with the error classes too", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const published = yield* publish(service, "image-tools", "1.3.0")
      const forged = published.signedUrl.replace(/signature=[^&]+/, `signature=${"A".repeat(43)}`)
      const refused = yield* Effect.flip(withFiles(cli.uploadArchive(forged, new Uint8Array([1, 2, 3]))))
      expect(refused._tag).toBe("InvalidSignature")
      expect(errorCode(refused)).toBe("invalid_signature")
      // an archive that was never uploaded is not downloadable
      const missing = yield* Effect.flip(owner.download(`/archives/image-tools/1.3.0`))
      expect(missing).toBeInstanceOf(NotFound)
      // catchTag on a derived call
      const node = yield* owner.api.catalog.getNode({ params: { nodeId: "no-such-node" }, query: {} }).pipe(
        Effect.catchTag("NotFound", () => Effect.succeed(undefined))
      )
      expect(node).toBeUndefined()
    }))

  it.effect("video to music: the answer as typed events, from a file on disk or a URL", () =>
    Effect.gen(function*() {
      const fake = yield* FakeMusicVendor
      fake.reset()
      const title = { type: "title", title: "Sunrise", display_tags: ["calm"], copy_index: 0, prompt_index: 0, stream_index: 1 }
      fake.behave({
        kind: "stream",
        lines: [
          '{"type":"duration","duration":30}',
          JSON.stringify(title),
          '{"type":"vendor_news","anything":1}',
          '{"type":"audio_chunk","data":"AAEC","stream_index":1}',
          '{"type":"complete"}'
        ]
      })
      const video = mp4(30, 100_000)
      const file = yield* tempFile("clip.mp4", video)
      const events = yield* withFiles(Stream.runCollect(owner.generateMusic({ file, contentType: "video/mp4", prompt: "calm piano" })))
      // the type the contract does not know is skipped; the others are decoded
      expect(events).toEqual([
        { type: "duration", duration: 30 },
        title,
        { type: "audio_chunk", data: "AAEC", stream_index: 1 },
        { type: "complete" }
      ])
      const [sent] = fake.received()
      expect(sent?.file).toMatchObject({ field: "0.video", filename: "clip.mp4", size: video.length })
      expect(sent?.fields).toEqual({ prompt: "calm piano" })

      fake.reset()
      fake.behave({ kind: "stream", lines: ['{"type":"duration","duration":12}', '{"type":"complete"}'] })
      const byUrl = yield* withFiles(Stream.runCollect(owner.generateMusic({ url: "https://videos.example/clip.mp4" })))
      expect(byUrl.map((e) => e.type)).toEqual(["duration", "complete"])
      expect(fake.received()[0]?.fields).toMatchObject({ video: "https://videos.example/clip.mp4" })
    }))

  it.effect("video to music: refusals before the stream are error classes", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const anonymous = yield* clientFor(service)
      const unauthorized = yield* Effect.result(withFiles(Stream.runCollect(anonymous.generateMusic({ url: "https://videos.example/a.mp4" }))))
      expect(Result.isFailure(unauthorized) && unauthorized.failure._tag).toBe("Unauthorized")
      const tooLong = yield* Effect.result(withFiles(Stream.runCollect(owner.generateMusic({ file: mp4(7 * 60), filename: "long.mp4" }))))
      expect(Result.isFailure(tooLong) && errorCode(tooLong.failure)).toBe("video_too_long")
    }))
})

describe("error answers", () => {
  const json = { "content-type": "application/json" }
  /** A client whose requests `handle` answers, in place of the service. */
  const over = (handle: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<HttpClientResponse.HttpClientResponse>, auth?: ClientConfig["auth"]) =>
    makeClient({ baseUrl: "http://registry.test", auth }).pipe(Effect.provideService(HttpClient.HttpClient, HttpClient.make(handle)))
  /** The answer `status`, `body` and `headers` to `request`. */
  const reply = (request: HttpClientRequest.HttpClientRequest, status: number, body: string, headers: Record<string, string> = json) =>
    HttpClientResponse.fromWeb(request, new Response(body, { status, headers }))
  /** A client whose every request is answered with `status` and `body`, and `headers`. */
  const answering = (status: number, body: string, headers?: Record<string, string>) =>
    over((request) => Effect.succeed(reply(request, status, body, headers)))
  const getNode = (client: RegistryClient) => Effect.flip(client.api.catalog.getNode({ params: { nodeId: "tool" }, query: {} }))

  it.effect("a fault of the service an endpoint does not declare is still its class", () =>
    Effect.gen(function*() {
      const failed = yield* getNode(yield* answering(500, JSON.stringify({ error: "internal_error", message: "The service failed" })))
      expect(failed).toBeInstanceOf(InternalError)
      expect(failed.message).toBe("The service failed")
      expect(errorCode(failed)).toBe("internal_error")
    }))

  it.effect("a rate limit carries Retry-After as its wait", () =>
    Effect.gen(function*() {
      const client = yield* answering(429, JSON.stringify({ error: "rate_limited", message: "Slow down" }), { ...json, "retry-after": "30" })
      const failed = yield* Effect.flip(client.api.claims.claimMyNode({
        params: { publisherId: "acme", nodeId: "tool" },
        payload: { VCS_TOKEN: "t" }
      }))
      expect(failed).toBeInstanceOf(RateLimited)
      expect((failed as RateLimited).retryAfter).toBe(30)
    }))

  it.effect("a publish sends the wire form it is given, with the personal access token", () =>
    Effect.gen(function*() {
      const sent: Array<unknown> = []
      const client = yield* over((request) => {
        if (request.body._tag === "Uint8Array") sent.push(JSON.parse(new TextDecoder().decode(request.body.body)))
        return Effect.succeed(reply(request, 409, JSON.stringify({ error: "version_exists", message: "Version 1.0.0 exists" })))
      }, { pat: "the-token" })
      const request = { node_version: { version: "1.0.0", supported_host_version: ">=1.2 <2" } }
      expect(yield* Effect.flip(client.publish("acme", "tool", request))).toBeInstanceOf(VersionExists)
      expect(sent).toEqual([{ ...request, personal_access_token: "the-token" }])
    }))

  it.effect("a publish the service would refuse fails with BadRequest, worded as its 400, and sends nothing", () =>
    Effect.gen(function*() {
      let sent = 0
      // were anything sent, its answer (not an error body) would fail the checks below at once
      const client = yield* over((request) =>
        Effect.sync(() => {
          sent++
          return reply(request, 500, "sent", { "content-type": "text/plain" })
        })
      )
      const refused = yield* Effect.flip(client.publish("acme", "tool", { node_version: { version: "1.0.0+build.5" } }))
      expect(refused).toBeInstanceOf(BadRequest)
      expect(refused.message).toBe(
        "Invalid value for 'node_version.version': build metadata (+...) is not accepted: versions differing only in it could not be told apart"
      )
      const range = yield* Effect.flip(client.publish("acme", "tool", { node_version: { version: "1.0.0", supported_host_version: "soon" } }))
      expect(range.message).toBe("Invalid value for 'node_version.supported_host_version': expected a version range such as >=1.2.0 <2.0.0, ^1.4 or >=1.2.0,<2.0.0")
      expect(sent).toBe(0)
    }))

  it.effect("an answer that is not ErrorResponse stays an HTTP error, its body readable", () =>
    Effect.gen(function*() {
      const failed = yield* getNode(yield* answering(502, "<html>Bad gateway</html>", { "content-type": "text/html" }))
      expect(failed._tag).toBe("HttpClientError")
      if (failed._tag !== "HttpClientError") return
      expect(failed.response?.status).toBe(502)
      expect(yield* failed.response!.text).toBe("<html>Bad gateway</html>")
      const download = yield* Effect.flip((yield* answering(502, "down", { "content-type": "text/plain" })).download("/archives/tool/1.0.0"))
      expect(download._tag).toBe("HttpClientError")
      expect(errorCode(download)).toBeUndefined()
    }))
})
