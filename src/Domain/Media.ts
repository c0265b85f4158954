import { Effect, Option, Schema, SchemaIssue, SchemaTransformation } from "effect"
import {
  DecimalIntegerString,
  documentedAs,
  field,
  ignoringUnknownFields,
  optional,
  optionalField,
  refusingUnknownFields,
  Strings,
  Text,
  Uuid,
  withExamples
} from "./Schemas.ts"

/** Statuses of CONTRACT.md; CREATED is what starting a task answers. */
export const MediaTaskStatus = Schema.Literals(["CREATED", "IN_PROGRESS", "COMPLETED", "FAILED"])
  .annotate({ identifier: "MediaTaskStatus" })
export type MediaTaskStatus = typeof MediaTaskStatus.Type

/** The kinds of image task, named as the paths that poll them name them. */
export const ImageTaskKind = Schema.Literals([
  "image-style-transfer",
  "skin-enhancer",
  "image-upscaler",
  "image-upscaler-precision-v2",
  "image-relight"
])
export type ImageTaskKind = typeof ImageTaskKind.Type

/** The skin enhancer's modes: each starts at a path of its own. */
export type SkinEnhancerMode = "creative" | "faithful" | "flexible"

/** What starts an image task, named as its path under `/v1/ai/` names it. */
export type ImageOperation = Exclude<ImageTaskKind, "skin-enhancer"> | `skin-enhancer/${SkinEnhancerMode}`

/**
 * The kind of task an operation starts: the vendor polls every skin enhancer mode at
 * `skin-enhancer/{task_id}`, every other operation at its own path.
 */
export const taskKindOf = (operation: ImageOperation): ImageTaskKind =>
  operation.startsWith("skin-enhancer/") ? "skin-enhancer" : operation as Exclude<ImageTaskKind, "skin-enhancer">

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

// --- the image vendor's other operations: upscalers and relight ---------------------------------
// Field names, enumerations, ranges and defaults as the host's API nodes send them
// (comfy_api_nodes/nodes_magnific.py, apis/magnific.py) and, where the nodes are silent, as the
// vendor documents them.

/** -10 to 10: the creative upscaler's adjustments. */
export const Adjustment = Schema.Int.check(Schema.isBetween({ minimum: -10, maximum: 10 }))

export const UpscalerScaleFactor = Schema.Literals(["2x", "4x", "8x", "16x"])
export const UpscalerOptimizedFor = Schema.Literals([
  "standard",
  "soft_portraits",
  "hard_portraits",
  "art_n_illustration",
  "videogame_assets",
  "nature_n_landscapes",
  "films_n_photography",
  "3d_renders",
  "science_fiction_n_horror"
])
export const UpscalerEngine = Schema.Literals(["automatic", "magnific_illusio", "magnific_sharpy", "magnific_sparkle"])

/** What the creative upscaler is sent for the fields a request leaves out (the vendor's documented defaults). */
export const upscalerDefaults = {
  scale_factor: "2x",
  optimized_for: "standard",
  creativity: 0,
  hdr: 0,
  resemblance: 0,
  fractality: 0,
  engine: "automatic"
} as const

/** The body of POST /proxy/imagevendor/v1/ai/image-upscaler (the creative upscaler). */
export const UpscalerRequest = refusingUnknownFields(Schema.Struct({
  image: field(StyleImage, "Image to upscale: base64 image data, a data: URL, or an http(s) URL; the result is at most 25.3 million pixels"),
  scale_factor: optionalField(UpscalerScaleFactor, `Scale factor (default ${upscalerDefaults.scale_factor})`),
  optimized_for: optionalField(UpscalerOptimizedFor, `What the upscale is optimised for (default ${upscalerDefaults.optimized_for})`),
  prompt: optionalField(Text(maxPromptChars), `Prompt guiding the upscale (at most ${maxPromptChars} characters)`),
  creativity: optionalField(Adjustment, "The model's creativity, -10 to 10 (default 0)"),
  hdr: optionalField(Adjustment, "Level of definition and detail, -10 to 10 (default 0)"),
  resemblance: optionalField(Adjustment, "Resemblance to the original, -10 to 10 (default 0)"),
  fractality: optionalField(Adjustment, "Strength of the prompt and intricacy per square pixel, -10 to 10 (default 0)"),
  engine: optionalField(UpscalerEngine, `Model engine (default ${upscalerDefaults.engine})`),
  webhook_url: optional(WebhookUrl)
})).annotate({ identifier: "UpscalerRequest" })
export type UpscalerRequest = typeof UpscalerRequest.Type

