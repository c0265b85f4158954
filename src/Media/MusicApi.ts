/**
 * Video to music (interface 4.7): a form in, an NDJSON stream of events out. The payload
 * schemas below document the form in OpenAPI only; the handler reads the body itself, as a
 * stream (`handleRaw`), so that the framework never buffers an upload.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Authentication.ts"
import { optional } from "../Domain/Schemas.ts"
import {
  BadRequest,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  UnsupportedMediaType,
  UpstreamError,
  UpstreamTimeout
} from "../Errors.ts"
import { maxPromptLength, maxUrlLength } from "./VideoUpload.ts"

const VideoUrl = Schema.String.annotations({
  description: `An http(s) URL of the video (at most ${maxUrlLength} characters); its duration is not checked here`
})
const Prompt = Schema.String.annotations({ description: `What the music should be like (at most ${maxPromptLength} characters)` })

const VideoFile = Schema.String.annotations({
  description: "The video file (a part with a file name): at most 1024 MiB and 6 minutes",
  jsonSchema: { type: "string", format: "binary" }
})

export const MusicForm = HttpApiSchema.Multipart(Schema.Struct({
  "0.video": optional(VideoFile),
  video: optional(Schema.String.annotations({ description: "A video URL, or the video file when the part has a file name" })),
  video_url: optional(VideoUrl),
  prompt: optional(Prompt)
})).annotations({
  identifier: "MusicForm",
  description: "Exactly one video: a file part `0.video` (or `video` with a file name), or a URL in `video` (or `video_url`). Other text fields are ignored; a file in any other part is refused."
})

export const MusicUrlForm = Schema.Struct({
  video: optional(VideoUrl),
  video_url: optional(VideoUrl),
  prompt: optional(Prompt)
}).pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" })).annotations({ identifier: "MusicUrlForm" })

/** The answer: one JSON event per line. */
export const MusicEventStream = HttpApiSchema.Text({ contentType: "application/x-ndjson" }).annotations({
  description: "One JSON event per line, relayed as the vendor sends them: `duration`, `title` (title, display_tags, copy_index, prompt_index, stream_index), `titles`, `audio_chunk` (base64 `data`), `cost`, `complete`, `error`; other types pass unchanged. A blank line is a keep-alive. A stream that fails or ends without `complete` ends with `{\"type\":\"error\",\"error\":\"<code>\",\"message\":\"...\"}`."
})

export class MusicProxyApi extends HttpApiGroup.make("musicProxy")
  .add(
    HttpApiEndpoint.post("generateMusic", "/proxy/musicvendor/v2m/generate")
      .setPayload(Schema.Union(MusicForm, MusicUrlForm))
      .addSuccess(MusicEventStream)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(RateLimited)
      .addError(UpstreamError)
      .addError(ServiceUnavailable)
      .addError(UpstreamTimeout)
      .annotate(OpenApi.Summary, "Generate music for a video (streamed NDJSON)")
      .annotate(
        OpenApi.Description,
        "Any authenticated user. `multipart/form-data` (an uploaded file or a URL) or `application/x-www-form-urlencoded` (a URL); other content types are 415. " +
          "An upload over 1024 MiB is 413 (the connection is closed), a video over 6 minutes is `400 video_too_long`, a file whose duration cannot be read is `400 invalid_video`. " +
          "Vendor refusals before the stream starts: 400 (the vendor's message), 404, 429 with Retry-After, 502 (vendor failure or our credentials), 504 (no answer in time), 503 `vendor_not_configured`. " +
          "With VENDOR_MODE=simulated the answer comes from a built-in simulation and carries `x-vendor-mode: simulated`."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Media proxy")
{}
