/**
 * Headers that tell browsers what not to do with an answer: `X-Content-Type-Options: nosniff` on
 * every answer (set on the Node server, NodeServer.ts, so that nothing escapes it: the application's
 * answers, and those written on the bare socket), and a content security policy on the service's
 * own page, `/docs` (a route that says `page`, Routes.ts).
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { Piece } from "./Exchange.ts"

/** A declared type is the only one a browser may assume: no answer is ever run as a script or a page it is not. */
export const noSniff = { name: "x-content-type-options", value: "nosniff" } as const

/** The page's own scripts: `<script>` elements without `src` whose type is JavaScript's (data blocks are never run). */
const inlineScripts = (html: string) =>
  [...html.matchAll(/<script(\s[^>]*)?>([\s\S]*?)<\/script>/gi)]
    .filter(([, attributes = ""]) => !/\ssrc\s*=/i.test(attributes) && !/\stype\s*=\s*["']?application\/json/i.test(attributes))
    .map(([, , body = ""]) => body)

const sha256Source = (script: string) => `'sha256-${createHash("sha256").update(script).digest("base64")}'`

/**
 * The policy of the reference page: its inline scripts by their hashes and nothing else to run;
 * its requests (the "try it" client) to this service only; styles inline, as the bundle injects
 * them; images and fonts from the page itself; no framing, forms, plugins or base rewriting.
 */
export const docsPolicy = (html: string, publicBaseUrl: string) =>
  [
    "default-src 'none'",
    // the bundle compiles a WebAssembly module (its YAML and JSON parser): that, and no JavaScript eval
    `script-src ${[...inlineScripts(html).map(sha256Source), "'wasm-unsafe-eval'"].join(" ")}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self' ${new URL(publicBaseUrl).origin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'"
  ].join("; ")

/** `Content-Security-Policy` on the service's page, worked out once from the page itself (it never changes). */
export const pagePolicy = (publicBaseUrl: string): Piece => {
  const policies = new WeakMap<Uint8Array, string>()
  const policyOf = (bytes: Uint8Array) => {
    const known = policies.get(bytes)
    if (known !== undefined) return known
    const policy = docsPolicy(new TextDecoder().decode(bytes), publicBaseUrl)
    policies.set(bytes, policy)
    return policy
  }
  const withPolicy = (response: HttpServerResponse.HttpServerResponse) =>
    response.body._tag === "Uint8Array"
      ? HttpServerResponse.setHeader(response, "content-security-policy", policyOf(response.body.body))
      : response
  return (next) => (exchange) => exchange.route?.page === true ? Effect.map(next(exchange), withPolicy) : next(exchange)
}
