/**
 * The events of the video-to-music stream (one JSON object per NDJSON line) and the relay that
 * carries them from the vendor to the caller: known types that match their schema are decoded
 * and re-encoded, every other event passes unchanged, and a stream that ends without `complete`
 * or the vendor's own `error` gets a final `error` event.
 * The events' schemas are the contract's, in Domain/MusicEvents.ts.
 *
 * The relay works on bytes: a line that is already a compact flat JSON object (every audio chunk
 * a vendor sends) is recognised by one scan and passes byte for byte, the lines of one piece of
 * the vendor's body as one slice of it; only the other lines are decoded, parsed and re-encoded.
 */
import { Array as Arr, Data, Duration, Effect, Option, Queue, Schema, Stream } from "effect"
import { MusicEvent } from "../Domain/MusicEvents.ts"
import { scavengeEvery } from "../Storage/Garbage.ts"

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
 * A vendor line that is already a compact, flat JSON object passes byte for byte; this scanner
 * recognises one without parsing it (JSON.parse, a schema decode and JSON.stringify per line were
 * most of the relay's cost). It accepts only what `JSON.stringify(JSON.parse(line))` prints
 * unchanged: no whitespace, ASCII strings without escapes or control bytes, distinct keys that V8 keeps
 * in order (no leading digit, no `__proto__`), integers of at most 15 digits (not `-0`),
 * `true`/`false`/`null`, no nesting, and a string `type`. Anything else takes the parsing path
 * (`relayLine`). Answers `notCompact`, `compact`, or `compactEnding` (a `complete` or `error`).
 */
const notCompact = 0
const compact = 1
const compactEnding = 2

const quote = 0x22
/** Where each key of the line being scanned starts and ends (a line with more keys is parsed). */
const keyBounds = new Int32Array(32)

/** Each byte's class inside a string: 0 plain ASCII, 1 the closing quote, 2 anything else. */
const stringBytes = new Uint8Array(256).fill(2)
for (let c = 0x20; c <= 0x7f; c++) stringBytes[c] = 0
stringBytes[quote] = 1
// an escape: JSON.stringify might print it otherwise (as it might a control or non-ASCII byte)
stringBytes[0x5c] = 2

/**
 * The bytes being scanned as 32-bit words from a 4-aligned offset, so that a string's plain
 * bytes (an audio chunk's base64) are passed four at a time: half the scan's time per line.
 * Made once per buffer, since the lines of a chunk of the vendor's body share it.
 */
const noWords = new Uint32Array(0)
let wordsOf: Uint8Array | undefined
let words: Uint32Array<ArrayBufferLike> = noWords
let wordBase = 0

/** Lets go of the last buffer scanned (a joined line may be megabytes), once its lines are done. */
const releaseWords = () => {
  wordsOf = undefined
  words = noWords
}

const viewWords = (b: Uint8Array) => {
  if (b === wordsOf) return
  wordsOf = b
  wordBase = b.byteOffset & 3
  words = new Uint32Array(b.buffer, b.byteOffset - wordBase, (b.length + wordBase) >>> 2)
}

/**
 * Whether a word holds a byte that is not plain inside a string: under 0x20 or over 0x7f, a
 * quote or a backslash (the classic tests for a byte less than n, and for a zero byte).
 */
const special = (x: number) => {
  const q = x ^ 0x22222222
  const e = x ^ 0x5c5c5c5c
  return (((x - 0x20202020) & ~x) | x | ((q - 0x01010101) & ~q) | ((e - 0x01010101) & ~e)) & 0x80808080
}

/** The index of the quote closing the string whose first byte is at `from`, or -1. */
const stringEnd = (b: Uint8Array, from: number, end: number) => {
  let i = from
  while (i < end && ((i + wordBase) & 3) !== 0 && stringBytes[b[i]!] === 0) i++
  if (((i + wordBase) & 3) === 0) {
    let w = (i + wordBase) >>> 2
    const last = (end + wordBase) >>> 2
    while (w < last && special(words[w]!) === 0) w++
    i = w * 4 - wordBase
  }
  while (i < end && stringBytes[b[i]!] === 0) i++
  return i < end && b[i] === quote ? i : -1
}

const sameBytes = (b: Uint8Array, s1: number, e1: number, s2: number, e2: number) => {
  if (e1 - s1 !== e2 - s2) return false
  for (let i = 0; i < e1 - s1; i++) if (b[s1 + i] !== b[s2 + i]) return false
  return true
}

const isWord = (b: Uint8Array, at: number, end: number, word: string) => {
  if (end - at < word.length) return false
  for (let i = 0; i < word.length; i++) if (b[at + i] !== word.charCodeAt(i)) return false
  return true
}

export const scanCompact = (b: Uint8Array, start: number, end: number): number => {
  if (end - start < 2 || b[start] !== 0x7b || b[end - 1] !== 0x7d) return notCompact
  viewWords(b)
  let i = start + 1
  let keys = 0
  let typed = notCompact
  for (;;) {
    if (b[i] !== quote) return notCompact
    const keyStart = i + 1
    const keyEnd = stringEnd(b, keyStart, end)
    if (keyEnd < 0 || keys === keyBounds.length / 2) return notCompact
    const first = b[keyStart]!
    if ((first >= 0x30 && first <= 0x39) || (keyEnd - keyStart === 9 && isWord(b, keyStart, keyEnd, "__proto__"))) return notCompact
    for (let k = 0; k < keys; k++) {
      if (sameBytes(b, keyBounds[2 * k]!, keyBounds[2 * k + 1]!, keyStart, keyEnd)) return notCompact
    }
    keyBounds[2 * keys] = keyStart
    keyBounds[2 * keys + 1] = keyEnd
    keys++
    const isType = keyEnd - keyStart === 4 && isWord(b, keyStart, keyEnd, "type")
    i = keyEnd + 1
    if (b[i] !== 0x3a) return notCompact
    i++
    const c = b[i]
    if (c === quote) {
      const valueEnd = stringEnd(b, i + 1, end)
      if (valueEnd < 0) return notCompact
      if (isType) {
        typed = isWord(b, i, valueEnd + 1, "\"complete\"") && valueEnd - i === 9 ||
            isWord(b, i, valueEnd + 1, "\"error\"") && valueEnd - i === 6
          ? compactEnding
          : compact
      }
      i = valueEnd + 1
    } else if (isType) {
      // a `type` that is not a string: the parsing path drops the line, with its warning
      return notCompact
    } else if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
      const negative = c === 0x2d
      if (negative) i++
      const digitsStart = i
      if (b[i] === 0x30) i++
      else while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) i++
      const digits = i - digitsStart
      if (digits === 0 || digits > 15 || (negative && b[digitsStart] === 0x30)) return notCompact
    } else if (isWord(b, i, end, "true")) i += 4
    else if (isWord(b, i, end, "null")) i += 4
    else if (isWord(b, i, end, "false")) i += 5
    else return notCompact
    const next = b[i]
    if (next === 0x2c) {
      i++
      continue
    }
    return next === 0x7d && i === end - 1 ? typed : notCompact
  }
}

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

