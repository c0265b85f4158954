import { Schema } from "effect"
import { optional, Strings, Text } from "./Schemas.ts"

/** The result of starting or polling an image task (2.9). */
export const MediaTask = Schema.Struct({
  generated: optional(Strings),
  status: optional(Schema.String),
  task_id: optional(Schema.UUID)
}).annotations({ identifier: "MediaTask" })
export type MediaTask = typeof MediaTask.Type

/** The skin enhancer's answer (4.6) and every status poll: the task under `data`. */
export const MediaTaskEnvelope = Schema.Struct({ data: MediaTask }).annotations({ identifier: "MediaTaskEnvelope" })
export type MediaTaskEnvelope = typeof MediaTaskEnvelope.Type

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

// --- image requests (4.5, 4.6) -------------------------------------------------------------------

/** The longest image given inline: the JSON body limit (16 MiB) bounds it anyway. */
const maxImageChars = 16 * 1024 * 1024
const maxUrlChars = 2048

const isUrl = (s: string, protocols: ReadonlyArray<string>) => {
  if (s.length > maxUrlChars || !URL.canParse(s)) return false
  const url = new URL(s)
  return protocols.includes(url.protocol) && url.hostname !== ""
}

/** Base64 (standard or URL-safe alphabet, padded or not). */
const base64 = /^[A-Za-z0-9+/_-]+={0,2}$/
const isBase64 = (s: string) => base64.test(s) && s.replace(/=+$/, "").length % 4 !== 1
/** `data:image/png;base64,<base64>` */
const dataUrl = /^data:[a-z0-9.+-]+\/[a-z0-9.+-]+(?:;[a-z0-9.+-]+=[a-z0-9.+-]+)*;base64,(.+)$/i
const isDataUrl = (s: string) => {
  const m = dataUrl.exec(s)
  return m !== null && isBase64(m[1]!)
}

/** An image as the vendor takes it: base64 data, a data: URL, or a URL of one of `protocols`. */
const ImageSource = (protocols: ReadonlyArray<"http:" | "https:">, described: string) =>
  Schema.String.pipe(
    Schema.maxLength(maxImageChars),
    Schema.filter((s) => isBase64(s) || isDataUrl(s) || isUrl(s, protocols), {
      message: () => `expected base64 image data, a data: URL or ${described}`
    })
  ).annotations({ description: `Base64 image data, a data: URL, or ${described}` })

/** Base64 data or an http(s) URL (4.5). */
export const StyleImage = ImageSource(["http:", "https:"], "an http(s) URL")
/** Base64 data or a publicly accessible HTTPS URL (4.6). */
export const SkinImage = ImageSource(["https:"], "an https URL")

export const WebhookUrl = Schema.String.pipe(
  Schema.filter((s) => isUrl(s, ["http:", "https:"]), { message: () => `expected an http(s) URL of at most ${maxUrlChars} characters` })
).annotations({ jsonSchema: { type: "string", format: "uri" } })

/** 0 to 100 (section 8). */
export const Percent = Schema.Int.pipe(Schema.between(0, 100))

export const StyleTransferEngine = Schema.Literal(
  "balanced", "definio", "illusio", "3d_cartoon", "colorful_anime", "caricature", "real", "super_real", "softy"
)
export const StyleTransferFlavor = Schema.Literal(
  "faithful", "gen_z", "psychedelia", "detaily", "clear", "donotstyle", "donotstyle_sharp"
)
export const PortraitBeautifier = Schema.Literal("beautify_face", "beautify_face_max")
export const PortraitStyle = Schema.Literal("standard", "pop", "super_pop")

/** The longest prompt passed on. */
export const maxPromptChars = 2000

/** The body of POST /proxy/imagevendor/v1/ai/image-style-transfer (4.5). */
export const StyleTransferRequest = Schema.Struct({
  image: StyleImage,
  reference_image: StyleImage,
  engine: optional(StyleTransferEngine),
  fixed_generation: optional(Schema.Boolean),
  flavor: optional(StyleTransferFlavor),
  is_portrait: optional(Schema.Boolean),
  portrait_beautifier: optional(PortraitBeautifier),
  portrait_style: optional(PortraitStyle),
  prompt: optional(Text(maxPromptChars)),
  structure_strength: optional(Percent),
  style_strength: optional(Percent),
  webhook_url: optional(WebhookUrl)
}).annotations({ identifier: "StyleTransferRequest" })
export type StyleTransferRequest = typeof StyleTransferRequest.Type

/** The body of POST /proxy/imagevendor/v1/ai/skin-enhancer/creative (4.6); defaults applied on decoding. */
export const SkinEnhancerRequest = Schema.Struct({
  image: SkinImage,
  sharpen: Schema.optionalWith(Percent, { exact: true, default: () => 0 }),
  smart_grain: Schema.optionalWith(Percent, { exact: true, default: () => 2 }),
  webhook_url: optional(WebhookUrl)
}).annotations({ identifier: "SkinEnhancerRequest" })
export type SkinEnhancerRequest = typeof SkinEnhancerRequest.Type

/** `Idempotency-Key`: 1 to 255 printable ASCII characters. */
export const IdempotencyKey = Schema.String.pipe(
  Schema.pattern(/^[\x20-\x7e]{1,255}$/, { message: () => "expected 1 to 255 printable ASCII characters" })
)
