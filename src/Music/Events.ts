/**
 * The events of the video-to-music stream (one JSON object per NDJSON line) and the relay that
 * carries them from the vendor to the caller: known types that match their schema are decoded
 * and re-encoded, every other event passes unchanged, and a stream that ends without `complete`
 * or the vendor's own `error` gets a final `error` event.
 * The events' schemas are the contract's, in Domain/MusicEvents.ts.
 */
import { Array as Arr, Data, Duration, Effect, Option, Queue, Schema, Stream } from "effect"
import { MusicEvent } from "../Domain/MusicEvents.ts"

/**
 * The known events' decoder: the union picks the one member its `type` names (a union of
 * literal-tagged members is indexed by the tag), so an event is decoded once, by its own schema.
 * The events' fields have no transformations (their encoded form is their decoded form), so a
 * decoded event is re-encoded by JSON itself; running the schema's encoder as well would double
 * the relay's cost per event for nothing.
 */
const decodeEvent = Schema.decodeUnknownOption(MusicEvent)

/** Our own `error` event, ending a stream whose status line has been sent: the vendor's shape. */
export const errorLine = (code: string, message: string) => JSON.stringify({ type: "error", code, message })

/** The longest line the relay accepts from the vendor (an audio chunk is far smaller). */
export const maxLineBytes = 16 * 1024 * 1024

/** The vendor's stream failed or broke its own framing after the status line was sent. */
export class StreamBroken extends Data.TaggedError("StreamBroken")<{ readonly code: string; readonly message: string }> {}

const newline = 0x0a

/**
 * Splits bytes into lines (without `\n` and a trailing `\r`) with no copy of the bytes beyond
 * the pending partial line; a line longer than `maxLineBytes` fails the stream.
 */
export const splitLines = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<string, E | StreamBroken, R> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder()
    let pending: Array<Uint8Array> = []
    let pendingBytes = 0
    const take = (last: Uint8Array) => {
      const line = pending.length === 0 ? last : Buffer.concat([...pending, last])
      pending = []
      pendingBytes = 0
      const text = decoder.decode(line)
      return text.endsWith("\r") ? text.slice(0, -1) : text
    }
    return bytes.pipe(
      Stream.mapEffect((chunk): Effect.Effect<ReadonlyArray<string>, StreamBroken> => {
        const lines: Array<string> = []
        let start = 0
        for (let at = chunk.indexOf(newline); at >= 0; at = chunk.indexOf(newline, start)) {
          lines.push(take(chunk.subarray(start, at)))
          start = at + 1
        }
        if (start < chunk.length) {
          pending.push(chunk.subarray(start))
          pendingBytes += chunk.length - start
          if (pendingBytes > maxLineBytes) {
            return Effect.fail(new StreamBroken({ code: "upstream_error", message: "The music vendor sent an overlong line" }))
          }
        }
        return Effect.succeed(lines)
      }),
      // the lines of one piece of the body stay one chunk downstream
      Stream.filter(Arr.isReadonlyArrayNonEmpty<string>),
      Stream.flattenArray,
      Stream.concat(Stream.suspend(() => pendingBytes > 0 ? Stream.make(take(new Uint8Array(0))) : Stream.empty))
    )
  })

/**
 * What one vendor line becomes: a line to relay or nothing, whether it ended the generation (the
 * vendor's `complete` or `error`: after either we add no error of ours), what to warn about.
 */
export interface Relayed {
  readonly line: string | undefined
  readonly ended: boolean
  readonly warning?: string
}

const dropped = (warning?: string): Relayed => ({ line: undefined, ended: false, ...(warning === undefined ? {} : { warning }) })

/** The types after which the vendor says nothing more about the generation. */
const endingTypes: ReadonlySet<string> = new Set(["complete", "error"])

/**
 * One vendor line as we relay it. Blank lines (the vendor's keep-alives) are dropped, and so are
 * lines that are not a JSON object with a string `type` (with a warning). A known event that
 * matches its schema is re-encoded; any other event, of a known type or not, passes unchanged:
 * the vendor's shapes are the authority (a client reads fields we may not know of), so the relay
 * never drops an event for differing from what we expected.
 */
export const relayLine = (line: string): Relayed => {
  if (line.trim() === "") return dropped()
  let parsed: unknown
  try {
    parsed = JSON.parse(line)
  } catch {
    return dropped(`dropped a music vendor line that is not JSON (${line.length} chars)`)
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed) || typeof (parsed as { type?: unknown }).type !== "string") {
    return dropped("dropped a music vendor line that is not an event object with a string type")
  }
  const type = (parsed as { type: string }).type
  const ended = endingTypes.has(type)
  const decoded = decodeEvent(parsed)
  return { line: Option.match(decoded, { onNone: () => line.trim(), onSome: (event) => JSON.stringify(event) }), ended }
}

/**
 * The vendor's NDJSON body as the lines we send: relayed event by event (a chunk of the vendor's
 * bytes at a time). A failure of the vendor stream, or its end, without the vendor's `complete`
 * or `error` becomes a final `error` event of ours; after either, a broken tail is only logged.
 */
export const relayEvents = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  onFailure: (e: E | StreamBroken) => Effect.Effect<{ readonly code: string; readonly message: string }>
): Stream.Stream<string, never, R> =>
  Stream.suspend(() => {
    let ended = false
    let failed = false
    return splitLines(body).pipe(
      Stream.chunks,
      Stream.mapEffect((lines): Effect.Effect<ReadonlyArray<string>> => {
        const out: Array<string> = []
        const warnings: Array<string> = []
        for (const line of lines) {
          const relayed = relayLine(line)
          if (relayed.ended) ended = true
          if (relayed.line !== undefined) out.push(relayed.line)
          if (relayed.warning !== undefined) warnings.push(relayed.warning)
        }
        return Effect.as(Effect.forEach(warnings, (w) => Effect.logWarning(w), { discard: true }), out)
      }),
      Stream.filter(Arr.isReadonlyArrayNonEmpty<string>),
      Stream.flattenArray,
      Stream.catch((e) => {
        failed = true
        // after `complete` or the vendor's `error` the caller knows how it ended: one outcome only
        return Stream.unwrap(Effect.map(onFailure(e), ({ code, message }) =>
          ended ? Stream.empty : Stream.make(errorLine(code, message))))
      }),
      Stream.concat(Stream.suspend(() =>
        ended || failed
          ? Stream.empty
          : Stream.make(errorLine("stream_incomplete", "The music vendor ended the stream before it was complete"))
      ))
    )
  })

/**
 * `keepAlive` whenever `stream` has been silent for `millis`, so that proxies and clients do not
 * take a slow generation for a dead connection. The stream is read ahead by at most a few chunks,
 * and passes on in the chunks it came in.
 */
export const withKeepAlive = <A, E, R>(stream: Stream.Stream<A, E, R>, millis: number, keepAlive: A): Stream.Stream<A, E, R> =>
  Stream.unwrap(Effect.map(Stream.toQueue(Stream.chunks(stream), { capacity: 4 }), (queue) =>
    // the queue's end (or the stream's failure) ends the pull, and so this stream, alike
    Stream.fromPull(Effect.succeed(
      Queue.take(queue).pipe(
        Effect.timeoutOrElse({ duration: Duration.millis(millis), orElse: () => Effect.succeed(Arr.of(keepAlive)) })
      )
    ))))
