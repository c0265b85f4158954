/**
 * Trusted publishing from GitHub Actions: inside a job granted `id-token: write`, the runner sets
 * ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN. The CLI asks the registry for
 * its audience, asks the runner for an identity token of that audience (GET the URL with
 * `&audience=`, the request token as bearer; the answer is `{"value": "<jwt>"}`), and exchanges
 * it for a publish token, which the publish call takes as a personal access token.
 */
import { Effect, Option, Schema } from "effect"
import { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { networkFault } from "./Failure.ts"
import { call, clientAt, fromEnv, type Target } from "./Session.ts"

/** The runner's variables, when the job may ask for identity tokens. */
export const runnerRequest = Effect.gen(function*() {
  const url = yield* fromEnv("ACTIONS_ID_TOKEN_REQUEST_URL")
  const token = yield* fromEnv("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
  return Option.isSome(url) && Option.isSome(token) ? Option.some({ url: url.value, token: token.value }) : Option.none()
})

const RunnerAnswer = Schema.Struct({ value: Schema.String })

/** An identity token of `audience` from the runner. */
const identityToken = (runner: { readonly url: string; readonly token: string }, audience: string) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const url = `${runner.url}${runner.url.includes("?") ? "&" : "?"}audience=${encodeURIComponent(audience)}`
    const answer = yield* http.execute(HttpClientRequest.get(url).pipe(HttpClientRequest.bearerToken(runner.token))).pipe(
      Effect.flatMap(HttpClientResponse.filterStatusOk),
      Effect.flatMap(HttpClientResponse.schemaBodyJson(RunnerAnswer))
    )
    return answer.value
  }).pipe(
    Effect.mapError((e) => networkFault("id_token_unavailable", `the runner gave no identity token (${e._tag === "SchemaError" ? "its answer has no value" : e.reason._tag})`))
  )

/** A publish token for the nodes whose trusted publishers this job matches, and the note to print. */
export const publishTokenFromRunner = (at: Target, runner: { readonly url: string; readonly token: string }) =>
  Effect.gen(function*() {
    const registry = yield* clientAt(at)
    const { audience } = yield* call("trusted publishing audience", registry.api.trustedPublishing.getTrustedPublishingAudience())
    const identity = yield* call("identity token", identityToken(runner, audience))
    const minted = yield* call(
      "trusted publishing exchange",
      registry.api.trustedPublishing.exchangeTrustedPublishingToken({ payload: { token: identity } })
    )
    const nodes = minted.nodes.map((n) => `${n.publisher_id}/${n.node_id}`).join(", ")
    return { token: minted.token, note: `trusted publishing: this job may publish ${nodes} until ${minted.expires_at.toISOString()}` }
  })
