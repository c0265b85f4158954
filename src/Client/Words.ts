/**
 * Answers of an instance that speaks the clients' words (ANSWER_ALIASES=true, docs/compatibility.md)
 * read by the typed client: their extra names are fields the contract does not know, which
 * decoding ignores; but a host-node policy then comes spelled in the clients' word
 * (`ComfyNodePolicyActive`), which the contract's enum refuses. It is read back as the
 * interface's (`HostNodePolicyActive`) before decoding, whatever the word. Other answers, and
 * any that is not JSON (streams, archives), pass untouched.
 */
import { Effect } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"

const otherPolicy = /"policy":"(?!HostNodePolicy)[A-Za-z0-9]*Policy(Active|Banned|LocalOnly)"/g

export const withInterfacePolicies = <E, R>(client: HttpClient.HttpClient.With<E, R>) =>
  HttpClient.transformResponse(
    client,
    Effect.flatMap((response) => {
      if (!(response.headers["content-type"] ?? "").startsWith("application/json")) return Effect.succeed(response)
      return Effect.map(Effect.orElseSucceed(response.text, () => undefined), (text) => {
        if (text === undefined || !otherPolicy.test(text)) return response
        otherPolicy.lastIndex = 0
        const interfaceWords = text.replace(otherPolicy, (_, state: string) => `"policy":"HostNodePolicy${state}"`)
        return HttpClientResponse.fromWeb(
          response.request,
          new Response(interfaceWords, { status: response.status, headers: response.headers as Record<string, string> })
        )
      })
    })
  )