export const PrecisionFlavor = Schema.Literals(["sublime", "photo", "photo_denoiser"])
/** 2 to 16: the precision upscaler's scale factor, a plain integer (the creative one's is "2x"...). */
export const PrecisionScaleFactor = Schema.Int.check(Schema.isBetween({ minimum: 2, maximum: 16 }))

/** What the precision upscaler is sent for the fields a request leaves out (`flavor` and `scale_factor` are the vendor's to default). */
export const precisionUpscalerDefaults = { sharpen: 7, smart_grain: 7, ultra_detail: 30 } as const

/** Base64 data or a publicly accessible HTTPS URL, as the vendor documents the precision upscaler's image. */
export const PrecisionImage = ImageSource(["https:"], "an https URL").check(
  documentedAs({ description: "Image to upscale: base64 image data, a data: URL, or a publicly accessible https URL" })
)

/** The body of POST /proxy/imagevendor/v1/ai/image-upscaler-precision-v2. */
export const PrecisionUpscalerRequest = refusingUnknownFields(Schema.Struct({
  image: PrecisionImage,
  sharpen: optionalField(Percent, `Sharpness intensity, 0 to 100 (default ${precisionUpscalerDefaults.sharpen})`),
  smart_grain: optionalField(Percent, `Grain and texture enhancement, 0 to 100 (default ${precisionUpscalerDefaults.smart_grain})`),
  ultra_detail: optionalField(Percent, `Fine detail added, 0 to 100 (default ${precisionUpscalerDefaults.ultra_detail})`),
  flavor: optionalField(PrecisionFlavor, "Processing style: sublime (general), photo, photo_denoiser (noisy photos)"),
  scale_factor: optionalField(PrecisionScaleFactor, "Scale factor, an integer from 2 to 16"),
  webhook_url: optional(WebhookUrl)
})).annotate({ identifier: "PrecisionUpscalerRequest" })
export type PrecisionUpscalerRequest = typeof PrecisionUpscalerRequest.Type

export const RelightStyle = Schema.Literals([
  "standard",
  "darker_but_realistic",
  "clean",
  "smooth",
  "brighter",
  "contrasted_n_hdr",
  "just_composition"
])
export const RelightEngine = Schema.Literals([
  "automatic",
  "balanced",
  "cool",
  "real",
  "illusio",
  "fairy",
  "colorful_anime",
  "hard_transform",
  "softy"
])
export const TransferLightA = Schema.Literals(["automatic", "low", "medium", "normal", "high", "high_on_faces"])
export const TransferLightB = Schema.Literals([
  "automatic",
  "composition",
  "straight",
  "smooth_in",
  "smooth_out",
  "smooth_both",
  "reverse_both",
  "soft_in",
  "soft_out",
  "soft_mid",
  "strong_mid",
  "style_shift",
  "strong_shift"
])

/** What relight is sent for the fields a request leaves out (the vendor's documented defaults). */
export const relightDefaults = {
  light_transfer_strength: 100,
  interpolate_from_original: false,
  change_background: true,
  style: "standard",
  preserve_details: true
} as const

/** The same for the fields of `advanced_settings`, when it is given. */
export const relightAdvancedDefaults = {
  whites: 50,
  blacks: 50,
  brightness: 50,
  contrast: 50,
  saturation: 50,
  engine: "automatic",
  transfer_light_a: "automatic",
  transfer_light_b: "automatic",
  fixed_generation: false
} as const

export const RelightAdvancedSettings = refusingUnknownFields(Schema.Struct({
  whites: optionalField(Percent, "Level of the brightest tones, 0 to 100 (default 50)"),
  blacks: optionalField(Percent, "Level of the darkest tones, 0 to 100 (default 50)"),
  brightness: optionalField(Percent, "Brightness, 0 to 100 (default 50)"),
  contrast: optionalField(Percent, "Contrast, 0 to 100 (default 50)"),
  saturation: optionalField(Percent, "Saturation, 0 to 100 (default 50)"),
  engine: optionalField(RelightEngine, "Engine preset (default automatic)"),
  transfer_light_a: optionalField(TransferLightA, "Intensity of the light transfer (default automatic)"),
  transfer_light_b: optionalField(TransferLightB, "Also modifies the light transfer's intensity (default automatic)"),
  fixed_generation: optionalField(Schema.Boolean, "When enabled, the same settings give the same image (default false)")
})).annotate({ identifier: "RelightAdvancedSettings" })

/** The two light sources relight takes at most one of. */
const lightSources = ["transfer_light_from_reference_image", "transfer_light_from_lightmap"] as const

