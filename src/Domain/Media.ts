import { Effect, Option, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { documentedAs, field, ignoringUnknownFields, optional, optionalField, refusingUnknownFields, Strings, Text, Uuid, withExamples } from "./Schemas.ts"

/** Statuses of CONTRACT.md; CREATED is what starting a task answers. */
export const MediaTaskStatus = Schema.Literals(["CREATED", "IN_PROGRESS", "COMPLETED", "FAILED"])
  .annotate({ identifier: "MediaTaskStatus" })
export type MediaTaskStatus = typeof MediaTaskStatus.Type

/** The two kinds of image task, named as the paths that poll them name them. */
export const ImageTaskKind = Schema.Literals(["image-style-transfer", "skin-enhancer"])
export type ImageTaskKind = typeof ImageTaskKind.Type

/** The skin enhancer's modes: each starts at a path of its own. */
export type SkinEnhancerMode = "creative" | "faithful" | "flexible"

/** What starts an image task, named as its path under `/v1/ai/` names it. */
export type ImageOperation = "image-style-transfer" | `skin-enhancer/${SkinEnhancerMode}`

/** The kind of task an operation starts: the vendor polls every skin enhancer mode at `skin-enhancer/{task_id}`. */
export const taskKindOf = (operation: ImageOperation): ImageTaskKind =>
  operation === "image-style-transfer" ? operation : "skin-enhancer"

/** The statuses a task never leaves. */
export const terminalStatuses: ReadonlyArray<MediaTaskStatus> = ["COMPLETED", "FAILED"]

const mediaTaskFields = {
  generated: field(Strings, "Generated outputs: URLs of the images the task produced"),
  status: field(MediaTaskStatus, "Status of the task"),
  task_id: field(Uuid, "Identifier of the task")
}

/** The document's example of a task. */
const mediaTaskExample: Schema.Struct.Encoded<typeof mediaTaskFields> = {
  generated: ["https://cdn.imagevendor.example.com/results/3f9a6c2e-5b1d-4e7a-9c8b-2d4e6f8a0b1c/0.png"],
  status: "COMPLETED",
  task_id: "3f9a6c2e-5b1d-4e7a-9c8b-2d4e6f8a0b1c"
}

/** The side of the simulated image vendor's square PNGs, in pixels. */
export const simulatedImageSize = 256

/** The result of starting or polling an image task (2.9). */
export class MediaTask extends Schema.Class<MediaTask>("MediaTask")(withExamples(mediaTaskFields, mediaTaskExample)) {}

/** The skin enhancer's answer (4.6) and every status poll: the task under `data`. */
export class MediaTaskEnvelope extends Schema.Class<MediaTaskEnvelope>("MediaTaskEnvelope")({
  data: field(MediaTask, "The task")
}) {}

/** What a title of the video-to-music stream says (2.10): the `title` event is in MusicEvents.ts. */
export const titleFields = {
  title: optionalField(Schema.String, "Title of the generated music"),
  display_tags: optionalField(Strings, "Tags to show with the title"),
  copy_index: optionalField(Schema.Int, "Index of the copy the title belongs to"),
  prompt_index: optionalField(Schema.Int, "Index of the prompt the title belongs to"),
  stream_index: optionalField(Schema.Int, "Index of the audio stream the title belongs to")
}

// --- image requests (4.5, 4.6) -------------------------------------------------------------------

/** The longest image given inline: the JSON body limit (16 MiB) bounds it anyway. */
const maxImageChars = 16 * 1024 * 1024
/** The longest image or webhook URL passed on. */
const maxUrlChars = 2048
/** The longest video URL passed on. */
export const maxVideoUrlChars = 8192

/** `s` is a URL of one of `protocols`, with a host, of at most `maxChars` characters. */
const isUrl = (s: string, protocols: ReadonlyArray<string>, maxChars = maxUrlChars) => {
  if (s.length > maxChars || !URL.canParse(s)) return false
  const url = new URL(s)
  return protocols.includes(url.protocol) && url.hostname !== ""
}

/** The characters of base64, standard or URL-safe alphabet. */
const base64Chars = new Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-".split("").map((c) => c.charCodeAt(0)))

/**
 * Base64 (standard or URL-safe alphabet, padded or not), checked in one pass without a regular
 * expression: images run to megabytes, and a regex over them can exhaust the stack.
 */
const isBase64 = (s: string) => {
  const data = s.endsWith("==") ? s.slice(0, -2) : s.endsWith("=") ? s.slice(0, -1) : s
  if (data.length === 0 || data.length % 4 === 1) return false
  for (let i = 0; i < data.length; i++) {
    if (!base64Chars.has(data.charCodeAt(i))) return false
  }
  return true
}

/** The head of a data: URL, up to its comma: `data:image/png;base64,` (parameters allowed). */
const dataUrlHead = /^data:[a-z0-9.+-]+\/[a-z0-9.+-]+(?:;[a-z0-9.+-]+=[a-z0-9.+-]+)*;base64,$/i
/** The longest head read: a media type and a few parameters. */
const maxDataUrlHead = 256

/** `data:image/png;base64,<base64>`: the short head by a regex, the data by `isBase64`. */
const isDataUrl = (s: string) => {
  const comma = s.slice(0, maxDataUrlHead).indexOf(",")
  return comma > 0 && dataUrlHead.test(s.slice(0, comma + 1)) && isBase64(s.slice(comma + 1))
}

/** What an image field that refuses a value says: the accepted forms, `described` naming its URLs. */
const imageRefusal = (described: string) => `expected base64 image data, a data: URL or ${described}`

/**
 * An image as the vendor takes it: base64 data, a data: URL, a URL of one of `protocols`, or one
 * that `alsoUrl` lets through (for the handler to check further).
 */
const ImageSource = (protocols: ReadonlyArray<"http:" | "https:">, described: string, alsoUrl: (s: string) => boolean = () => false) =>
  Schema.String.check(
    Schema.isMaxLength(maxImageChars),
    Schema.makeFilter((s: string) => isBase64(s) || isDataUrl(s) || isUrl(s, protocols) || alsoUrl(s), {
      message: imageRefusal(described)
    })
  ).annotate({ description: `Base64 image data, a data: URL, or ${described}` })

/** The path of a media file's URL (MediaStorage): `.../media/{token}/{fileName}`, under any base path. */
const mediaFilePath = /\/media\/[^/]+\/[^/]+$/

/**
 * A plain-http URL of the shape of a media file's: maybe this service's own, which the skin
 * enhancer takes whatever its scheme (a demo's PUBLIC_BASE_URL is plain http). The handler keeps
 * only those under PUBLIC_BASE_URL (`isOwnMediaUrl`) and refuses the rest as the schema would.
 */
const mayBeOwnMediaUrl = (s: string) => isUrl(s, ["http:"]) && mediaFilePath.test(new URL(s).pathname)

/** `url` is a media file of the service at `publicBaseUrl` (its download URL, as MediaStorage hands it out). */
export const isOwnMediaUrl = (url: string, publicBaseUrl: string) =>
  url.startsWith(`${publicBaseUrl}/media/`) && isUrl(url, ["http:", "https:"]) && mediaFilePath.test(new URL(url).pathname)

/** The skin enhancer's refusal of an image, as its schema words it: a handler refusing one says the same. */
export const skinImageRefusal = imageRefusal("an https URL")

/** Base64 data or an http(s) URL (4.5). */
export const StyleImage = ImageSource(["http:", "https:"], "an http(s) URL")
/**
 * Base64 data or a publicly accessible HTTPS URL (4.6), or a media file of this service's whatever
 * its scheme: the host's nodes upload the image to the media storage first and send its URL.
 */
export const SkinImage = ImageSource(["https:"], "an https URL", mayBeOwnMediaUrl).check(
  documentedAs({
    description:
      "Image to enhance: base64 image data, a data: URL, a publicly accessible https URL, or the download_url of a media file of this service (POST /customers/storage), whatever its scheme"
  })
)

/** Described here: what `documentedAs` says replaces the document's, a field's description included. */
export const WebhookUrl = Schema.String.check(
  Schema.makeFilter((s: string) => isUrl(s, ["http:", "https:"]), {
    message: `expected an http(s) URL of at most ${maxUrlChars} characters`
  }),
  documentedAs({ type: "string", format: "uri", description: "URL called back for asynchronous notification of the task" })
)

/** 0 to 100 (section 8). */
export const Percent = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100 }))

