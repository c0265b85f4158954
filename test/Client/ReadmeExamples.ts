/**
 * The snippets of README.md's "Typed client" section, as they stand there (the README imports
 * `node-registry/client`, this file the module behind it): the type check (`tsc`) is what keeps
 * them true to the API. Not run.
 */
import { NodeFileSystem, NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { makeClient } from "../../src/client.ts"

declare const jwt: string
declare const pat: string

// --- README: reading with a login JWT -------------------------------------------------------------

const newest = Effect.gen(function*() {
  const registry = yield* makeClient({ baseUrl: "https://registry.example", auth: { bearer: jwt } })
  // parameters with a default (page, limit, latest, sort) may be left out
  const page = yield* registry.api.catalog.listAllNodes({ query: { host_version: "1.4.2" } })
  return page.nodes.map((node) => `${node.id} ${node.latest_version?.version ?? "-"}`)
})

// --- README: publishing with a personal access token ----------------------------------------------

const release = Effect.gen(function*() {
  const registry = yield* makeClient({ baseUrl: "https://registry.example", auth: { pat } })
  // the body as JSON carries it; one the service would refuse fails with BadRequest, unsent
  const { signedUrl, node_version } = yield* registry.publish("acme", "image-tools", {
    node: { name: "Image tools" },
    node_version: { version: "1.2.0", changelog: "Faster", supported_host_version: ">=1.2 <2" }
  })
  yield* registry.uploadArchive(signedUrl, "dist/image-tools.zip", {
    onProgress: (sent, total) => console.log(`${sent} of ${total} bytes`)
  })
  return `published ${node_version.version}`
}).pipe(
  Effect.catchTag("VersionExists", (error) => Effect.succeed(`already there: ${error.message}`))
)

// --- README: video to music as a stream -----------------------------------------------------------

const music = Effect.gen(function*() {
  const registry = yield* makeClient({ baseUrl: "https://registry.example", auth: { bearer: jwt } })
  yield* registry.generateMusic({ file: "clip.mp4", contentType: "video/mp4", prompt: "calm piano" }).pipe(
    Stream.runForEach((event) =>
      event.type === "audio_chunk" ? Console.log(`audio for stream ${event.stream_index}`) : Console.log(event.type)
    )
  )
})

// --- README: running them -------------------------------------------------------------------------

export const main = () =>
  Effect.all([newest, release, music]).pipe(
    Effect.provide(Layer.merge(NodeHttpClient.layerNodeHttp, NodeFileSystem.layer)),
    NodeRuntime.runMain
  )
