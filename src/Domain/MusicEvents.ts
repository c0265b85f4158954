/**
 * The events of the video-to-music stream (interface 2.10), one JSON object per NDJSON line: the
 * contract's schemas, shared by the relay (Music/Events.ts), /openapi.json and the client.
 *
 * The interface fixes only the `title` event; the other known types are typed on the fields the
 * vendor is known to send and keep any further field as it came (index signature), so that
 * re-encoding never loses what the vendor said.
 */
import { Schema } from "effect"
import { TitleEvent } from "./Media.ts"
import { optional, Strings } from "./Schemas.ts"

/** Fields a known event may carry beyond the typed ones: kept as they came. */
const rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const event = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields, identifier: string) =>
  Schema.Struct({ type: Schema.Literal(type), ...fields }, rest).annotations({ identifier })

/** Length of the video in seconds. */
export const DurationEvent = event("duration", { duration: optional(Schema.Number) }, "MusicDurationEvent")

export const MusicTitleEvent = event("title", TitleEvent.fields, "MusicTitleEvent")

/** Several titles at once, each shaped like a `title` event without its `type`. */
export const TitlesEvent = event("titles", {
  titles: optional(Schema.Array(Schema.Struct({
    title: optional(Schema.String),
    display_tags: optional(Strings),
    copy_index: optional(Schema.Int),
    prompt_index: optional(Schema.Int),
    stream_index: optional(Schema.Int)
  }, rest)))
}, "MusicTitlesEvent")

/** A piece of generated audio, base64 in `data`, for one stream. */
export const AudioChunkEvent = event("audio_chunk", {
  data: optional(Schema.String),
  copy_index: optional(Schema.Int),
  prompt_index: optional(Schema.Int),
  stream_index: optional(Schema.Int),
  chunk_index: optional(Schema.Int)
}, "MusicAudioChunkEvent")

/** What the generation cost. */
export const CostEvent = event("cost", {
  cost: optional(Schema.Number),
  currency: optional(Schema.String)
}, "MusicCostEvent")

export const CompleteEvent = event("complete", {}, "MusicCompleteEvent")

/** A failure: the vendor's, or ours once the stream has started. */
export const ErrorEvent = event("error", {
  error: optional(Schema.String),
  message: optional(Schema.String)
}, "MusicErrorEvent")

export const MusicEvent = Schema.Union(
  DurationEvent,
  MusicTitleEvent,
  TitlesEvent,
  AudioChunkEvent,
  CostEvent,
  CompleteEvent,
  ErrorEvent
).annotations({ identifier: "MusicEvent" })
export type MusicEvent = typeof MusicEvent.Type
