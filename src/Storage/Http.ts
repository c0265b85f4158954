/**
 * What stored content's endpoints read of a request and answer: an upload's declared type and
 * length; and downloads a bucket serves itself (STORAGE=s3), answered with a redirect to a URL
 * presigned for the request's method, since a presigned URL is bound to one method.
 */
import { type HttpServerRequest, HttpServerResponse } from "effect/http"

/** The media type of the request's Content-Type, lowercase, without parameters. */
export const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

export const declaredLength = (request: HttpServerRequest.HttpServerRequest) => {
  const length = Number(request.headers["content-length"])
  return Number.isFinite(length) ? length : undefined
}

/** The method a download URL is presigned for: HEAD for a HEAD, GET for the rest. */
export const downloadMethod = (request: HttpServerRequest.HttpServerRequest): "GET" | "HEAD" =>
  request.method === "HEAD" ? "HEAD" : "GET"

/** 302 to `url`, with `headers` besides. The URL is presigned for a while only: no cache may keep the redirect. */
export const redirectToStore = (url: string, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.redirect(url, { status: 302, headers: { ...headers, "cache-control": "no-store" } })
