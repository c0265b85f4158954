/**
 * Error answers as the client sees them: every ErrorResponse `{error, message}` becomes the class
 * of Domain/ApiErrors.ts whose code it carries, decoded by one schema built from `apiErrors`. The
 * derived endpoints and the hand-made calls (uploads, downloads, the music stream) share it.
 */
import { Effect, Option, Schema } from "effect"
import { HttpClient, type HttpClientError, HttpClientResponse } from "effect/http"
import {
  type AnyApiError,
  apiErrors,
  type BadRequest,
  infoOf,
  type InternalError,
  isApiError,
  type MethodNotAllowed,
  type NotFound,
  type PayloadTooLarge,
  RateLimited,
  type RequestTooLarge
} from "../Domain/ApiErrors.ts"

/**
 * What the service may answer to any request, whatever its endpoint declares: the answers of its
 * error funnel (a malformed or oversized body, an unknown route or method, headers too large, a
 * failure of the service) and of the anonymous reads' limit (Http/AnonymousLimit.ts). Every other
 * code comes only where an endpoint declares it.
 */
export type ServiceFault = BadRequest | NotFound | MethodNotAllowed | PayloadTooLarge | RequestTooLarge | RateLimited | InternalError

const decodeWire = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.toCodecJson(Schema.Union(apiErrors))))

/** The class instance an error body stands for, when it is the wire form (JSON) of a known code. */
const decodeApiError = (body: string, headers: Readonly<Record<string, string | undefined>>) =>
  Option.map(decodeWire(body), (error): AnyApiError => {
    // the wait travels as a header beside the body (Retry-After, in seconds)
    const retryAfter = Number(headers["retry-after"])
    return error instanceof RateLimited && headers["retry-after"] !== undefined && Number.isFinite(retryAfter)
      ? new RateLimited({ message: error.message, retryAfter })
      : error
  })

/** The wire code (`not_found`, `version_exists`, ...) of an error class instance; undefined for anything else. */
export const errorCode = (error: unknown): string | undefined =>
  isApiError(error) ? infoOf(error).code : undefined

/**
 * A non-2xx answer whose body is an error of a known code fails with its class; any other answer
 * goes on unchanged (its body, read here, is given back to whoever reads it next).
 */
const failWithApiError = (
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError | AnyApiError> =>
  response.status < 400
    ? Effect.succeed(response)
    : Effect.flatMap(response.arrayBuffer, (bytes) =>
      Option.match(decodeApiError(new TextDecoder().decode(bytes), response.headers), {
        onSome: Effect.fail,
        onNone: () =>
          Effect.succeed(HttpClientResponse.fromWeb(
            response.request,
            new Response(bytes, { status: response.status, headers: response.headers })
          ))
      }))

/** `client`, failing with the error classes for the error answers it receives. */
export const withApiErrors = <E, R>(client: HttpClient.HttpClient.With<E, R>) =>
  HttpClient.transformResponse(client, Effect.flatMap(failWithApiError))
