/**
 * The typed client of the registry, derived from the contract (`Api`): every endpoint with its
 * declared schemas and error classes (`api`), plus the calls the derived client cannot make
 * well: a publish with a personal access token, archive uploads streamed from disk with their
 * progress, archive downloads as streams, and the video-to-music NDJSON stream as typed events.
 *
 * Every error answer fails with the class of `Domain/ApiErrors.ts` whose code it carries, so
 * `Effect.catchTag("VersionExists", ...)` works as on the server; `errorCode` gives its wire code.
 *
 *     const registry = yield* makeClient({ baseUrl: "https://registry.example", auth: { bearer: jwt } })
 *     const node = yield* registry.api.catalog.getNode({ params: { nodeId: "tool" } })
 *
 * It imports nothing but `effect` and Node's built-ins: it is also published on its own
 * (packages/client), and `Registry.layer` runs it over `fetch`.
 */
import { Context, Effect, Layer, type PlatformError, type Stream } from "effect"
import { FetchHttpClient, HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api } from "./Api.ts"
import type { MusicEvent } from "./Domain/MusicEvents.ts"
import { type ArchiveSource, download, uploadArchive, type UploadOptions } from "./Client/Archives.ts"
import { type ServiceFault, withApiErrors } from "./Client/Errors.ts"
import { generateMusic, generateTextToMusic, type MusicInput, type TextToMusicInput } from "./Client/Music.ts"
import { decodePublishRequest, type PublishRequest } from "./Client/Publish.ts"
import { withInterfacePolicies } from "./Client/Words.ts"
import type { PublishResponse } from "./Publishing/Api.ts"

export * from "./Domain/ApiErrors.ts"
export { errorCode, type ServiceFault } from "./Client/Errors.ts"
export type { ArchiveSource, UploadOptions } from "./Client/Archives.ts"
export type { MusicFields, MusicInput, MusicVideo, TextToMusicInput } from "./Client/Music.ts"
export type { PublishRequest } from "./Client/Publish.ts"
export type { MusicEvent } from "./Domain/MusicEvents.ts"
export { Api }

export interface ClientConfig {
  readonly baseUrl: string
  /** bearer: a login JWT sent as Authorization: Bearer; pat: a publisher's personal access token, or a publish token of trusted publishing */
  readonly auth?: { readonly bearer: string } | { readonly pat: string } | undefined
}

const derive = (httpClient: HttpClient.HttpClient.With<HttpClientError.HttpClientError | ServiceFault>) =>
  HttpApiClient.makeWith(Api, { httpClient })

/** The client HttpApiClient derives, where `params`, `query` and `headers` are required even when empty. */
type DerivedClient = Effect.Success<ReturnType<typeof derive>>

/** The parts of a request the client fills with `{}` when they are left out. */
type FillablePart = "params" | "query" | "headers"

/** A request of the default mode (decoded answers) whose parts that may be empty may be left out. */
type LooseRequest<Request> =
  & { readonly [K in keyof Request as K extends FillablePart ? ({} extends Request[K] ? K : never) : never]?: Request[K] }
  & {
    readonly [K in keyof Request as K extends FillablePart ? ({} extends Request[K] ? never : K) : K extends "responseMode" ? never : K]:
      Request[K]
  }
  & { readonly responseMode?: "decoded-only" | undefined }

/** The answer of a call in the default mode: the decoded value, without the raw response of the other modes. */
type DecodedCall<Method> = Method extends (...args: ReadonlyArray<any>) => Effect.Effect<infer A, infer E, infer R>
  ? Effect.Effect<Exclude<A, HttpClientResponse.HttpClientResponse | readonly [unknown, HttpClientResponse.HttpClientResponse]>, E, R>
  : never

/**
 * A derived method, callable as well without the parts that may be empty: `listAllNodes()`,
 * `getNode({ params })`. The loose form comes first; the derived one, last, is what
 * `Parameters` and `ReturnType` read and what a call of another response mode takes.
 */
type LooseMethod<Method> = Method extends (request: infer Request) => any
  ? void extends Request ? Method
  : Exclude<Request, void> extends infer Whole ? {} extends LooseRequest<Whole> ? ((request?: LooseRequest<Whole>) => DecodedCall<Method>) & Method
    : ((request: LooseRequest<Whole>) => DecodedCall<Method>) & Method
  : never
  : Method

/** Every endpoint of the contract, typed: `api.catalog.getNode({ params: { nodeId } })`, `api.catalog.listAllNodes()`. */
export type ApiClient = {
  readonly [Group in keyof DerivedClient]: { readonly [Endpoint in keyof DerivedClient[Group]]: LooseMethod<DerivedClient[Group][Endpoint]> }
}

/** A request with its left-out parts given as `{}`, as the derived client needs them. */
const filled = (request: Record<string, unknown> | undefined) => ({
  ...request,
  params: request?.["params"] ?? {},
  query: request?.["query"] ?? {},
  headers: request?.["headers"] ?? {}
})

/** The derived client, its methods taking requests whose empty parts are left out. */
const loosen = (derived: DerivedClient): ApiClient =>
  Object.fromEntries(Object.entries(derived).map(([group, methods]) => [
    group,
    Object.fromEntries(Object.entries(methods as Record<string, (request: unknown) => unknown>).map(([name, method]) => [
      name,
      (request?: Record<string, unknown>) => method(filled(request))
    ]))
  ])) as unknown as ApiClient

