/**
 * Who made a request, as far as its handling learnt it, for the request's access-log line. The
 * authentication code notes the caller where it verifies a credential; the access log reads it
 * once the answer is out. A mutable slot rather than a fiber-local reference: a request's handling may run on
 * a forked fiber (Server.ts, `runToCompletion`), whose FiberRefs would not come back on abort.
 */
import { Context, Effect, Option } from "effect"

export interface CallerSlot {
  /** The user's id (a token's `sub`, an API key's owner). */
  userId: string | undefined
  /** A publisher's personal access token (its id, never its value): the caller is that publisher's CLI. */
  tokenId: string | undefined
}

export class RequestCaller extends Context.Service<RequestCaller, CallerSlot>()("RequestCaller") {}

const noted = (note: (slot: CallerSlot) => void) =>
  Effect.map(Effect.serviceOption(RequestCaller), (slot) => {
    if (Option.isSome(slot)) note(slot.value)
  })

/** Records the request's user; nothing outside a request. */
export const noteUser = (userId: string) => noted((slot) => (slot.userId = userId))

/** Records the personal access token a request authenticated with. */
export const noteToken = (tokenId: string) => noted((slot) => (slot.tokenId = tokenId))