export const StyleTransferEngine = Schema.Literals([
  "balanced", "definio", "illusio", "3d_cartoon", "colorful_anime", "caricature", "real", "super_real", "softy"
])
export const StyleTransferFlavor = Schema.Literals([
  "faithful", "gen_z", "psychedelia", "detaily", "clear", "donotstyle", "donotstyle_sharp"
])
export const PortraitBeautifier = Schema.Literals(["beautify_face", "beautify_face_max"])
export const PortraitStyle = Schema.Literals(["standard", "pop", "super_pop"])

/** The longest prompt passed on, to either vendor. */
export const maxPromptChars = 2000

/** The body of POST /proxy/imagevendor/v1/ai/image-style-transfer (4.5). */
export const StyleTransferRequest = refusingUnknownFields(Schema.Struct({
  image: field(StyleImage, "Image to transform: base64 image data, a data: URL, or an http(s) URL"),
  reference_image: field(StyleImage, "Style reference image: base64 image data, a data: URL, or an http(s) URL"),
  engine: optionalField(StyleTransferEngine, "Engine preset"),
  fixed_generation: optionalField(Schema.Boolean, "When enabled, the same settings give the same image"),
  flavor: optionalField(StyleTransferFlavor, "Flavor of the style"),
  is_portrait: optionalField(Schema.Boolean, "Whether to process the image as a portrait"),
  portrait_beautifier: optionalField(PortraitBeautifier, "Face beautifier; used only when is_portrait is true"),
  portrait_style: optionalField(PortraitStyle, "Portrait style; used only when is_portrait is true"),
  prompt: optionalField(Text(maxPromptChars), `Prompt for the model (at most ${maxPromptChars} characters)`),
  structure_strength: optionalField(Percent, "How much of the original's structure to keep, 0 to 100"),
  style_strength: optionalField(Percent, "Percentage of style strength, 0 to 100"),
  webhook_url: optional(WebhookUrl)
})).annotate({ identifier: "StyleTransferRequest" })
export type StyleTransferRequest = typeof StyleTransferRequest.Type

