/**
 * Who a request comes from, in the one sense every per-address count of the service uses (failed
 * authentications, install counts, the anonymous reads' limit).
 */
import type { HttpServerRequest } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"

/** The socket's peer, or with `trustProxy` the entry the proxy appended to `X-Forwarded-For`. */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean): string => {
  const forwarded = trustProxy ? request.headers["x-forwarded-for"]?.split(",").at(-1)?.trim() : undefined
  return forwarded || (NodeHttpServerRequest.toIncomingMessage(request).socket.remoteAddress ?? "unknown")
}

const hexGroup = /^[0-9a-f]{1,4}$/

/**
 * What a limit counts an address under: an IPv4 address as itself (an IPv4-mapped IPv6 address
 * too), an IPv6 address by its /64, since one subscriber is usually handed a whole /64 and could
 * otherwise mint a fresh address per request. Anything else (not an address) stands for itself.
 */
export const addressKey = (address: string): string => {
  if (!address.includes(":")) return address
  let a = address.toLowerCase()
  const zone = a.indexOf("%")
  if (zone !== -1) a = a.slice(0, zone)
  if (a.startsWith("::ffff:") && a.includes(".")) return a.slice("::ffff:".length)
  const halves = a.split("::")
  if (halves.length > 2) return address
  const head = halves[0] === "" ? [] : halves[0]!.split(":")
  const tail = halves.length === 1 || halves[1] === "" ? [] : halves[1]!.split(":")
  // an embedded IPv4 tail (`64:ff9b::1.2.3.4`) takes two groups
  const groups = head.length + tail.length + (tail.at(-1)?.includes(".") === true ? 1 : 0)
  const missing = halves.length === 2 ? 8 - groups : 0
  if (missing < 0 || (halves.length === 1 && groups !== 8)) return address
  const prefix = [...head, ...Array<string>(missing).fill("0"), ...tail].slice(0, 4)
  if (!prefix.every((group) => hexGroup.test(group))) return address
  return `${prefix.map((group) => parseInt(group, 16).toString(16)).join(":")}::/64`
}
