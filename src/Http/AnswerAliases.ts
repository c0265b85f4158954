/**
 * The clients' names in JSON answers (`ANSWER_ALIASES=true`; the table is Compat/Answers.ts): a
 * successful JSON answer that holds any of the interface's names it lists is given the clients'
 * names beside them. The catalogue's pages come with them already (PostgreSQL writes them, and
 * their compressed forms are kept): a Representation is left alone. Below the validators, so
 * that an ETag is of the bytes sent. Off (the default), the piece is not in the list.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { addsNames, answerAliases, type AnswerWords, withClientNames } from "../Compat/Answers.ts"
import type { Piece } from "./Exchange.ts"
import { representationOf } from "./Representation.ts"

const decoder = new TextDecoder()
const encoder = new TextEncoder()

export const answerAliasing = (words: AnswerWords & { readonly inAnswers: boolean }): Piece | undefined => {
  const aliases = answerAliases(words)
  if (!words.inAnswers || !addsNames(aliases)) return undefined
  const rename = withClientNames(aliases)
  // every name the table rewrites, as bytes: an answer holding none of them is sent as it is, unparsed
  const markers = [...aliases.node, ...aliases.version, ...aliases.hostNode].map(([name]) => Buffer.from(`"${name}"`))
  if (aliases.policyPrefix !== undefined) markers.push(Buffer.from("\"HostNodePolicy"))
  const mayHold = (bytes: Uint8Array) => {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return markers.some((marker) => buffer.includes(marker))
  }
  return (next) => (exchange) =>
    Effect.map(next(exchange), (response) => {
      const body = response.body
      if (
        response.status < 200 || response.status >= 300 || body._tag !== "Uint8Array" ||
        !body.contentType.startsWith("application/json") || representationOf(response) !== undefined || !mayHold(body.body)
      ) return response
      let value: unknown
      try {
        value = JSON.parse(decoder.decode(body.body))
      } catch {
        return response
      }
      const renamed = rename(value)
      if (renamed === value) return response
      return HttpServerResponse.uint8Array(encoder.encode(JSON.stringify(renamed)), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        cookies: response.cookies,
        contentType: body.contentType
      })
    })
}
