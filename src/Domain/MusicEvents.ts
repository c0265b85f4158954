/**
 * The events of the video-to-music stream (interface 2.10), one JSON object per NDJSON line: the
 * contract's schemas, shared by the relay (Music/Events.ts), /openapi.json and the client.
 *
 * The interface fixes only the `title` event; the other known types are typed on the fields the
 * vendor is known to send and keep any further field as it came (index signature), so that
 * re-encoding never loses what the vendor said.
 */
import { Schema } from "effect"
import { titleFields } from "./Media.ts"
import { optionalField } from "./Schemas.ts"

/** Fields a known event may carry beyond the typed ones: kept as they came. */
const rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const event = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields, identifier: string) =>
  Schema.Struct({ type: Schema.Literal(type).annotations({ description: "Kind of event" }), ...fields }, rest)
    .annotations({ identifier })

/** Length of the video in seconds. */
export const DurationEvent = event("duration", {
  duration: optionalField(Schema.Number, "Length of the video in seconds")
}, "MusicDurationEvent")

export const MusicTitleEvent = event("title", titleFields, "MusicTitleEvent")

/** Several titles at once, each shaped like a `title` event without its `type`. */
export const TitlesEvent = event("titles", {
  titles: optionalField(Schema.Array(Schema.Struct(titleFields, rest)), "Titles, each shaped like a title event without its type")
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
  cost: optionalField(Schema.Number, "Cost of the generation"),
  currency: optionalField(Schema.String, "Currency of the cost")
}, "MusicCostEvent")

export const CompleteEvent = event("complete", {}, "MusicCompleteEvent")

/** A failure: the vendor's, or ours once the stream has started. */
export const ErrorEvent = event("error", {
  error: optionalField(Schema.String, "Code of the failure"),
  message: optionalField(Schema.String, "What went wrong")
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
