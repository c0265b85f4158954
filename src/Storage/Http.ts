/**
 * Downloads a bucket serves itself (STORAGE=s3): the service answers with a redirect to a URL
 * presigned for the request's method, since a presigned URL is bound to one method.
 */
import { type HttpServerRequest, HttpServerResponse } from "effect/http"

/** The method a download URL is presigned for: HEAD for a HEAD, GET for the rest. */
export const downloadMethod = (request: HttpServerRequest.HttpServerRequest): "GET" | "HEAD" =>
  request.method === "HEAD" ? "HEAD" : "GET"

/** 302 to `url`. The URL is presigned for a while only: no cache may keep the redirect. */
export const redirectToStore = (url: string) =>
  HttpServerResponse.redirect(url, { status: 302, headers: { "cache-control": "no-store" } })
