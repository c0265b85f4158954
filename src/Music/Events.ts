/**
 * The events of the video-to-music stream (one JSON object per NDJSON line) and the relay that
 * carries them from the vendor to the caller: known types are decoded and re-encoded, unknown
 * types pass unchanged, a stream that ends without `complete` gets a final `error` event.
 * The events' schemas are the contract's, in Domain/MusicEvents.ts.
 */
import { Chunk, Data, Duration, Effect, Option, Queue, Schema, Stream, Take } from "effect"
import {
  AudioChunkEvent,
  CompleteEvent,
  CostEvent,
  DurationEvent,
  ErrorEvent,
  type MusicEvent,
  MusicTitleEvent,
  TitlesEvent
} from "../Domain/MusicEvents.ts"

/**
 * Each known type's own decoder, picked by `type`. The events' fields have no transformations
 * (their encoded form is their decoded form), so a decoded event is re-encoded by JSON itself;
 * running the schema's encoder as well would double the relay's cost per event for nothing.
 */
const decoders = new Map<string, (u: unknown) => Option.Option<MusicEvent>>(
  [DurationEvent, MusicTitleEvent, TitlesEvent, AudioChunkEvent, CostEvent, CompleteEvent, ErrorEvent].map((schema) =>
    [schema.fields.type.literals[0], Schema.decodeUnknownOption(schema as Schema.Schema<MusicEvent>)] as const
  )
)

/** Our own `error` event, ending a stream whose status line has been sent. */
export const errorLine = (error: string, message: string) => JSON.stringify({ type: "error", error, message })

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
      Stream.mapConcatEffect((chunk) => {
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
      Stream.concat(Stream.suspend(() => pendingBytes > 0 ? Stream.make(take(new Uint8Array(0))) : Stream.empty))
    )
  })

/** What one vendor line becomes: a line to relay or nothing, whether it completed, what to warn about. */
export interface Relayed {
  readonly line: string | undefined
  readonly complete: boolean
  readonly warning?: string
}

const dropped = (warning?: string): Relayed => ({ line: undefined, complete: false, ...(warning === undefined ? {} : { warning }) })

/**
 * One vendor line as we relay it. Blank lines (the vendor's keep-alives) are dropped; lines that
 * are not a JSON object with a string `type`, and known events that do not match their schema,
 * are dropped with a warning; unknown types pass unchanged.
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
  const decode = decoders.get(type)
  if (decode === undefined) return { line: line.trim(), complete: false }
  const decoded = decode(parsed)
  return Option.isNone(decoded)
    ? dropped(`dropped a music vendor '${type}' event that does not match its schema`)
    : { line: JSON.stringify(decoded.value), complete: type === "complete" }
}

/**
 * The vendor's NDJSON body as the lines we send: relayed event by event (a chunk of the vendor's
 * bytes at a time); a failure of the vendor stream, or its end without `complete`, becomes a
 * final `error` event and the end.
 */
export const relayEvents = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  onFailure: (e: E | StreamBroken) => Effect.Effect<{ readonly code: string; readonly message: string }>
): Stream.Stream<string, never, R> =>
  Stream.suspend(() => {
    let complete = false
    let failed = false
    return splitLines(body).pipe(
      Stream.mapChunksEffect((lines) => {
        const out: Array<string> = []
        const warnings: Array<string> = []
        for (const line of lines) {
          const relayed = relayLine(line)
          if (relayed.complete) complete = true
          if (relayed.line !== undefined) out.push(relayed.line)
          if (relayed.warning !== undefined) warnings.push(relayed.warning)
        }
        return Effect.as(Effect.forEach(warnings, (w) => Effect.logWarning(w), { discard: true }), Chunk.unsafeFromArray(out))
      }),
      Stream.catchAll((e) => {
        failed = true
        // after `complete` the caller has everything: a broken tail is only worth the log line
        return Stream.unwrap(Effect.map(onFailure(e), ({ code, message }) =>
          complete ? Stream.empty : Stream.make(errorLine(code, message))))
      }),
      Stream.concat(Stream.suspend(() =>
        complete || failed
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
  Stream.unwrapScoped(Effect.map(Stream.toQueue(stream, { capacity: 4 }), (queue) =>
    Stream.repeatEffectChunkOption(
      Queue.take(queue).pipe(
        Effect.timeoutTo({
          duration: Duration.millis(millis),
          onSuccess: Take.done,
          onTimeout: (): Effect.Effect<Chunk.Chunk<A>, Option.Option<E>> => Effect.succeed(Chunk.of(keepAlive))
        }),
        Effect.flatten
      )
    )))
