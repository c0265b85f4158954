/**
 * The typed client (src/client.ts) pointed at a test instance: happy paths call the service the
 * way its users do, through the contract's own client.
 */
import { HttpClient } from "effect/http"
import { NodeFileSystem, NodeHttpClient } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { type ApiClient, type ClientConfig, makeClient, type RegistryClient } from "../../src/client.ts"
import type { Running } from "./Service.ts"

/**
 * Node's HTTP client on agents of the test process (not scoped to a test: the client outlives
 * the effect that makes it). Idle keep-alive sockets do not hold the process open.
 */
const httpClient = Effect.runSync(Effect.provideService(NodeHttpClient.makeNodeHttp, NodeHttpClient.HttpAgent, {
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true })
}))

/**
 * Clients made so far, by instance and credentials: deriving one from the contract takes some
 * 30 ms, and tests ask for the same one call after call.
 */
const made = new WeakMap<Running, Map<string, RegistryClient>>()

/** The client of `service`, calling as `auth` (a bearer JWT or a personal access token), or anonymously. */
export const clientFor = (service: Running, auth?: ClientConfig["auth"]) =>
  Effect.suspend(() => {
    const byAuth = made.get(service) ?? new Map<string, RegistryClient>()
    made.set(service, byAuth)
    const key = JSON.stringify(auth ?? null)
    const known = byAuth.get(key)
    return known !== undefined ? Effect.succeed(known) : makeClient({ baseUrl: service.baseUrl, auth }).pipe(
      Effect.provideService(HttpClient.HttpClient, httpClient),
      Effect.tap((client) => Effect.sync(() => byAuth.set(key, client)))
    )
  })

/** The client calling with `jwt` as its bearer token. */
export const bearerClient = (service: Running, jwt: string) => clientFor(service, { bearer: jwt })

/** A URL the service gave (signed upload, download) on this instance: the tests' public base URL has no port. */
export const onInstance = (service: Running, url: string) => {
  const given = new URL(url)
  return service.baseUrl + given.pathname + given.search
}

/** A download's bytes, read whole. */
export const bytesOf = <E>(bytes: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(bytes), (chunks) => Buffer.concat(chunks))

/** Files read from this machine's disk (uploads and videos given by path). */
export const withFiles = Effect.provide(NodeFileSystem.layer)

/** `GET /nodes` parameters as the typed client takes them. */
export type ListParams = Parameters<ApiClient["catalog"]["listAllNodes"]>[0]["query"]