/** The targets of the skin enhancer's flexible mode. */
export const SkinOptimizedFor = Schema.Literals([
  "enhance_skin", "improve_lighting", "enhance_everything", "transform_to_real", "no_make_up"
])

/** What the skin enhancer is sent for the fields a request leaves out: section 8's, and the sibling modes' as the host's API nodes default them. */
export const skinEnhancerDefaults = { sharpen: 0, smart_grain: 2, skin_detail: 80, optimized_for: "enhance_skin" } as const

/**
 * The fields every skin enhancer mode takes. The defaults are the handler's to apply
 * (`skinEnhancerDefaults`): applied while decoding, they would make the fields required in the
 * derived client's (decoded) request type.
 */
const skinEnhancerFields = {
  // `image` and `webhook_url` are described by their schemas' `jsonSchema`
  image: SkinImage,
  sharpen: optionalField(Percent, `Sharpening intensity, 0 to 100 (default ${skinEnhancerDefaults.sharpen})`),
  smart_grain: optionalField(Percent, `Smart grain intensity, 0 to 100 (default ${skinEnhancerDefaults.smart_grain})`),
  webhook_url: optional(WebhookUrl)
}

/** The body of POST /proxy/imagevendor/v1/ai/skin-enhancer/creative (4.6). */
export const SkinEnhancerRequest = refusingUnknownFields(Schema.Struct(skinEnhancerFields)).annotate({ identifier: "SkinEnhancerRequest" })
export type SkinEnhancerRequest = typeof SkinEnhancerRequest.Type

/** The body of POST /proxy/imagevendor/v1/ai/skin-enhancer/faithful: creative's fields and `skin_detail`. */
export const SkinEnhancerFaithfulRequest = refusingUnknownFields(Schema.Struct({
  ...skinEnhancerFields,
  skin_detail: optionalField(Percent, `Skin detail enhancement level, 0 to 100 (default ${skinEnhancerDefaults.skin_detail})`)
})).annotate({ identifier: "SkinEnhancerFaithfulRequest" })
export type SkinEnhancerFaithfulRequest = typeof SkinEnhancerFaithfulRequest.Type

/** The body of POST /proxy/imagevendor/v1/ai/skin-enhancer/flexible: creative's fields and `optimized_for`. */
export const SkinEnhancerFlexibleRequest = refusingUnknownFields(Schema.Struct({
  ...skinEnhancerFields,
  optimized_for: optionalField(
    SkinOptimizedFor,
    `What the enhancement is optimised for (default ${skinEnhancerDefaults.optimized_for})`
  )
})).annotate({ identifier: "SkinEnhancerFlexibleRequest" })
export type SkinEnhancerFlexibleRequest = typeof SkinEnhancerFlexibleRequest.Type

/** `Idempotency-Key`: 1 to 255 printable ASCII characters. */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(/^[\x20-\x7e]{1,255}$/u, { message: "expected 1 to 255 printable ASCII characters" })
)

// --- video to music (4.7) ------------------------------------------------------------------------

/** The largest video file accepted: 1024 MiB of file content. */
export const maxVideoBytes = 1024 * 1024 * 1024
/** The longest video accepted, in seconds. */
export const maxVideoSeconds = 6 * 60