const newlineBytes = new Uint8Array([newline])
const encoder = new TextEncoder()

/**
 * The vendor's NDJSON body as the bytes we send, whole lines each ending in `\n`: relayed a
 * chunk of the vendor's bytes at a time. A failure of the vendor stream, or its end, without the
 * vendor's `complete` or `error` becomes a final `error` event of ours; after either, a broken
 * tail is only logged. Lines are as `relayLine` makes them, except that a compact line
 * (`scanCompact`) passes as it came, without being parsed.
 */
export const relayBytes = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  onFailure: (e: E | StreamBroken) => Effect.Effect<{ readonly code: string; readonly message: string }>
): Stream.Stream<Uint8Array, never, R> =>
  Stream.suspend(() => {
    let ended = false
    let failed = false
    const decoder = new TextDecoder()
    // the start of a line whose end has not arrived yet
    let pending: Array<Uint8Array> = []
    let pendingBytes = 0
    // the vendor's buffers die once written to the caller: scavenges free them (Storage/Garbage.ts)
    const scavenge = scavengeEvery()

    /** Relays the lines in `chunk` (and the pending line they end), appending to `out`. */
    const relayChunk = (chunk: Uint8Array, out: Array<Uint8Array>, warnings: Array<string>, last: boolean) => {
      // consecutive compact lines of `chunk` go on as one slice of it: [runStart, runEnd)
      let runStart = -1
      let runEnd = -1
      const flush = () => {
        if (runStart >= 0) out.push(chunk.subarray(runStart, runEnd))
        runStart = -1
      }
      /** The line of `bytes` from `start` to its `\n` at `end` (or the body's end). */
      const line = (bytes: Uint8Array, start: number, end: number) => {
        const contentEnd = end > start && bytes[end - 1] === 0x0d ? end - 1 : end
        const kind = contentEnd > start ? scanCompact(bytes, start, contentEnd) : notCompact
        if (kind !== notCompact) {
          if (kind === compactEnding) ended = true
          if (bytes === chunk && contentEnd === end && end < chunk.length) {
            if (runStart < 0) runStart = start
            runEnd = end + 1
            return
          }
          flush()
          out.push(bytes.subarray(start, contentEnd), newlineBytes)
          return
        }
        flush()
        if (contentEnd === start) return // a blank line: the vendor's keep-alive
        const relayed = relayLine(decoder.decode(bytes.subarray(start, contentEnd)))
        if (relayed.ended) ended = true
        if (relayed.line !== undefined) out.push(encoder.encode(`${relayed.line}\n`))
        if (relayed.warning !== undefined) warnings.push(relayed.warning)
      }
      let start = 0
      for (let at = chunk.indexOf(newline); at >= 0; at = chunk.indexOf(newline, start)) {
        if (pending.length === 0) line(chunk, start, at)
        else {
          const joined = Buffer.concat([...pending, chunk.subarray(0, at)])
          pending = []
          pendingBytes = 0
          line(joined, 0, joined.length)
        }
        start = at + 1
      }
      flush()
      if (start < chunk.length) {
        pending.push(chunk.subarray(start))
        pendingBytes += chunk.length - start
      }
      if (last && pendingBytes > 0) {
        const joined = Buffer.concat(pending)
        pending = []
        pendingBytes = 0
        line(joined, 0, joined.length)
      }
    }

    const relayed = (chunk: Uint8Array, last: boolean): Effect.Effect<ReadonlyArray<Uint8Array>, StreamBroken> => {
      const out: Array<Uint8Array> = []
      const warnings: Array<string> = []
      scavenge(chunk.length)
      relayChunk(chunk, out, warnings, last)
      releaseWords()
      if (pendingBytes > maxLineBytes) {
        return Effect.fail(new StreamBroken({ code: "upstream_error", message: "The music vendor sent an overlong line" }))
      }
      return warnings.length === 0
        ? Effect.succeed(out)
        : Effect.as(Effect.forEach(warnings, (w) => Effect.logWarning(w), { discard: true }), out)
    }

    return body.pipe(
      Stream.mapEffect((chunk) => relayed(chunk, false)),
      // a last line without its `\n` still counts
      Stream.concat(Stream.fromEffect(Effect.suspend(() => relayed(new Uint8Array(0), true)))),
      Stream.filter(Arr.isReadonlyArrayNonEmpty<Uint8Array>),
      Stream.flattenArray,
      Stream.catch((e: E | StreamBroken) => {
        failed = true
        // after `complete` or the vendor's `error` the caller knows how it ended: one outcome only
        return Stream.unwrap(Effect.map(onFailure(e), ({ code, message }) =>
          ended ? Stream.empty : Stream.make(encoder.encode(`${errorLine(code, message)}\n`))))
      }),
      Stream.concat(Stream.suspend(() =>
        ended || failed
          ? Stream.empty
          : Stream.make(encoder.encode(`${errorLine("stream_incomplete", "The music vendor ended the stream before it was complete")}\n`))
      ))
    )
  })

/**
 * The answer's body for a vendor's NDJSON `body`: `relayBytes`, with a blank line after
 * `keepAliveMillis` of silence (`withKeepAlive`), each chunk of lines written at once.
 */
export const relayAnswer = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  onFailure: (e: E | StreamBroken) => Effect.Effect<{ readonly code: string; readonly message: string }>,
  keepAliveMillis: number
): Stream.Stream<Uint8Array, never, R> => withKeepAlive(relayBytes(body, onFailure), keepAliveMillis, newlineBytes)

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
