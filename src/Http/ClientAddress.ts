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

/** One address's window: when it opened and the counts in it. */
export interface Window {
  readonly started: number
  count: number
}

/**
 * Fixed windows per address, opened by an address's first count: every per-address limit of the
 * service counts in them (failed authentications, anonymous reads). Windows are kept in the order
 * they opened, so the ones that are over are forgotten first; past `maxAddresses` the oldest open
 * one is forgotten too (its address starts afresh), so a flood of distinct addresses cannot grow
 * the table. Keys are the callers' (`addressKey`).
 */
export const makeWindows = (options: { readonly windowMillis: number; readonly maxAddresses: number }) => {
  const windows = new Map<string, Window>()
  /** Forgets, oldest first, the windows that are over and any beyond the bound. */
  const sweep = (now: number) => {
    for (const [key, window] of windows) {
      if (windows.size <= options.maxAddresses && now - window.started < options.windowMillis) return
      windows.delete(key)
    }
  }
  return {
    /** Counts one event of `key` at `now`: its window, the event counted. */
    count: (key: string, now: number): Window => {
      let window = windows.get(key)
      if (window === undefined || now - window.started >= options.windowMillis) {
        // (re-)inserted when it opens: the map's order is that of the windows' starts
        if (window !== undefined) windows.delete(key)
        window = { started: now, count: 0 }
        windows.set(key, window)
        sweep(now)
      }
      window.count += 1
      return window
    },
    /** How many addresses are remembered. */
    size: () => windows.size
  }
}