/** A video file part, as the service holds it once spooled to disk (on the wire: the part's bytes). */
export const VideoFile = Schema.Struct({
  path: Schema.String,
  size: Schema.Finite,
  filename: Schema.String,
  contentType: Schema.String
}).annotate({
  identifier: "VideoFile",
  description: "The video file (a part with a file name): at most 1024 MiB and 6 minutes"
}).check(documentedAs({ type: "string", format: "binary" }))
export type VideoFile = typeof VideoFile.Type

/** A video URL: http(s), bounded; its duration is not checked here. */
export const VideoUrl = Schema.Trim.check(
  Schema.makeFilter((s: string) => isUrl(s, ["http:", "https:"], maxVideoUrlChars), {
    message: `must be an http(s) URL of at most ${maxVideoUrlChars} characters`
  })
).annotate({ description: `An http(s) URL of the video (at most ${maxVideoUrlChars} characters); its duration is not checked here` })

const Prompt = Schema.String.check(
  Schema.isMaxLength(maxPromptChars, { message: `at most ${maxPromptChars} characters` })
).annotate({ description: `What the music should be like (at most ${maxPromptChars} characters)` })

/** What a generation is asked with: exactly one video, a file or a URL, and maybe a prompt. */
export const MusicRequest = Schema.Union([
  Schema.TaggedStruct("File", { file: VideoFile, prompt: Schema.Option(Schema.String) }),
  Schema.TaggedStruct("Url", { url: Schema.String, prompt: Schema.Option(Schema.String) })
])
export type MusicRequest = typeof MusicRequest.Type

const videoUrlMeaning = `A URL of the video (http or https, at most ${maxVideoUrlChars} characters)`

const musicFields = {
  "0.video": optionalField(VideoFile, "The video file (a part with a file name): at most 1024 MiB and 6 minutes"),
  video: optional(Schema.Union([VideoFile, VideoUrl]).annotate({
    description: "A video URL, or the video file when the part has a file name"
  })),
  video_url: optionalField(VideoUrl, videoUrlMeaning + ", in place of video"),
  prompt: optional(Prompt)
}

/**
 * The form's fields beyond its own: text, ignored (Music/Form.ts reads only its own). The host's
 * music nodes build the vendor's forms, which take more (`duration`, on text to music).
 */
const otherTextFields = { type: "string" } as const

/**
 * The form of `POST /proxy/musicvendor/v2m/generate`, as documented and as validated: its fields,
 * then exactly one video source. (A text field given twice, or a file in another part, is refused
 * while the form is read.)
 */
export const MusicForm = ignoringUnknownFields(Schema.Struct(musicFields), otherTextFields).annotate({
  identifier: "MusicForm",
  description: "Exactly one video: a file part `0.video` (or `video` with a file name), or a URL in `video` (or `video_url`). Other text fields are ignored; a file in any other part is refused."
}).pipe(
  Schema.decodeTo(
    Schema.toType(MusicRequest),
    SchemaTransformation.transformEffect({
      decode: (form: Schema.Struct.Type<typeof musicFields>, options) => {
        const prompt = Option.filter(Option.fromNullishOr(form.prompt), (p) => p.trim() !== "")
        const file = form["0.video"] ?? (typeof form.video === "object" ? form.video : undefined)
        const urls = (["video", "video_url"] as const).filter((key) => typeof form[key] === "string")
        const refuse = (message: string) => Effect.fail(new SchemaIssue.InvalidValue({ message }, form, options))
        if (urls.length > 1) return refuse("Give the video URL once, in 'video' or in 'video_url'")
        if (urls.length === 1 && file !== undefined) {
          return refuse(`Give exactly one video: a file part '0.video' or a URL in '${urls[0]}', not both`)
        }
        if (file !== undefined) return Effect.succeed<MusicRequest>({ _tag: "File", file, prompt })
        const url = urls.length === 0 ? undefined : form[urls[0]!]
        if (typeof url !== "string") return refuse("A video is required: a file part '0.video' or a URL in 'video'")
        return Effect.succeed<MusicRequest>({ _tag: "Url", url, prompt })
      },
      encode: (request: MusicRequest) =>
        Effect.succeed({
          ...(request._tag === "File" ? { "0.video": request.file } : { video: request.url }),
          ...Option.match(request.prompt, { onNone: () => ({}), onSome: (prompt) => ({ prompt }) })
        })
    })
  )
)

/** The URL-encoded form: the form's text fields (a file cannot come this way). */
export const MusicUrlForm = ignoringUnknownFields(Schema.Struct({
  video: optionalField(VideoUrl, videoUrlMeaning),
  video_url: optionalField(VideoUrl, videoUrlMeaning + ", in place of video"),
  prompt: optional(Prompt)
}), otherTextFields).annotate({ identifier: "MusicUrlForm" })
