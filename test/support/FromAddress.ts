/**
 * Requests from a chosen client address: Linux routes all of 127/8 to lo, so a socket bound to
 * 127.0.0.N reaches the service as the client address 127.0.0.N. For the tests of what the service
 * counts per address (failed authentications, install counts).
 */
import { Effect } from "effect"
import * as http from "node:http"
import { parseJson } from "./Http.ts"
import type { Running } from "./Service.ts"

export interface AddressedAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: unknown
}

/** One request from a socket bound to `from` (a loopback address), on a connection of its own. */
export const fromAddress = (
  service: Running,
  from: string,
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: unknown } = {}
) =>
  Effect.promise(() =>
    new Promise<AddressedAnswer>((resolve, reject) => {
      const body = options.body === undefined ? undefined : JSON.stringify(options.body)
      const request = http.request(service.baseUrl + path, {
        method,
        localAddress: from,
        agent: false,
        headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...options.headers }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            body: text === "" ? undefined : parseJson(text, `${method} ${path} answered ${response.statusCode}`)
          })
        })
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end(body)
    })
  )

/** The answer in the shape of Http.ts's checks (`expectError`, `expectStatus`). */
export const asAnswer = (a: AddressedAnswer) => ({ status: a.status, body: a.body, text: JSON.stringify(a.body), headers: new Headers() })

/** The answers' statuses, counted: `{401: 5, 429: 15}`. */
export const tally = (answers: ReadonlyArray<AddressedAnswer>) =>
  answers.reduce<Record<number, number>>((counts, a) => ({ ...counts, [a.status]: (counts[a.status] ?? 0) + 1 }), {})

/** A publish as the publishing CLI sends it (comfy-cli, comfy_cli/registry/api.py: the token in the body). */
export const publishFrom = (service: Running, from: string, publisher: string, node: string, version: string, token: string) =>
  fromAddress(service, from, "POST", `/publishers/${publisher}/nodes/${node}/versions`, {
    body: { personal_access_token: token, node: { name: node }, node_version: { version } }
  })
