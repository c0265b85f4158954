/**
 * Scavenges for code that moves large bodies through buffers it drops at once (object storage
 * uploads, the music proxy's upload and relay).
 *
 * A scavenge is a collection of the young generation only, a millisecond or two, available when
 * node runs with `--expose-gc`, as `npm start` does; without it these do nothing. A body arrives
 * as a new buffer per socket or file read, dead once passed on, but V8 frees a buffer's memory
 * only when it collects the buffer, and the small objects a transfer allocates fill the young
 * generation too slowly for that to happen often. Meanwhile the dead buffers' memory counted
 * against the heap's limit, which V8 met with full collections of the whole heap: 4 to 6 per
 * 100 MiB of object storage upload, half of the service's CPU per upload (bench/README.md,
 * "Object storage: upload and download"), and one per 20-40 MiB through the music proxy.
 */
export const collectYoungGarbage: () => void = typeof globalThis.gc === "function"
  ? () => globalThis.gc!({ type: "minor" })
  : () => {}

/** Bytes between two scavenges of `scavengeEvery`: a few buffers' worth, far under what starts a full collection. */
export const scavengeIntervalBytes = 8 * 1024 * 1024

/**
 * A counter of the bytes a transfer moved that asks for a scavenge each `intervalBytes`: call the
 * function it returns with each piece's length.
 */
export const scavengeEvery = (intervalBytes: number = scavengeIntervalBytes) => {
  let since = 0
  return (bytes: number) => {
    since += bytes
    if (since >= intervalBytes) {
      since = 0
      collectYoungGarbage()
    }
  }
}
