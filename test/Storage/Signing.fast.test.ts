/** Signed upload URLs with TestClock: valid until their expiry, refused after, and bound to what they name. */
import { expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { makeUrlSigner } from "../../src/Storage/Signing.ts"
import { failureTag } from "../support/Stub.ts"

const ttlSeconds = 3600
const signer = makeUrlSigner(Redacted.make("a signing key"), "http://registry.test", ttlSeconds)
const target = { nodeId: "tool", version: "1.0.0", versionId: "2a1f0b6e-3c4d-4e5f-8a9b-0c1d2e3f4a5b" }

it.effect("a URL is valid until its expiry, then expired; tampering is a bad signature, whenever", () =>
  Effect.gen(function*() {
    const url = new URL(yield* signer.uploadUrl(target))
    expect(url.pathname).toBe("/archives/tool/1.0.0")
    const expires = url.searchParams.get("expires")!
    const signature = url.searchParams.get("signature")!
    expect(Number(expires)).toBe(ttlSeconds)

    yield* TestClock.adjust(ttlSeconds * 1000)
    yield* signer.verify(target, expires, signature)
    expect(failureTag(yield* Effect.exit(signer.verify({ ...target, version: "1.0.1" }, expires, signature)))).toBe("BadSignature")
    expect(failureTag(yield* Effect.exit(signer.verify(target, String(Number(expires) + 1), signature)))).toBe("BadSignature")

    yield* TestClock.adjust(1000)
    expect(failureTag(yield* Effect.exit(signer.verify(target, expires, signature)))).toBe("SignatureExpired")
    expect(failureTag(yield* Effect.exit(signer.verify({ ...target, versionId: "x" }, expires, signature)))).toBe("BadSignature")
  }))
