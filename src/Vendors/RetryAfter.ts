/** How long an upstream (a media vendor, the repository host) asks us to wait before asking again. */

/** When an upstream rate-limits without saying for how long. */
const defaultRetryAfterSeconds = 60

/**
 * Seconds to wait as the upstream said: `retry-after` (seconds or an HTTP date), else
 * `x-ratelimit-reset` (epoch seconds), else the default.
 */
export const retryAfterSeconds = (headers: Readonly<Record<string, string | undefined>>, nowMillis: number): number => {
  const retryAfter = headers["retry-after"]?.trim()
  if (retryAfter) {
    if (/^\d+(\.\d+)?$/.test(retryAfter)) return Math.ceil(Number(retryAfter))
    const date = Date.parse(retryAfter)
    if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - nowMillis) / 1000))
  }
  const reset = headers["x-ratelimit-reset"]?.trim()
  if (reset && /^\d+$/.test(reset)) return Math.max(0, Math.ceil(Number(reset) - nowMillis / 1000))
  return defaultRetryAfterSeconds
}
