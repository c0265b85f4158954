/**
 * The events of the video-to-music stream (interface 2.10), one JSON object per NDJSON line: the
 * contract's schemas, shared by the relay (Music/Events.ts), /openapi.json and the client.
 *
 * The interface fixes only the `title` event; the other known types are typed on the fields the
 * vendor sends (as the host's music node reads them) and keep any further field as it came
 * (index signature), so that re-encoding never loses what the vendor said. The schemas describe
 * what is known, they do not filter: the relay passes an event that differs from its schema
 * unchanged.
 */
import { Schema } from "effect"
import { titleFields } from "./Media.ts"
import { field, optionalField } from "./Schemas.ts"

/** Fields a known event may carry beyond the typed ones: kept as they came. */
const rest = Schema.Record(Schema.String, Schema.Unknown)

const event = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields, identifier: string) =>
  Schema.StructWithRest(Schema.Struct({ type: field(Schema.Literal(type), "Kind of event"), ...fields }), [rest])
    .annotate({ identifier })

/** Length of the video, and so of the music, in seconds. */
export const DurationEvent = event("duration", {
  duration_sec: optionalField(Schema.Finite, "Length of the video, and of the music generated for it, in seconds")
}, "MusicDurationEvent")

export const MusicTitleEvent = event("title", titleFields, "MusicTitleEvent")

/**
 * The titles of all streams at once: the vendor sends plain strings (one per stream, in stream
 * order); objects shaped like a `title` event without its `type` are accepted as well.
 */
export const TitlesEvent = event("titles", {
  titles: optionalField(
    Schema.Array(Schema.Union([Schema.String, Schema.StructWithRest(Schema.Struct(titleFields), [rest])])),
    "Titles, one per stream in stream order: strings, or objects shaped like a title event without its type"
  )
}, "MusicTitlesEvent")

/** A piece of generated audio, base64 in `data`, for one stream. */
export const AudioChunkEvent = event("audio_chunk", {
  data: optionalField(Schema.String, "The audio of this chunk, base64"),
  copy_index: optionalField(Schema.Int, "Index of the copy the chunk belongs to"),
  prompt_index: optionalField(Schema.Int, "Index of the prompt the chunk belongs to"),
  stream_index: optionalField(Schema.Int, "Index of the audio stream the chunk belongs to"),
  chunk_index: optionalField(Schema.Int, "Position of the chunk in its stream")
}, "MusicAudioChunkEvent")

/** What the generation cost. */
export const CostEvent = event("cost", {
  cost: optionalField(Schema.Finite, "Cost of the generation"),
  currency: optionalField(Schema.String, "Currency of the cost")
}, "MusicCostEvent")

export const CompleteEvent = event("complete", {}, "MusicCompleteEvent")

/** A failure: the vendor's, or ours once the stream has started (the vendor's shape either way). */
export const ErrorEvent = event("error", {
  code: optionalField(Schema.String, "Code of the failure"),
  message: optionalField(Schema.String, "What went wrong")
}, "MusicErrorEvent")

export const MusicEvent = Schema.Union([
  DurationEvent,
  MusicTitleEvent,
  TitlesEvent,
  AudioChunkEvent,
  CostEvent,
  CompleteEvent,
  ErrorEvent
]).annotate({ identifier: "MusicEvent" })
export type MusicEvent = typeof MusicEvent.Type
