import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  InvalidSignature,
  NotFound,
  PayloadTooLarge,
  QuotaExceeded,
  UnsupportedMediaType,
  UrlExpired
} from "../Domain/ApiErrors.ts"
import { KeyOrBearerAuthentication } from "../Domain/Auth.ts"
import { StorageRequest, StorageResource } from "../Domain/MediaFile.ts"
import { field, optionalField, PathParam, refusingBody, Text } from "../Domain/Schemas.ts"
import { StreamedBody } from "../Domain/HttpHints.ts"

/** Media files for the host's API nodes: created by a signed-in caller (bearer or API key). */
export class MediaStorageApi extends HttpApiGroup.make("mediaStorage")
  .add(
    HttpApiEndpoint.post("createStorageResource", "/customers/storage", {
      payload: StorageRequest,
      success: StorageResource
    })
      .annotate(HttpApi.PayloadParseOptions, refusingBody)
      .annotate(OpenApi.Summary, "Make a media file: a signed URL to upload it, a public one to download it")
      .annotate(
        OpenApi.Description,
        "PUT the bytes to `upload_url` with the declared Content-Type (or none), then hand `download_url` to whoever " +
          "needs the file: it is served without authentication until `expires_at` (24 hours), then deleted."
      )
  )
  .middleware(KeyOrBearerAuthentication)
  .annotate(OpenApi.Title, "Media storage")
{}

const FilePath = Schema.Struct({
  token: field(PathParam, "The file's secret, as its URLs carry it"),
  fileName: field(PathParam, "The file's name, as its URLs carry it")
})

/** A media file's two URLs: the signed upload and the public download. No bearer token. */
export class MediaFilesApi extends HttpApiGroup.make("mediaFiles")
  .add(
    HttpApiEndpoint.put("uploadMediaFile", "/media/:token/:fileName", {
      params: FilePath,
      query: {
        expires: optionalField(Text(20), "When the signed URL expires, in seconds since the Unix epoch"),
        signature: optionalField(Text(100), "Signature of the URL, as upload_url carries it")
      },
      success: HttpApiSchema.NoContent,
      error: [InvalidSignature, UrlExpired, NotFound, PayloadTooLarge, UnsupportedMediaType, QuotaExceeded]
    })
      .annotate(OpenApi.Summary, "Upload a media file's bytes to its signed URL")
      .annotate(
        OpenApi.Description,
        "The body is the file, streamed to storage. 429 `quota_exceeded` (Retry-After, RateLimit-Policy, RateLimit) when it would pass the owner's upload bytes of the day (QUOTA_UPLOAD_BYTES_PER_DAY): before a byte is read when Content-Length says so, else once it has arrived (the file keeps its old bytes). 413 beyond the size of one file or the caller's total over " +
          "their live files; 415 when Content-Type differs from the declared type. Uploading again replaces the bytes."
      )
      // the body is read as a stream by the handler, not declared as a payload (which would buffer it)
      .annotate(StreamedBody, true)
      .annotate(OpenApi.Override, {
        requestBody: { required: true, content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }
      })
  )
  .add(
    HttpApiEndpoint.get("downloadMediaFile", "/media/:token/:fileName", {
      params: FilePath,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/octet-stream" })),
      error: [NotFound]
    })
      .annotate(OpenApi.Summary, "Download a media file, with the content type it was declared with (or its bytes told)")
      .annotate(
        OpenApi.Description,
        "A file declared without a type (or as application/octet-stream) is served as the image, audio or video type " +
          "its first bytes tell, or as application/octet-stream when they tell none. " +
          "When the files are in an object store (STORAGE=s3) the answer is 302 Found, Cache-Control: no-store, to the " +
          "store itself: a URL presigned for the request's method that lives 15 minutes and answers with the same " +
          "content type and disposition."
      )
  )
  .annotate(OpenApi.Title, "Media storage")
{}
