/**
 * With VENDOR_MODE=simulated every answer of the image proxy, errors included, carries
 * `x-vendor-mode: simulated`, so that nobody mistakes its images for a vendor's.
 */
import { HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import type { Piece } from "./Exchange.ts"

/** Where the image proxy answers (Images/Api.ts). */
const imageProxyPrefix = "/proxy/imagevendor/"

const simulated = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeader(response, "x-vendor-mode", "simulated")

/** The header, when the vendors are simulated; no piece otherwise. */
export const vendorModeHeader = (vendorMode: "live" | "simulated"): Piece | undefined =>
  vendorMode !== "simulated"
    ? undefined
    : (next) => (exchange) =>
      // by the route's pattern: a path under the vendor's word (Compat/Aliases.ts) is the same route
      (exchange.route?.pattern ?? exchange.path).startsWith(imageProxyPrefix) ? Effect.map(next(exchange), simulated) : next(exchange)
