/**
 * Signed upload URLs: `PUT /archives/{nodeId}/{version}?expires=<unix seconds>&signature=<HMAC>`.
 * The HMAC-SHA256 covers the method, the node, the version, the version's id and the expiry, so a
 * URL cannot be moved to another version, extended, or reused for a version published again
 * under a new id. Media storage signs its upload URLs with the same key (`makeSignedUrls`). The
 * key comes from STORAGE_SIGNING_SECRET or, unset, is generated once in the database, so every
 * instance on one database accepts the URLs of the others.
 */
import { SqlClient } from "effect/sql"
import { Clock, Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../Config.ts"
import { traced } from "../Tracing.ts"

export interface UploadTarget {
  readonly nodeId: string
  readonly version: string
  readonly versionId: string
}

/** The URL's signature is missing or does not match its node, version, version id and expiry. */
export class BadSignature extends Data.TaggedError("BadSignature")<{}> {
  override get message() {
    return "The upload URL's signature is not valid"
  }
}

export class SignatureExpired extends Data.TaggedError("SignatureExpired")<{}> {
  override get message() {
    return "The upload URL has expired; publish again for a new one"
  }
}

/** The path of a version's archive: where it is uploaded (PUT, signed) and downloaded (GET). */
const archivePath = (nodeId: string, version: string) =>
  `/archives/${encodeURIComponent(nodeId)}/${encodeURIComponent(version)}`

/** What an archive's URL is signed for, beside its expiry. */
const archiveScope = (t: UploadTarget) => `PUT\n${t.nodeId}\n${t.version}\n${t.versionId}`

/**
 * Signed URLs of any kind: a URL carries `expires` and an HMAC-SHA256 of its `scope` (what it may
 * do, to what) and that expiry. Each kind's scope starts differently, so that no URL of one kind
 * is valid as another. The clock is Effect's, so tests move time with TestClock.
 */
export const makeSignedUrls = (key: Redacted.Redacted, baseUrl: string) => {
  const sign = (scope: string, expires: string) => createHmac("sha256", Redacted.value(key)).update(`${scope}\n${expires}`).digest()
  return {
    /** The absolute URL of `path`, signed for `scope` until `expiresAt` (seconds since the epoch). */
    url: (path: string, scope: string, expiresAt: number) => {
      const expires = String(expiresAt)
      return `${baseUrl}${path}?expires=${expires}&signature=${sign(scope, expires).toString("base64url")}`
    },
    /** Succeeds for a genuine URL of `scope` that has not expired. */
    verify: traced("SignedUrls.verify")(function*(scope: string, expires: string, signature: string) {
      if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return yield* new BadSignature()
      const given = Buffer.from(signature, "base64url")
      const expected = sign(scope, expires)
      // the signature first, in constant time: an expiry is only news about a genuine URL
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return yield* new BadSignature()
      if (Number(expires) * 1000 < (yield* Clock.currentTimeMillis)) return yield* new SignatureExpired()
    })
  }
}

/** Signs and checks archive upload URLs with `key`. */
export const makeUrlSigner = (key: Redacted.Redacted, baseUrl: string, ttlSeconds: number) => {
  const signed = makeSignedUrls(key, baseUrl)
  return {
    /** The absolute upload URL of the version, valid for the configured time from now. */
    uploadUrl: traced("UrlSigner.uploadUrl")(function*(t: UploadTarget) {
      const expires = Math.floor((yield* Clock.currentTimeMillis) / 1000) + ttlSeconds
      return signed.url(archivePath(t.nodeId, t.version), archiveScope(t), expires)
    }),
    /** Succeeds for a genuine URL that has not expired. */
    verify: (t: UploadTarget, expires: string, signature: string) => signed.verify(archiveScope(t), expires, signature),
    /** The same key's URLs of other kinds (media storage). */
    signed
  }
}

const secretName = "storage_signing_key"

/** The configured key, or the database's (created by the first instance to start). */
const signingKey = Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.storage.signingSecret)) return config.storage.signingSecret.value
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO service_secrets (name, value) VALUES (${secretName}, ${randomBytes(32).toString("base64url")})
             ON CONFLICT (name) DO NOTHING`
  const rows = yield* sql<{ value: string }>`SELECT value FROM service_secrets WHERE name = ${secretName}`
  return Redacted.make(rows[0]!.value)
}).pipe(Effect.orDie)

export class UrlSigner extends Context.Service<UrlSigner>()("UrlSigner", {
  make: Effect.gen(function*() {
    const config = yield* AppConfig
    return makeUrlSigner(yield* signingKey, config.publicBaseUrl, config.storage.uploadUrlTtlSeconds)
  })
}) {
  static readonly layer = Layer.effect(UrlSigner, UrlSigner.make)
}