/** The body of POST /proxy/imagevendor/v1/ai/image-relight. */
export const RelightRequest = refusingUnknownFields(Schema.Struct({
  image: field(StyleImage, "Image to relight: base64 image data, a data: URL, or an http(s) URL"),
  prompt: optionalField(Text(maxPromptChars), `Guidance for the light (at most ${maxPromptChars} characters)`),
  transfer_light_from_reference_image: optionalField(
    StyleImage,
    "Reference image whose light is transferred: base64 image data, a data: URL, or an http(s) URL; not with transfer_light_from_lightmap"
  ),
  transfer_light_from_lightmap: optionalField(
    StyleImage,
    "Lightmap whose light is transferred: base64 image data, a data: URL, or an http(s) URL; not with transfer_light_from_reference_image"
  ),
  light_transfer_strength: optionalField(Percent, `Intensity of the light transfer, 0 to 100 (default ${relightDefaults.light_transfer_strength})`),
  interpolate_from_original: optionalField(Schema.Boolean, "Interpolate the result from the original by the transfer strength (default false)"),
  change_background: optionalField(Schema.Boolean, "Change the background after the prompt or reference (default true)"),
  style: optionalField(RelightStyle, `Style preset (default ${relightDefaults.style})`),
  preserve_details: optionalField(Schema.Boolean, "Keep the original's texture and small details (default true)"),
  advanced_settings: optionalField(RelightAdvancedSettings, "Fine-tuning of the light; its fields' defaults apply when it is given"),
  webhook_url: optional(WebhookUrl)
}).check(Schema.makeFilter(
  (body: { readonly transfer_light_from_reference_image?: string; readonly transfer_light_from_lightmap?: string }) =>
    lightSources.some((key) => body[key] === undefined),
  { message: `give at most one of '${lightSources[0]}' and '${lightSources[1]}'` }
))).annotate({ identifier: "RelightRequest" })
export type RelightRequest = typeof RelightRequest.Type

/** `Idempotency-Key`: 1 to 255 printable ASCII characters. */
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(/^[\x20-\x7e]{1,255}$/u, { message: "expected 1 to 255 printable ASCII characters" })
)

// --- video to music (4.7) ------------------------------------------------------------------------

/** The largest video file accepted: 1024 MiB of file content. */
export const maxVideoBytes = 1024 * 1024 * 1024
/** The longest video accepted, in seconds. */
export const maxVideoSeconds = 6 * 60

/**
 * A video file part as the service holds it once read (on the wire: the part's bytes): spooled to
 * disk at `path`, or, when `path` is empty, already forwarded to the vendor as it arrived
 * (Music/Form.ts).
 */
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

// --- text to music -------------------------------------------------------------------------------

/** The longest music text to music is asked for, in seconds (6 minutes, as the host's music node allows). */
export const maxMusicSeconds = 360

/** What the music is to be: required, not blank (the host's node refuses a blank one too). */
const MusicPrompt = Schema.String.check(
  Schema.makeFilter((s: string) => s.trim() !== "", { message: "expected a prompt that is not blank" }),
  Schema.isMaxLength(maxPromptChars, { message: `at most ${maxPromptChars} characters` })
).annotate({ description: `What the music should be like (required, at most ${maxPromptChars} characters)` })

const musicSecondsRange = Schema.isBetween({ minimum: 0, maximum: maxMusicSeconds })

/**
 * `duration`: whole seconds, 0 (the model decides) to 360; a number in JSON, decimal digits in a
 * URL-encoded form (which the edge hands over as JSON of strings).
 */
const MusicSeconds = Schema.Union([
  Schema.Int.check(musicSecondsRange),
  DecimalIntegerString.pipe(
    Schema.decodeTo(Schema.Number, SchemaTransformation.numberFromString),
    Schema.check(Schema.isInt(), musicSecondsRange)
  )
]).annotate({ description: "Length of the music in whole seconds, 0 to 360 (decimal digits in a form); 0 or absent: the model infers it from the prompt" })

/**
 * The body of `POST /proxy/musicvendor/t2m/generate`, as the host's music node sends it
 * (comfy_api_nodes/nodes_sonilo.py: a form of text fields, so URL-encoded): `prompt`, and
 * `duration` when it is above 0. Other fields are ignored, as on video to music.
 */
export const TextToMusicRequest = ignoringUnknownFields(Schema.Struct({
  prompt: MusicPrompt,
  duration: optional(MusicSeconds)
})).annotate({ identifier: "TextToMusicRequest" })
export type TextToMusicRequest = typeof TextToMusicRequest.Type
