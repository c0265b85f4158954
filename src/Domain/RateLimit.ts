/**
 * The fields of draft-ietf-httpapi-ratelimit-headers (structured field lists), in the one form
 * every limit of the service answers with: the media proxy's quotas (Customers/Metering.ts) and
 * the anonymous reads' limit (Http/AnonymousLimit.ts).
 */

/** A limit as `RateLimit-Policy` states it. */
export interface RateLimitPolicy {
  /** The policy's name, quoted in both fields. */
  readonly name: string
  /** `q`: what the window allows. */
  readonly quota: number
  /** `qu`: what is counted. */
  readonly unit: "requests" | "content-bytes" | "concurrent-requests"
  /** `w`: the window in seconds; none for a limit that is not a window (tasks in flight). */
  readonly windowSeconds?: number | undefined
}

/** `RateLimit-Policy`: the policy (`q` quota, `qu` unit, `w` window in seconds). */
export const policyField = (policy: RateLimitPolicy) =>
  `"${policy.name}";q=${policy.quota};qu="${policy.unit}"${policy.windowSeconds === undefined ? "" : `;w=${policy.windowSeconds}`}`

/** `RateLimit`: what is left of the policy (`r` remaining, `t` whole seconds until there is room again). */
export const limitField = (policy: RateLimitPolicy, remaining: number, resetSeconds: number) =>
  `"${policy.name}";r=${Math.max(0, remaining)};t=${Math.max(0, Math.ceil(resetSeconds))}`

/** Both fields, as answer headers. */
export const rateLimitFields = (policy: RateLimitPolicy, remaining: number, resetSeconds: number) => ({
  "ratelimit-policy": policyField(policy),
  "ratelimit": limitField(policy, remaining, resetSeconds)
})
