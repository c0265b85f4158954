/**
 * The vendor clients on a stub HTTP client that never answers, with TestClock: each gives up with
 * VendorTimedOut exactly at VENDOR_TIMEOUT_SECONDS, and not before. And an image vendor whose 2xx
 * is not a task, JSON or not, has failed (it was reached).
 */
import { HttpClient, HttpClientResponse } from "effect/http"
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { ImageVendor } from "../../src/Images/Vendor.ts"
import { MusicVendor } from "../../src/Music/Vendor.ts"
import { failureTag, testConfig } from "../support/Stub.ts"

const timeoutMillis = 5_000

/** An HTTP client whose requests never get an answer. */
const silent = Layer.succeed(HttpClient.HttpClient, HttpClient.make(() => Effect.never))

const configured = testConfig((c) => ({
  ...c,
  vendorMode: "live",
  vendorTimeoutMillis: timeoutMillis,
  imageVendor: { ...c.imageVendor, baseUrl: Option.some("http://vendor.test"), apiKey: Option.some(Redacted.make("k")) },
  musicVendor: { baseUrl: Option.some("http://vendor.test"), apiKey: Option.some(Redacted.make("k")) }
}))

/** Runs `effect` in a fiber; it is still running just before the timeout and failed right after. */
const timesOut = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect)
    yield* TestClock.adjust(timeoutMillis - 1)
    expect(fiber.pollUnsafe()).toBeUndefined()
    yield* TestClock.adjust(1)
    const exit = yield* Fiber.await(fiber)
    expect(failureTag(exit)).toBe("VendorTimedOut")
  })

it.effect("the image vendor: a start and a poll time out", () =>
  Effect.gen(function*() {
    const vendor = yield* ImageVendor
    yield* timesOut(vendor.start("image-style-transfer", { image: "x" }))
    yield* timesOut(vendor.poll("skin-enhancer", "v-1"))
  }).pipe(Effect.provide(ImageVendor.layerWithoutDependencies.pipe(Layer.provide([silent, configured])))))

it.effect("the music vendor: a generation times out while the vendor neither answers nor takes the upload", () =>
  Effect.gen(function*() {
    const vendor = yield* MusicVendor
    yield* timesOut(Effect.scoped(vendor.generate({
      request: { _tag: "Url", url: "https://videos.example/a.mp4", prompt: Option.none() },
      durationSeconds: Option.none()
    })))
  }).pipe(Effect.provide(MusicVendor.layerWithoutDependencies.pipe(Layer.provide([silent, configured])))))

it.effect("the image vendor: a 2xx that is not a task, JSON or not, is a vendor failure, not an unreachable vendor", () =>
  Effect.gen(function*() {
    for (const body of ["<html>busy</html>", JSON.stringify({ ok: true })]) {
      const answering = Layer.succeed(
        HttpClient.HttpClient,
        HttpClient.make((request) => Effect.succeed(HttpClientResponse.fromWeb(request, new Response(body, { status: 200 }))))
      )
      const failure = yield* ImageVendor.pipe(
        Effect.flatMap((vendor) => vendor.start("image-style-transfer", { image: "x" })),
        Effect.provide(ImageVendor.layerWithoutDependencies.pipe(Layer.provide([answering, configured]))),
        Effect.flip
      )
      expect(failure, body).toMatchObject({ _tag: "VendorFailed", reason: "answered without a task" })
    }
  }))
