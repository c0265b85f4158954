/**
 * The typed client (src/client.ts) pointed at a test instance: happy paths call the service the
 * way its users do, through the contract's own client.
 */
import { HttpClient } from "@effect/platform"
import { NodeFileSystem, NodeHttpClient } from "@effect/platform-node"
import { Effect } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { type ApiClient, type ClientConfig, makeClient } from "../../src/client.ts"
import type { Running } from "./Service.ts"

/**
 * Node's HTTP client on agents of the test process (not scoped to a test: the client outlives
 * the effect that makes it). Idle keep-alive sockets do not hold the process open.
 */
const httpClient = Effect.runSync(Effect.provideService(NodeHttpClient.make, NodeHttpClient.HttpAgent, {
  [NodeHttpClient.HttpAgentTypeId]: NodeHttpClient.HttpAgentTypeId,
  http: new http.Agent({ keepAlive: true }),
  https: new https.Agent({ keepAlive: true })
}))

/** The client of `service`, calling as `auth` (a bearer JWT or a personal access token), or anonymously. */
export const clientFor = (service: Running, auth?: ClientConfig["auth"]) =>
  makeClient({ baseUrl: service.baseUrl, auth }).pipe(Effect.provideService(HttpClient.HttpClient, httpClient))

/** The client calling with `jwt` as its bearer token. */
export const bearerClient = (service: Running, jwt: string) => clientFor(service, { bearer: jwt })

/** A URL the service gave (signed upload, download) on this instance: the tests' public base URL has no port. */
export const onInstance = (service: Running, url: string) => {
  const given = new URL(url)
  return service.baseUrl + given.pathname + given.search
}

/** Files read from this machine's disk (uploads and videos given by path). */
export const withFiles = Effect.provide(NodeFileSystem.layer)

/** `GET /nodes` parameters as the typed client takes them. */
export type ListParams = Parameters<ApiClient["catalog"]["listAllNodes"]>[0]["urlParams"]
