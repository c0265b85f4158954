/**
 * Install counts are kept per clock hour (issue 12): an address installing a version counts once an
 * hour. A test that counts installs starts clear of an hour's end, so its installs fall in one hour
 * and its expectations do not depend on when CI happens to run it.
 */
import { Duration, Effect } from "effect"

/** Waits into the next hour when fewer than `seconds` are left of this one. */
export const clearOfHourEnd = (seconds: number) =>
  Effect.suspend(() => {
    const now = new Date()
    const left = 3600 - (now.getUTCMinutes() * 60 + now.getUTCSeconds())
    return left < seconds ? Effect.sleep(Duration.seconds(left + 1)) : Effect.void
  })
