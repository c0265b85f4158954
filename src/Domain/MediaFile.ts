/**
 * Media storage for the host's API nodes (the anchor's `CreateCustomerStorageResourceBody` and
 * `CustomerStorageResourceResponse`): a node asks for a file, PUTs its bytes to `upload_url`, and
 * hands `download_url` to a vendor.
 */
import { Schema } from "effect"
import { field, optionalField, refusingUnknownFields, Text, Timestamp } from "./Schemas.ts"

/** A file name: one path segment of printable characters (it becomes part of the download URL). */
const FileName = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(255),
  Schema.makeFilter((s: string) => !/[\u0000-\u001f\u007f/\\]/.test(s) && s !== "." && s !== "..", {
    message: "must be a file name: no slashes, no control characters"
  })
)

/** `type/subtype`, without parameters; compared and stored lower-case. */
export const MediaType = Schema.String.check(
  Schema.isMaxLength(127),
  Schema.makeFilter((s: string) => /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/.test(s), {
    message: "must be a media type such as image/png"
  })
)

export const StorageRequest = refusingUnknownFields(Schema.Struct({
  file_name: field(FileName, "Name of the file, such as image.png; the download URL ends with it"),
  content_type: optionalField(MediaType, "Media type of the file, such as image/png; when absent (or application/octet-stream), the image, audio or video type its uploaded bytes tell, else application/octet-stream"),
  file_hash: optionalField(
    Text(128),
    "SHA-256 of the file's bytes, in hex: a live file of the caller with these bytes is answered instead of a new one"
  )
})).annotate({ identifier: "StorageRequest" })

export class StorageResource extends Schema.Class<StorageResource>("StorageResource")({
  upload_url: optionalField(
    Schema.String,
    "Signed URL to PUT the bytes to, with the declared Content-Type (or none); absent when existing_file is true"
  ),
  download_url: field(Schema.String, "Absolute URL that serves the file without authentication until it expires"),
  existing_file: field(Schema.Boolean, "Whether a live file of the caller with the same bytes (file_hash) is answered"),
  expires_at: field(Timestamp, "When the file, and both its URLs, expire (24 hours after creation)")
}) {}
