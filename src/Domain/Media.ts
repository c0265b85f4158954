import { Schema } from "effect"
import { optional, Strings } from "./Schemas.ts"

/** The result of starting or polling an image task (2.9). */
export const MediaTask = Schema.Struct({
  generated: optional(Strings),
  status: optional(Schema.String),
  task_id: optional(Schema.UUID)
}).annotations({ identifier: "MediaTask" })
export type MediaTask = typeof MediaTask.Type

/** Statuses of CONTRACT.md; CREATED is what starting a task answers. */
export const MediaTaskStatus = Schema.Literal("CREATED", "IN_PROGRESS", "COMPLETED", "FAILED")
export type MediaTaskStatus = typeof MediaTaskStatus.Type

/** The `title` event of the video-to-music stream (2.10). */
export const TitleEvent = Schema.Struct({
  type: Schema.Literal("title"),
  title: optional(Schema.String),
  display_tags: optional(Strings),
  copy_index: optional(Schema.Int),
  prompt_index: optional(Schema.Int),
  stream_index: optional(Schema.Int)
}).annotations({ identifier: "TitleEvent" })
export type TitleEvent = typeof TitleEvent.Type