/** How a call of `api[group][endpoint]` may fail: its declared classes, the service's faults, transport and decoding. */
export type EndpointError<Group extends keyof ApiClient, Endpoint extends keyof ApiClient[Group]> =
  ApiClient[Group][Endpoint] extends (...args: ReadonlyArray<any>) => Effect.Effect<any, infer E, any> ? E : never

/** The publish call's answer: the version, Pending, and the signed URL to upload its archive to. */
export type PublishNodeVersionResponse = PublishResponse

export interface RegistryClient {
  /** every endpoint, typed: api.catalog.getNode({ params: { nodeId } }), api.publish.publishVersion(...), ... */
  readonly api: ApiClient
  /**
   * Publishes a version. The request is the body as JSON carries it (`version: "1.2.0"`); one
   * the service would refuse fails with BadRequest, worded as its 400, before anything is sent.
   * With `pat` auth the token goes in the body's `personal_access_token`, where the service takes
   * it; with `bearer` auth the login JWT goes in the header.
   */
  readonly publish: (
    publisherId: string,
    nodeId: string,
    request: PublishRequest
  ) => Effect.Effect<PublishNodeVersionResponse, EndpointError<"publish", "publishVersion">>
  /**
   * PUTs an archive (a file on disk, streamed, or bytes) to a signed upload URL (absolute, as
   * `signedUrl` gives it) as application/zip, calling `onProgress(sent, total)` as it goes.
   */
  readonly uploadArchive: (
    signedUrl: string,
    file: ArchiveSource,
    options?: UploadOptions
  ) => Effect.Effect<void, EndpointError<"archives", "uploadArchive"> | PlatformError.PlatformError>
  /**
   * GETs an archive by its downloadUrl (absolute, or a path of the registry) as a byte stream,
   * with its Content-Length; a redirect (to the object store's signed URL) is followed.
   */
  readonly download: (url: string) => Effect.Effect<
    { readonly size: number | undefined; readonly bytes: Stream.Stream<Uint8Array, HttpClientError.HttpClientError> },
    EndpointError<"archives", "downloadArchive">
  >
  /**
   * Video to music: the NDJSON answer as a stream of typed events. Keep-alive lines, and events
   * the contract's schemas do not describe (other types, or fields of another shape), are
   * skipped; a stream that fails once started ends with an `error` event (the vendor's or the
   * service's, `{code, message}`), not a failure.
   */
  readonly generateMusic: (
    input: MusicInput
  ) => Stream.Stream<MusicEvent, EndpointError<"musicProxy", "generateMusic"> | PlatformError.PlatformError>
  /** Text to music: the NDJSON answer as a stream of typed events, as `generateMusic` reads it. */
  readonly generateTextToMusic: (
    input: TextToMusicInput
  ) => Stream.Stream<MusicEvent, EndpointError<"musicProxy", "generateTextToMusic">>
}

/** A path of the registry as a URL. */
const onRegistry = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`

/** A client of the registry at `config.baseUrl`, over the HttpClient provided. */
export const makeClient = (config: ClientConfig): Effect.Effect<RegistryClient, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // any error answer fails with its class; the service answers a class an endpoint does not
    // declare only among its faults (ServiceFault), which the derived types add
    const answering = withApiErrors(yield* HttpClient.HttpClient) as HttpClient.HttpClient.With<
      HttpClientError.HttpClientError | ServiceFault
    >
    /** URLs as the registry gives them (signed upload URLs, download URLs): no credentials sent. */
    const anywhere = HttpClient.filterStatusOk(answering)
    const { auth } = config
    // a login JWT goes in every request's header; a personal access token in the publish body only
    const bearer = auth !== undefined && "bearer" in auth ? auth.bearer : undefined
    const pat = auth !== undefined && "pat" in auth ? auth.pat : undefined
    /** Paths of the registry, with the caller's credentials. */
    const registry = answering.pipe(
      HttpClient.mapRequest((request) => {
        const located = HttpClientRequest.updateUrl(request, (path) => onRegistry(config.baseUrl, path))
        return bearer === undefined ? located : HttpClientRequest.bearerToken(located, bearer)
      })
    )
    const api = loosen(yield* derive(withInterfacePolicies(registry)))

    return {
      api,
      publish: (publisherId, nodeId, request) =>
        Effect.flatMap(
          decodePublishRequest(request, pat),
          (payload) => api.publish.publishVersion({ params: { publisherId, nodeId }, payload })
        ),
      uploadArchive: uploadArchive(anywhere),
      download: (url) => download(answering)(URL.canParse(url) ? url : onRegistry(config.baseUrl, url)),
      generateMusic: generateMusic(HttpClient.filterStatusOk(registry)),
      generateTextToMusic: generateTextToMusic(HttpClient.filterStatusOk(registry))
    } satisfies RegistryClient
  })

/** The client as a service, for programs that take it from their context. */
export class Registry extends Context.Service<Registry, RegistryClient>()("registry/Client") {
  /** The client over `fetch` (Effect's FetchHttpClient). */
  static readonly layer = (config: ClientConfig): Layer.Layer<Registry> =>
    Layer.effect(Registry, makeClient(config)).pipe(Layer.provide(FetchHttpClient.layer))
}
