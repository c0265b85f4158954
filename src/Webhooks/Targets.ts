/**
 * Where a webhook may go. A target's host is resolved at each attempt and every address it
 * resolves to is checked; the request then connects to the checked address itself (Node's
 * `lookup` answered from the check), so a name that resolves elsewhere a moment later (DNS
 * rebinding) cannot slip past. Redirects are never followed: a 3xx is the attempt's answer.
 */
import * as dns from "node:dns"
import * as http from "node:http"
import * as https from "node:https"
import * as net from "node:net"

/** Why an address is not a public one; `undefined` for a public address. */
export type Refusal = string | undefined

const v4 = (address: string): ReadonlyArray<number> | undefined => {
  const parts = address.split(".")
  if (parts.length !== 4) return undefined
  const bytes = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN))
  return bytes.every((b) => b >= 0 && b <= 255) ? bytes : undefined
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad and `::` allowed); `undefined` if it is none. */
export const ipv6Groups = (address: string): ReadonlyArray<number> | undefined => {
  let text = address.replace(/%.*$/, "") // a zone (fe80::1%eth0) names an interface, not an address
  // a trailing dotted quad is two groups written otherwise
  const quad = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (quad) {
    const bytes = v4(quad[1]!)
    if (!bytes) return undefined
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16)
    text = `${text.slice(0, quad.index + 1)}${hex(bytes[0]!, bytes[1]!)}:${hex(bytes[2]!, bytes[3]!)}`
  }
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)))
  const head = parse(halves[0]!)
  const rest = halves.length === 2 ? parse(halves[1]!) : []
  const fixed = head.length + rest.length
  if ([...head, ...rest].some(Number.isNaN)) return undefined
  if (halves.length === 1 ? fixed !== 8 : fixed > 7) return undefined
  return [...head, ...Array<number>(8 - fixed).fill(0), ...rest]
}

const inV4 = (bytes: ReadonlyArray<number>, prefix: readonly [number, number, number, number], bits: number) => {
  const value = (b: ReadonlyArray<number>) => ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0
  return ((value(bytes) & mask) >>> 0) === ((value(prefix) & mask) >>> 0)
}

/** IPv4 ranges that are no public host's (RFC 6890 and its kin). */
const v4Refused: ReadonlyArray<readonly [readonly [number, number, number, number], number, string]> = [
  [[0, 0, 0, 0], 8, "unspecified ('this network')"],
  [[10, 0, 0, 0], 8, "private"],
  [[100, 64, 0, 0], 10, "shared (carrier-grade NAT)"],
  [[127, 0, 0, 0], 8, "loopback"],
  [[169, 254, 0, 0], 16, "link-local"],
  [[172, 16, 0, 0], 12, "private"],
  [[192, 0, 0, 0], 24, "IETF protocol assignments"],
  [[192, 168, 0, 0], 16, "private"],
  [[198, 18, 0, 0], 15, "benchmarking"],
  [[224, 0, 0, 0], 4, "multicast"],
  [[240, 0, 0, 0], 4, "reserved or broadcast"]
]

const refusalOfV4 = (bytes: ReadonlyArray<number>): Refusal =>
  v4Refused.find(([prefix, bits]) => inV4(bytes, prefix, bits))?.[2]

const v4Of = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]

