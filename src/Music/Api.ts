/**
 * Video to music (interface 4.7): a form in, an NDJSON stream of events out. The handler reads
 * the body itself, as a stream (`handleRaw`), so that the framework never buffers an upload, and
 * validates what it read with the very schema declared here (Domain/Media.ts, MusicForm).
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  InvalidVideo,
  NotFound,
  PayloadTooLarge,
  QuotaExceeded,
  RateLimited,
  UnsupportedMediaType,
  UpstreamError,
  UpstreamTimeout,
  VendorNotConfigured,
  VideoTooLong
} from "../Domain/ApiErrors.ts"
import { KeyOrBearerAuthentication } from "../Domain/Auth.ts"
import { MusicForm, MusicUrlForm, TextToMusicRequest } from "../Domain/Media.ts"
import { StreamedBody } from "../Domain/HttpHints.ts"

/** The answer: one JSON event per line. */
export const MusicEventStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "application/x-ndjson" })).annotate({
  description: "One JSON event per line, relayed as the vendor sends them: `duration` (`duration_sec`), `titles` (a list of strings, one per stream), `title` (title, display_tags, copy_index, prompt_index, stream_index), `audio_chunk` (base64 `data` of the stream `stream_index`: a stream's chunks joined are its audio file), `cost`, `complete`, `error` (`code`, `message`). Events of other types, and known events whose fields differ from these schemas, pass unchanged. A blank line is a keep-alive. A stream that fails or ends without the vendor's `complete` or `error` ends with our own `{\"type\":\"error\",\"code\":\"<code>\",\"message\":\"...\"}`; one that carried the vendor's `error` gets no second one."
})

export class MusicProxyApi extends HttpApiGroup.make("musicProxy")
  .add(
    HttpApiEndpoint.post("generateMusic", "/proxy/musicvendor/v2m/generate", {
      payload: [MusicForm.pipe(HttpApiSchema.asMultipart()), MusicUrlForm.pipe(HttpApiSchema.asFormUrlEncoded())],
      success: MusicEventStream,
      error: [
        InvalidVideo,
        VideoTooLong,
        NotFound,
        PayloadTooLarge,
        UnsupportedMediaType,
        RateLimited,
        QuotaExceeded,
        UpstreamError,
        VendorNotConfigured,
        UpstreamTimeout
      ]
    })
      // the upload is read as it arrives, by the handler (Form.ts)
      .annotate(StreamedBody, true)
      .annotate(OpenApi.Summary, "Generate music for a video (streamed NDJSON)")
      .annotate(
        OpenApi.Description,
        "Any authenticated user. `multipart/form-data` (an uploaded file or a URL) or `application/x-www-form-urlencoded` (a URL); other content types are 415. " +
          "An upload over 1024 MiB is 413 (the connection is closed), a video over 6 minutes is `400 video_too_long`, a file whose duration cannot be read is `400 invalid_video`. " +
          "Over a quota of the caller (video-to-music operations per day, tasks in flight) it is 429 `quota_exceeded` with Retry-After, RateLimit-Policy and RateLimit, before the upload is read; a generation holds one task in flight until its stream ends, and one that fails before streaming is not counted. " +
          "Vendor refusals before the stream starts: 400 (the vendor's message), 404, 429 with Retry-After, 502 (vendor failure or our credentials), 504 (no answer in time), 503 `vendor_not_configured`. " +
          "With VENDOR_MODE=simulated the answer comes from a built-in simulation and carries `x-vendor-mode: simulated`."
      )
  )
  .add(
    HttpApiEndpoint.post("generateTextToMusic", "/proxy/musicvendor/t2m/generate", {
      // JSON, and URL-encoded as the host's music node sends it (the edge reads such a form as JSON of strings)
      payload: TextToMusicRequest,
      success: MusicEventStream,
      error: [NotFound, UnsupportedMediaType, QuotaExceeded, RateLimited, UpstreamError, VendorNotConfigured, UpstreamTimeout]
    })
      .annotate(OpenApi.Summary, "Generate music for a prompt (streamed NDJSON)")
      .annotate(
        OpenApi.Description,
        "Any authenticated user. `application/x-www-form-urlencoded` (as the host's music node sends it) or JSON: `prompt` (required, not blank, at most 2,000 characters) and `duration` (whole seconds, 0 to 360, decimal digits in a form; 0 or absent leaves the length to the model); other fields are ignored, other content types are 415. " +
          "A bad field is 400 naming it. The answer is streamed as on video to music; the vendor names each stream in a `title` event (no `titles`). " +
          "Over a quota of the caller's (one task per generation, in flight while it streams): 429 `quota_exceeded` before the vendor is called. " +
          "Vendor refusals before the stream starts: 400 (the vendor's message), 404, 429 with Retry-After, 502 (vendor failure or our credentials), 504 (no answer in time), 503 `vendor_not_configured`. " +
          "With VENDOR_MODE=simulated the answer comes from a built-in simulation and carries `x-vendor-mode: simulated`."
      )
  )
  .middleware(KeyOrBearerAuthentication)
  .annotate(OpenApi.Title, "Media proxy")
{}
