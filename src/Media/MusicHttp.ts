/**
 * `POST /proxy/musicvendor/v2m/generate`: reads the form (spooling an upload to disk), checks the
 * video, asks the vendor and relays its NDJSON stream event by event.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import * as path from "node:path"
import { Api } from "../Api.ts"
import { AppConfig } from "../Config.ts"
import { respondToCause } from "../Errors.ts"
import { relayEvents, type StreamBroken, withKeepAlive } from "./MusicEvents.ts"
import { MusicVendor, type VendorStreamError } from "./MusicVendor.ts"
import { checkDuration, formContentType, maxVideoBytes, readVideoForm } from "./VideoUpload.ts"

/** Failures answered here, before any method routing: no path has other methods to offer. */
const answerFailure = respondToCause(() => [])

const streamFailure = (e: VendorStreamError | StreamBroken) =>
  Effect.logWarning(`music vendor stream failed: ${e.message}`).pipe(
    Effect.as(
      e._tag === "StreamBroken"
        ? { code: e.code, message: e.message }
        : { code: "upstream_error", message: "The music vendor stream broke off" }
    )
  )

export const MusicProxyLive = HttpApiBuilder.group(Api, "musicProxy", (handlers) =>
  Effect.gen(function*() {
    const vendor = yield* MusicVendor
    const config = yield* AppConfig
    const tmpDir = path.join(config.dataDir, "tmp")
    const modeHeaders: Record<string, string> = vendor.mode === "simulated" ? { "x-vendor-mode": "simulated" } : {}

    return handlers.handleRaw("generateMusic", ({ request }) =>
      Effect.gen(function*() {
        yield* formContentType(request)
        // refuse before reading: an upload is pointless when the vendor cannot be asked
        yield* vendor.ready
        const form = yield* readVideoForm(request, { tmpDir, maxFileBytes: maxVideoBytes })
        const durationSeconds = form.video._tag === "File" ? Option.some(yield* checkDuration(form.video)) : Option.none()
        const body = yield* vendor.generate({ video: form.video, prompt: form.prompt, durationSeconds })
        const lines = relayEvents(body, streamFailure).pipe(Stream.map((line) => `${line}\n`))
        return HttpServerResponse.stream(
          withKeepAlive(lines, config.streamKeepAliveMillis, "\n").pipe(
            // one write per chunk of events, not one per event
            Stream.mapChunks((chunk) => Chunk.of(Chunk.join(chunk, ""))),
            Stream.encodeText
          ),
          {
            contentType: "application/x-ndjson",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...modeHeaders }
          }
        )
      }).pipe(
        // the body may be unread (a refused or oversized upload): closing the connection lets
        // the client see the answer instead of the server draining the rest
        Effect.catchAllCause((cause) =>
          Effect.map(answerFailure(cause), (response) =>
            HttpServerResponse.setHeaders(response, { connection: "close", ...modeHeaders })
          )
        )
      ))
  }))