const refusalOfV6 = (g: ReadonlyArray<number>): Refusal => {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0)
  if (zeroUpTo(8)) return "unspecified"
  if (zeroUpTo(7) && g[7] === 1) return "loopback"
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): the IPv4 address is what is reached
  if (zeroUpTo(5) && g[5] === 0xffff) return refusalOfV4(v4Of(g[6]!, g[7]!)) && `IPv4-mapped ${refusalOfV4(v4Of(g[6]!, g[7]!))}`
  if (zeroUpTo(6)) return "IPv4-compatible (deprecated)"
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address too
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const refused = refusalOfV4(v4Of(g[6]!, g[7]!))
    if (refused) return `NAT64 of ${refused}`
  }
  if (g[0] === 0x2002) {
    const refused = refusalOfV4(v4Of(g[1]!, g[2]!))
    if (refused) return `6to4 of ${refused}`
  }
  if ((g[0]! & 0xfe00) === 0xfc00) return "unique local (IPv6 ULA)"
  if ((g[0]! & 0xffc0) === 0xfe80) return "link-local"
  if ((g[0]! & 0xffc0) === 0xfec0) return "site-local (deprecated)"
  if ((g[0]! & 0xff00) === 0xff00) return "multicast"
  if (g[0] === 0x2001 && g[1] === 0xdb8) return "documentation"
  return undefined
}

/** Why `address` (an IP literal) is not a public one, or `undefined`; something that is no IP address is refused too. */
export const refusalOf = (address: string): Refusal => {
  if (net.isIPv4(address)) return refusalOfV4(v4(address)!)
  const groups = net.isIPv6(address) ? ipv6Groups(address) : undefined
  return groups === undefined ? "not an IP address" : refusalOfV6(groups)
}

/** How one attempt ended: an HTTP status, or why there was none. */
export type AttemptOutcome =
  | { readonly _tag: "Answered"; readonly status: number }
  | { readonly _tag: "Refused"; readonly reason: string }
  | { readonly _tag: "Failed"; readonly reason: string }

const lookupAll = (host: string) =>
  new Promise<ReadonlyArray<dns.LookupAddress>>((resolve, reject) =>
    dns.lookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)))
  )

/**
 * POSTs `body` with `headers` to `target`: resolved, every address checked unless `allowPrivate`,
 * connected to the first checked address, no redirect followed, at most `timeoutMillis` in all.
 * The answer's body is read and dropped (at most a little of it).
 */
export const post = async (
  target: string,
  headers: Readonly<Record<string, string>>,
  body: string,
  options: { readonly allowPrivate: boolean; readonly timeoutMillis: number }
): Promise<AttemptOutcome> => {
  const url = new URL(target)
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1")
  let addresses: ReadonlyArray<dns.LookupAddress>
  try {
    addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await lookupAll(host)
  } catch (error) {
    return { _tag: "Failed", reason: `could not resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` }
  }
  if (addresses.length === 0) return { _tag: "Failed", reason: `${host} resolves to no address` }
  if (!options.allowPrivate) {
    for (const { address } of addresses) {
      const refused = refusalOf(address)
      if (refused !== undefined) {
        return { _tag: "Refused", reason: `target ${host} resolves to ${address}, a ${refused} address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS is off)` }
      }
    }
  }
  const pinned = addresses[0]!
  const client = url.protocol === "https:" ? https : http
  return new Promise<AttemptOutcome>((resolve) => {
    const request = client.request(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
      // the connection goes to the address checked above, whatever the name resolves to now
      lookup: (_hostname, lookupOptions, callback) => {
        if ((lookupOptions as dns.LookupAllOptions).all) (callback as (e: null, a: Array<dns.LookupAddress>) => void)(null, [pinned])
        else (callback as (e: null, a: string, f: number) => void)(null, pinned.address, pinned.family)
      },
      agent: false,
      timeout: options.timeoutMillis
    })
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${options.timeoutMillis} ms`)), options.timeoutMillis)
    request.on("response", (response) => {
      response.resume()
      response.on("end", () => clearTimeout(timer))
      clearTimeout(timer)
      resolve({ _tag: "Answered", status: response.statusCode ?? 0 })
      response.on("error", () => {})
    })
    request.on("timeout", () => request.destroy(new Error(`no answer within ${options.timeoutMillis} ms`)))
    request.on("error", (error) => {
      clearTimeout(timer)
      resolve({ _tag: "Failed", reason: (error as NodeJS.ErrnoException).code ?? error.message })
    })
    request.end(body)
  })
}
