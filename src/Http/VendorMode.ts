/**
 * With VENDOR_MODE=simulated every answer of the media proxies, errors included, carries
 * `x-vendor-mode: simulated`, so that nobody mistakes its images or music for a vendor's.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import type { Piece } from "./Exchange.ts"

/** Where the media proxies answer (Images/Api.ts, Music/Api.ts). */
const proxyPrefixes = ["/proxy/imagevendor/", "/proxy/musicvendor/"]

const simulated = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeader(response, "x-vendor-mode", "simulated")

/** The header, when the vendors are simulated; no piece otherwise. */
export const vendorModeHeader = (vendorMode: "live" | "simulated"): Piece | undefined =>
  vendorMode !== "simulated"
    ? undefined
    : (next) => (exchange) => {
      // by the route's pattern: a path under the vendor's word (Compat/Aliases.ts) is the same route
      const path = exchange.route?.pattern ?? exchange.path
      return proxyPrefixes.some((prefix) => path.startsWith(prefix)) ? Effect.map(next(exchange), simulated) : next(exchange)
    }
