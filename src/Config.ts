import { Config, ConfigProvider, Context, Effect, Layer, type LogLevel, Option, Redacted, Result, Schema, SchemaIssue } from "effect"
import * as path from "node:path"

/** An S3-compatible bucket (STORAGE=s3): the type of `s3Settings`' value. */
export interface S3Settings extends Config.Success<typeof s3Settings> {}

export type StorageBackend =
  | { readonly _tag: "local" }
  | ({ readonly _tag: "s3" } & S3Settings)

/** The steps of an archive upload, in order, at which a crash test may kill the process (Publishing/Storage.ts). */
export const storageFaultSteps = ["after-temp-write", "after-fsync", "after-rename", "after-dir-fsync", "after-commit"] as const
export type StorageFaultStep = typeof storageFaultSteps[number]

/** The public repository host's REST API. */
const defaultRepohostApiUrl = "https://api.github.com"

/** A setting's value that is present but wrong: the message names the setting and says what it takes. */
const invalid = (message: string) => new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))

/** Checks or converts a setting's value; a failure's message becomes the configuration's error. */
const refine = <A, B>(f: (a: A) => Result.Result<B, string>) => Config.mapEffect((a: A) => Effect.fromResult(Result.mapError(f(a), invalid)))

/**
 * Settings read together as one record. Its type is the fields' own, field for field, with their
 * doc comments: `AppConfigShape` is derived from the declaration below, not written beside it.
 */
const group = <const Fields extends Record<string, Config.Config<unknown>>>(
  fields: Fields
): Config.Config<{ readonly [K in keyof Fields]: Config.Success<Fields[K]> }> =>
  // `Config.all`'s own type for a record, read-only; TypeScript cannot resolve its conditional for a generic record
  Config.all(fields) as Config.Config<any>

/**
 * An optional setting whose default is computed from another setting. That one is read again here
 * (the same variable, the same value), so the rule stays beside the setting it decides.
 */
const orDerived = <A, B>(setting: Config.Config<Option.Option<A>>, from: Config.Config<B>, derive: (b: B) => A) =>
  Config.all([setting, from]).pipe(Config.map(([value, b]) => Option.getOrElse(value, () => derive(b))))

/** A whole-number setting, raised to `min`. */
const int = (name: string, fallback: number, min: number) =>
  Config.Int(name).pipe(Config.withDefault(fallback), Config.map((n) => Math.max(min, n)))

/** A duration setting given in seconds, as milliseconds; raised to `min` seconds. */
const secondsAsMillis = (name: string, fallback: number, min: number) =>
  Config.Finite(name).pipe(Config.withDefault(fallback), Config.map((s) => Math.max(min, s) * 1000))

/** A time limit given in seconds, in whole milliseconds; at least 10 ms, since 0 would turn a limit off in Node. */
const limitMillis = (name: string, fallback: number) =>
  Config.Finite(name).pipe(Config.withDefault(fallback), Config.map((s) => Math.round(Math.max(0.01, s) * 1000)))

const logLevels: Record<string, LogLevel.LogLevel> = {
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error"
}

/** Pretty for a person at a terminal; logfmt, one line per entry, for whatever collects the output. */
/** How log lines are written on stdout (Observability/Logging.ts). */
export const logFormats = ["json", "logfmt", "pretty"] as const
export type LogFormat = typeof logFormats[number]

const defaultLogFormat: LogFormat = process.stdout.isTTY === true ? "pretty" : "logfmt"

const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")))

const optionalRedacted = (name: string) =>
  Config.option(Config.Redacted(name)).pipe(
    Config.map(Option.filter((s) => Redacted.value(s).trim() !== ""))
  )

const optionalHttpUrl = (name: string) =>
  optionalString(name).pipe(
    refine((url) =>
      Option.match(url, {
        onNone: () => Result.succeed(Option.none<string>()),
        onSome: (raw) =>
          URL.canParse(raw.trim()) && /^https?:$/.test(new URL(raw.trim()).protocol)
            ? Result.succeed(Option.some(raw.trim().replace(/\/+$/, "")))
            : Result.fail(`${name} must be an http(s) URL; got "${raw}"`)
      })
    )
  )

/** An alias word: lowercase letters, digits and underscores, or empty to turn its aliases off. */
const aliasWord = (name: string, fallback: string) =>
  Config.String(name).pipe(
    Config.withDefault(fallback),
    refine((raw) =>
      /^[a-z0-9_]*$/.test(raw.trim())
        ? Result.succeed(raw.trim())
        : Result.fail(`${name} must be lowercase letters, digits and underscores, or empty; got "${raw}"`)
    )
  )

/**
 * A vendor's word in the media proxy's paths (`/proxy/<word>/...`): lowercase letters, digits,
 * `-` and `_`, or empty (the default) for no alias.
 */
const vendorPathWord = (name: string) =>
  Config.String(name).pipe(
    Config.withDefault(""),
    refine((raw) =>
      /^[a-z0-9_-]*$/.test(raw.trim())
        ? Result.succeed(raw.trim())
        : Result.fail(`${name} must be lowercase letters, digits, '-' and '_', or empty; got "${raw}"`)
    )
  )

/**
 * `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs separated by commas, values percent-encoded
 * (the OpenTelemetry specification's form).
 */
const otlpHeaders = optionalRedacted("OTEL_EXPORTER_OTLP_HEADERS").pipe(
  refine((raw) => {
    const headers: Record<string, string> = {}
    for (const pair of Option.match(raw, { onNone: () => "", onSome: Redacted.value }).split(",")) {
      if (pair.trim() === "") continue
      const at = pair.indexOf("=")
      const name = pair.slice(0, at).trim().toLowerCase()
      if (at < 1 || !/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
        return Result.fail("OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas")
      }
      try {
        headers[name] = decodeURIComponent(pair.slice(at + 1).trim())
      } catch {
        return Result.fail(`OTEL_EXPORTER_OTLP_HEADERS: the value of ${name} is not percent-encoded`)
      }
    }
    return Result.succeed(Redacted.make<Readonly<Record<string, string>>>(headers))
  })
)

const csv = (name: string): Config.Config<ReadonlySet<string>> =>
  Config.String(name).pipe(
    Config.withDefault(""),
    Config.map((s) => new Set(s.split(",").map((x) => x.trim()).filter((x) => x !== "")))
  )

/** The bucket's settings, read whatever STORAGE says: a wrong one stops the start-up all the same. */
const s3Settings = group({
  /** `None`: the provider's own endpoint for `region`. */
  endpoint: optionalHttpUrl("S3_ENDPOINT"),
  /** Empty when unset, which only STORAGE=s3 refuses (`StorageBackendConfig`). */
  bucket: optionalString("S3_BUCKET").pipe(Config.map(Option.match({ onNone: () => "", onSome: (b) => b.trim() }))),
  // the SDK's own variable as a fallback: the one a machine set up for AWS already has
  region: Config.orElse(Config.String("S3_REGION"), () => Config.String("AWS_REGION")).pipe(Config.withDefault("us-east-1")),
  /** Buckets addressed as `<endpoint>/<bucket>/<key>` rather than `<bucket>.<endpoint>/<key>` (most non-AWS stores). */
  forcePathStyle: Config.Boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false)),
  /**
   * Tests and tools only: fixed credentials. `None` (always, from the environment): the SDK's
   * default chain, i.e. the standard AWS variables, shared files, or the instance's role.
   */
  credentials: Config.succeed(Option.none<{ readonly accessKeyId: string; readonly secretAccessKey: Redacted.Redacted }>()),
  /** A public base (a CDN's) that downloads are sent to instead of presigned URLs. */
  publicBaseUrl: optionalHttpUrl("ARCHIVE_PUBLIC_BASE_URL")
})

/** STORAGE and, under `s3`, its settings: a bucket is required, the rest has defaults. */
const StorageBackendConfig: Config.Config<StorageBackend> = Config.all({
  kind: Config.Literals(["local", "s3"], "STORAGE").pipe(Config.withDefault("local")),
  s3: s3Settings
}).pipe(
  refine(({ kind, s3 }): Result.Result<StorageBackend, string> => {
    if (kind === "local") return Result.succeed({ _tag: "local" })
    if (s3.bucket === "") return Result.fail("STORAGE=s3 needs S3_BUCKET, the bucket's name")
    return Result.succeed({ _tag: "s3", ...s3 })
  })
)

// The settings other settings' defaults are computed from (`orDerived`).
const port = Config.Port("PORT").pipe(Config.withDefault(8080))
const host = Config.String("HOST").pipe(Config.withDefault("0.0.0.0"))
const dataDir = Config.String("DATA_DIR").pipe(Config.withDefault("./data"), Config.map((d) => path.resolve(d)))
const repohostApiUrl = Config.String("REPOHOST_API_URL").pipe(
  Config.withDefault(defaultRepohostApiUrl),
  refine((raw) => {
    const url = raw.trim() === "" ? defaultRepohostApiUrl : raw.trim()
    return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)
      ? Result.succeed(url.replace(/\/+$/, ""))
      : Result.fail(`REPOHOST_API_URL must be an http(s) URL; got "${raw}"`)
  })
)

// --- CORS_ORIGINS: which web origins may call the API from a browser (Http/Cors.ts) ---------------

/** No origin (an empty set: no CORS headers at all), any origin (`*`), or these origins. */
export type CorsOrigins = "*" | ReadonlySet<string>

/**
 * `scheme://host[:port]`, an optional trailing slash and nothing else: no path, query, fragment
 * or user, and no `*` in the host (a wildcard would parse as a host name and never match).
 */
const originSyntax = /^https?:\/\/[^/?#@\s*\\]+\/?$/i

/** The origin an entry names, serialized as browsers send it in `Origin`; undefined when it names none. */
export const originOf = (entry: string): string | undefined =>
  originSyntax.test(entry) && URL.canParse(entry) ? new URL(entry).origin : undefined

/**
 * Reads `CORS_ORIGINS`: `*` alone, or a comma-separated list of origins; empty turns CORS off.
 * An entry that is not an origin fails with a message naming the setting and the entry.
 */
export const parseCorsOrigins = (raw: string): Result.Result<CorsOrigins, string> => {
  const entries = raw.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  if (entries.length === 1 && entries[0] === "*") return Result.succeed("*")
  const origins = new Set<string>()
  for (const entry of entries) {
    const origin = originOf(entry)
    if (origin === undefined) {
      return Result.fail(
        `CORS_ORIGINS must be "*" or a comma-separated list of origins (http(s)://host[:port], no path); got "${entry}"`
      )
    }
    origins.add(origin)
  }
  return Result.succeed(origins)
}

// --- HTTP_EDGE_OFF: edge pieces left out, to measure what they cost (Http/Edge.ts) ------------------

/**
 * The pieces that may be left out: the observing ones, which no answer depends on. `spans` turns
 * tracing off even with a collector configured; without one it is off already.
 */
export const optionalPieces = ["access-log", "request-metrics", "request-id", "spans"] as const
export type OptionalPiece = typeof optionalPieces[number]

const isOptional = (name: string): name is OptionalPiece => (optionalPieces as ReadonlyArray<string>).includes(name)

/** Reads `HTTP_EDGE_OFF`: a comma-separated list of optional pieces; empty leaves every piece on. */
export const parseEdgeOff = (raw: string): Result.Result<ReadonlySet<OptionalPiece>, string> => {
  const off = new Set<OptionalPiece>()
  for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    if (!isOptional(entry)) return Result.fail(`HTTP_EDGE_OFF lists pieces among ${optionalPieces.join(", ")}; got "${entry}"`)
    off.add(entry)
  }
  return Result.succeed(off)
}

/** A day's quota of each operation: `default` for those `byOperation` does not name; `None` is no limit. */
export interface OperationQuotas {
  readonly default: Option.Option<number>
  readonly byOperation: ReadonlyMap<string, number>
}

/** The day quota an operation gets from QUOTA_OPERATIONS_PER_DAY; `None` is no limit. */
export const operationQuota = (quotas: OperationQuotas, operation: string): Option.Option<number> => {
  const own = quotas.byOperation.get(operation)
  return own === undefined ? quotas.default : Option.some(own)
}

const count = /^[0-9]+$/

/**
 * `QUOTA_OPERATIONS_PER_DAY`: a number for every operation and/or `operation=number` entries,
 * comma-separated (`200,video-to-music=20`); empty is no limit, an operation named without a
 * plain number takes none.
 */
export const parseOperationQuotas = (raw: string): Result.Result<OperationQuotas, string> => {
  let fallback = Option.none<number>()
  const byOperation = new Map<string, number>()
  for (const entry of raw.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const [name, value] = entry.includes("=") ? entry.split("=", 2).map((x) => x.trim()) : [undefined, entry]
    if (!count.test(value!) || (name !== undefined && !/^[a-z0-9][a-z0-9/_-]*$/.test(name))) {
      return Result.fail(`QUOTA_OPERATIONS_PER_DAY is a number and/or operation=number entries, comma-separated (200,video-to-music=20), or empty; got "${entry}"`)
    }
    if (name === undefined) fallback = Option.some(Number(value))
    else byOperation.set(name, Number(value))
  }
  return Result.succeed({ default: fallback, byOperation })
}

/** A whole-number limit; empty is no limit (`None`). */
const optionalLimit = (name: string, fallback: number) =>
  Config.String(name).pipe(
    Config.withDefault(String(fallback)),
    refine((raw) =>
      raw.trim() === ""
        ? Result.succeed(Option.none<number>())
        : count.test(raw.trim()) && Number.isSafeInteger(Number(raw.trim()))
        ? Result.succeed(Option.some(Number(raw.trim())))
        : Result.fail(`${name} must be a whole number of 0 or more, or empty for no limit; got "${raw}"`)
    )
  )

/** The URL clients reach this service at, without a trailing slash. */
const publicBaseUrl = orDerived(optionalString("PUBLIC_BASE_URL"), port, (p) => `http://localhost:${p}`).pipe(
  Config.map((url) => url.replace(/\/+$/, ""))
)

/** A comma-separated list of http(s) URLs, each kept exactly as given (an issuer's `iss` is compared exactly). */
const urlList = (name: string): Config.Config<ReadonlyArray<string>> =>
  Config.String(name).pipe(
    Config.withDefault(""),
    refine((raw) => {
      const urls = raw.split(",").map((u) => u.trim()).filter((u) => u !== "")
      const wrong = urls.find((u) => !(URL.canParse(u) && /^https?:$/.test(new URL(u).protocol)))
      return wrong === undefined ? Result.succeed(urls) : Result.fail(`${name} must list http(s) URLs, comma-separated; got "${wrong}"`)
    })
  )

/**
 * Every setting of the service, each declared once here: its variable, type, default and checks
 * (the table in docs/operating.md says what each means). Values are in the units the code uses: a variable in
 * seconds becomes milliseconds where the field's name says so.
 */
export const appConfig = group({
  port,
  host,
  dataDir,
  databaseUrl: optionalRedacted("DATABASE_URL"),
  publicBaseUrl,
  logLevel: Config.String("LOG_LEVEL").pipe(
    Config.withDefault("info"),
    refine((raw) => {
      const level = logLevels[raw.toLowerCase()]
      return level
        ? Result.succeed(level)
        : Result.fail(`LOG_LEVEL must be one of debug, info, warn, error; got "${raw}"`)
    })
  ),
  /** How log lines are written on stdout (Observability/Logging.ts). */
  logFormat: Config.Literals(logFormats, "LOG_FORMAT").pipe(Config.withDefault(defaultLogFormat)),
  /** One INFO line per request (Observability/AccessLog.ts). */
  accessLog: Config.Boolean("ACCESS_LOG").pipe(Config.withDefault(true)),
  auth: group({
    jwtSecret: optionalRedacted("AUTH_JWT_SECRET"),
    jwksUrl: optionalString("AUTH_JWKS_URL"),
    issuer: optionalString("AUTH_ISSUER"),
    audience: optionalString("AUTH_AUDIENCE"),
    adminSubjects: csv("ADMIN_SUBJECTS"),
    adminClaim: Config.String("AUTH_ADMIN_CLAIM").pipe(Config.withDefault("admin")),
    /** The longest a bearer token may live: `exp` − `iat`, or `exp` − now without `iat`. */
    maxTokenLifetimeSeconds: int("AUTH_MAX_TOKEN_LIFETIME_SECONDS", 30 * 24 * 60 * 60, 1),
    /** How far this service's clock may be from the issuer's (`iat`, `nbf`, `exp`). */
    clockSkewSeconds: int("AUTH_CLOCK_SKEW_SECONDS", 60, 0),
    /** Failed authentications one client address may make per window; past them a failure gets 429. */
    failureLimit: int("AUTH_FAILURE_LIMIT", 20, 1),
    failureWindowMillis: secondsAsMillis("AUTH_FAILURE_WINDOW_SECONDS", 60, 0.001)
  }),
  /** Trusted publishing: CI workflows exchange OIDC identity tokens for publish tokens (src/TrustedPublishing/). */
  trustedPublishing: group({
    /** The issuers whose identity tokens are exchanged; none (the default) turns trusted publishing off. */
    issuers: urlList("TRUSTED_PUBLISHING_ISSUERS"),
    /** The `aud` an identity token must carry: by default the service's public URL. */
    audience: orDerived(optionalString("TRUSTED_PUBLISHING_AUDIENCE"), publicBaseUrl, (url) => url),
    /** How long a publish token works. */
    tokenLifetimeMillis: Config.succeed(15 * 60_000),
    /** How long an issuer's discovery document and keys are kept before they are fetched again. */
    keysMaxAgeMillis: Config.succeed(60 * 60_000),
    /** The least time between two fetches of an issuer's keys for a key id they lack (a flood of made-up ids costs one fetch). */
    keysRefreshCooldownMillis: Config.succeed(10_000),
    /** How long one exchange with an issuer may take. */
    timeoutMillis: Config.succeed(10_000)
  }),
  /** The limit of anonymous reads per client address (Http/AnonymousLimit.ts). */
  rateLimit: group({
    /** GET and HEAD requests without a verified credential one address (an IPv6 /64) may make per window; 0 turns the limit off. */
    anonymousPerWindow: Config.Int("RATE_LIMIT_ANONYMOUS_PER_MINUTE").pipe(
      Config.withDefault(600),
      // only 0 turns it off: a negative number is a mistake, not a way to say off
      refine((n) => n >= 0 ? Result.succeed(n) : Result.fail(`RATE_LIMIT_ANONYMOUS_PER_MINUTE must be 0 (off) or a positive number; got ${n}`))
    ),
    /** The window: a minute, as the setting's name says (tests shorten it). */
    windowMillis: Config.succeed(60_000)
  }),
  /** Take the client's address from the last `X-Forwarded-For` entry (behind one trusted proxy). */
  trustProxy: Config.Boolean("TRUST_PROXY").pipe(Config.withDefault(false)),
  /** How long the change feed keeps a change; a cursor older than that is answered 410 (Sync/Feed.ts). */
  changeFeedRetentionDays: int("CHANGE_FEED_RETENTION_DAYS", 30, 1),
  /** How often each instance looks whether the catalogue snapshot is behind the feed (Sync/Snapshot.ts); tests shorten it. */
  snapshotCheckMillis: Config.succeed(2000),
  /** How long a cached list page may live even without an invalidation (a safety net). */
  listCacheTtlMillis: secondsAsMillis("LIST_CACHE_TTL_SECONDS", 60, 0),
  /** The repository host's REST API, asked by node claiming. */
  repohost: group({
    /** Base URL without a trailing slash. */
    apiUrl: repohostApiUrl,
    /** How long one exchange with the host may take before it counts as down. */
    timeoutMillis: Config.succeed(10_000),
    /** The host name in repository URLs that this API answers for (a node elsewhere cannot be claimed). */
    webHost: orDerived(
      optionalString("REPOHOST_WEB_HOST"),
      repohostApiUrl,
      // the API of a host is commonly served from its `api.` subdomain
      (apiUrl) => new URL(apiUrl).hostname.replace(/^api\./, "")
    ).pipe(Config.map((webHost) => webHost.toLowerCase()))
  }),
  /**
   * `simulated` asks a built-in offline repository host instead of the configured one: it answers
   * for the repositories of its own reserved example host only (src/Repohost/Client.ts).
   */
  repohostMode: Config.Literals(["live", "simulated"], "REPOHOST_MODE").pipe(Config.withDefault("live")),
  /** `simulated` serves built-in offline vendors instead of the configured ones. */
  vendorMode: Config.Literals(["live", "simulated"], "VENDOR_MODE").pipe(Config.withDefault("live")),
  /** The image vendor: `/proxy/imagevendor/<rest>` goes to `<baseUrl>/<rest>`. */
  imageVendor: group({
    /** Base URL without a trailing slash. */
    baseUrl: optionalHttpUrl("IMAGEVENDOR_BASE_URL"),
    apiKey: optionalRedacted("IMAGEVENDOR_API_KEY"),
    /** The request header that carries the key. */
    apiKeyHeader: Config.String("IMAGEVENDOR_API_KEY_HEADER").pipe(
      Config.withDefault("x-api-key"),
      Config.map((header) => header.trim() || "x-api-key")
    )
  }),
  /** The music vendor: `/proxy/musicvendor/<rest>` goes to `<baseUrl>/<rest>` with a bearer key. */
  musicVendor: group({
    /** Base URL without a trailing slash. */
    baseUrl: optionalHttpUrl("MUSICVENDOR_BASE_URL"),
    apiKey: optionalRedacted("MUSICVENDOR_API_KEY")
  }),
  /** How long a vendor may take to start answering before the caller gets 504. */
  vendorTimeoutMillis: secondsAsMillis("VENDOR_TIMEOUT_SECONDS", 60, 1),
  /** The job runner (src/Jobs/Runner.ts). */
  jobs: group({
    /** Jobs one instance runs at once. */
    concurrency: Config.succeed(8),
    /** How often jobs due later (retries) are looked for; new jobs are announced at once. */
    pollIntervalMillis: Config.succeed(1000)
  }),
  /** Webhooks through the proxy (src/Webhooks/). */
  webhooks: group({
    /** Deliver to targets that resolve to loopback, private, link-local or other non-public addresses. */
    allowPrivateTargets: Config.Boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
    /** The delay before the first retry; each next one doubles it, up to `retryMaxDelayMillis`. */
    retryBaseMillis: secondsAsMillis("WEBHOOK_RETRY_BASE_SECONDS", 30, 0.01),
    retryMaxDelayMillis: Config.succeed(60 * 60 * 1000),
    /** Retries go on until this long after the delivery was made; the last one falls after it. */
    retryForMillis: Config.succeed(24 * 60 * 60 * 1000),
    /** Longest one attempt may take, connection and answer. */
    attemptTimeoutMillis: Config.succeed(10_000),
    /** How long the previous secret still signs after a rotation. */
    rotationGraceMillis: Config.succeed(24 * 60 * 60 * 1000)
  }),
  /** After this long without a vendor event, a blank line keeps the NDJSON stream alive. */
  streamKeepAliveMillis: Config.succeed(30_000),
  /** Node archives: size limit, how long a signed upload URL lives, the key that signs it. */
  storage: group({
    /** Where archives and media files live: the local folder `dir`, or a bucket shared by every instance. */
    backend: StorageBackendConfig,
    /** Where archives live under `local`; instances that serve one catalogue must share it. */
    dir: orDerived(
      optionalString("STORAGE_DIR").pipe(Config.map(Option.map((d) => path.resolve(d)))),
      dataDir,
      (d) => path.join(d, "archives")
    ),
    maxArchiveBytes: int("MAX_ARCHIVE_BYTES", 100 * 1024 * 1024, 1),
    uploadUrlTtlSeconds: int("UPLOAD_URL_TTL_SECONDS", 3600, 1),
    /**
     * Unset: a random key is generated once in the database (table service_secrets) by the first
     * instance to start, so every instance on that database accepts the others' upload URLs.
     */
    signingSecret: optionalRedacted("STORAGE_SIGNING_SECRET"),
    /** Tests only (docs/design/publishing.md, "Crash-consistent archives"): the step of an upload at which the process SIGKILLs itself. */
    // read only when set: unset (production) there is no fault and no default to get wrong
    faultInjection: Config.option(Config.Literals(storageFaultSteps, "FAULT_INJECT_STORAGE"))
  }),
  /** The archive scanner (Moderation/FileScanner.ts). */
  scanning: group({
    /** The longest the rules may take over one file before its scan fails (and is retried). */
    fileTimeoutMillis: secondsAsMillis("SCAN_FILE_TIMEOUT_SECONDS", 20, 0.01),
    /** Tests only: the scan thread's program, in place of the rules' own (test/Moderation/threads/). */
    threadProgram: Config.succeed(Option.none<URL>())
  }),
  /** The words the clients in the field use where the interface says `host` (Compat/Aliases.ts); "" turns one off. */
  aliases: group({
    /** The host application's word: `<word>_version` is also read as `host_version`, ... */
    hostName: aliasWord("HOST_NAME_ALIAS", "comfyui"),
    /** The host-node word: `<word>_search` is also read as `host_node_search`, ... */
    hostNode: aliasWord("HOST_NODE_ALIAS", "comfy_node"),
    /** The repository host's word: the claim's token is also read as `GH_TOKEN` (Compat/Aliases.ts tokenAlias), stars are also answered as `<word>_stars`. */
    repohost: aliasWord("REPOHOST_NAME_ALIAS", "github"),
    /** Answers carry the clients' words too (docs/compatibility.md); off, they are the interface's alone, byte for byte. */
    inAnswers: Config.Boolean("ANSWER_ALIASES").pipe(Config.withDefault(false)),
    /** The image vendor's word: `/proxy/<word>/...` answers what `/proxy/imagevendor/...` answers; empty for none. */
    imageVendorPath: vendorPathWord("IMAGEVENDOR_PATH_ALIAS"),
    /** The music vendor's word: `/proxy/<word>/...` answers what `/proxy/musicvendor/...` answers; empty for none. */
    musicVendorPath: vendorPathWord("MUSICVENDOR_PATH_ALIAS")
  }),
  /** Media files of the host's API nodes (POST /customers/storage), kept in the archives' store. */
  media: group({
    maxFileBytes: int("MEDIA_MAX_FILE_BYTES", 100 * 1024 * 1024, 1),
    /** The most a user's live files may hold together. */
    maxUserBytes: int("MEDIA_MAX_USER_BYTES", 1024 * 1024 * 1024, 1),
    /** How long a file lives after its creation. */
    fileTtlSeconds: int("MEDIA_FILE_TTL_SECONDS", 24 * 60 * 60, 1),
    /** How often expired files are swept (their bytes and their rows). */
    sweepIntervalMillis: secondsAsMillis("MEDIA_SWEEP_INTERVAL_SECONDS", 300, 0.01)
  }),
  /**
   * Each customer's quotas (docs/operating.md, "Quotas"), defaults a site admin may override per
   * customer; `None` is no limit, 0 refuses every request it bounds.
   */
  quotas: group({
    operationsPerDay: Config.String("QUOTA_OPERATIONS_PER_DAY").pipe(Config.withDefault("500"), refine(parseOperationQuotas)),
    tasksInFlight: optionalLimit("QUOTA_TASKS_IN_FLIGHT", 10),
    uploadBytesPerDay: optionalLimit("QUOTA_UPLOAD_BYTES_PER_DAY", 5 * 1024 * 1024 * 1024),
    /** What of the metering is left out, to measure what it costs (bench/metering.ts); never in production. */
    meteringOff: Config.Literals(["", "usage", "all"], "METERING_OFF").pipe(Config.withDefault("" as const))
  }),
  /** What is read of a body after an early answer (a 413) before the connection closes (Http/RefusedBodies.ts). */
  refusedBodies: group({
    drainBytes: int("REFUSED_BODY_DRAIN_BYTES", 64 * 1024 * 1024, 0),
    drainMillis: limitMillis("REFUSED_BODY_DRAIN_SECONDS", 30)
  }),
  /** Connection limits of the HTTP server (Http/NodeServer.ts `makeHttpServer`). */
  http: group({
    /** Longest a request's line and headers may take to arrive. */
    headersTimeoutMillis: limitMillis("HTTP_HEADERS_TIMEOUT_SECONDS", 10),
    /** Longest a request's body may take to arrive after its headers, streamed uploads excepted. */
    requestTimeoutMillis: limitMillis("HTTP_REQUEST_TIMEOUT_SECONDS", 60),
    /** Longest a connection waits for its next request after an answer. */
    keepAliveTimeoutMillis: limitMillis("HTTP_KEEP_ALIVE_TIMEOUT_SECONDS", 5),
    /** Longest a connection may stay silent while no request of it is being worked on. */
    idleTimeoutMillis: limitMillis("HTTP_IDLE_TIMEOUT_SECONDS", 30),
    /** Longest a streamed upload (archives, media, music video) may stay silent; it has no overall limit. */
    uploadIdleTimeoutMillis: limitMillis("UPLOAD_IDLE_TIMEOUT_SECONDS", 60)
  }),
  /** Prometheus metrics at `/metrics` (docs/operating.md, "Metrics"). */
  metrics: group({
    /** A port of its own that serves only `/metrics`; `None`: `/metrics` is on the main port when `token` is set. */
    port: Config.option(Config.Port("METRICS_PORT")),
    /** Where that port listens. */
    host: orDerived(optionalString("METRICS_HOST"), host, (h) => h),
    /** The bearer token `/metrics` asks for (on its own port too, when set). */
    token: optionalRedacted("METRICS_TOKEN")
  }),
  /** OpenTelemetry traces exported over OTLP/HTTP JSON (docs/operating.md, "Tracing"). */
  tracing: group({
    /** Where spans are posted; `None`: no export. */
    tracesUrl: Config.all([optionalHttpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), optionalHttpUrl("OTEL_EXPORTER_OTLP_ENDPOINT")]).pipe(
      // the signal-specific variable is the whole URL; the general one is a base (OTLP exporter specification)
      Config.map(([traces, base]) => Option.orElse(traces, () => Option.map(base, (b) => `${b}/v1/traces`)))
    ),
    serviceName: optionalString("OTEL_SERVICE_NAME").pipe(Config.map(Option.getOrElse(() => "node-registry"))),
    /** Headers of every export (a collector's credentials, say). */
    headers: otlpHeaders,
    /** How long ended spans wait before they are sent, as a batch. */
    // the OpenTelemetry batch span processor's variable, in milliseconds
    exportIntervalMillis: int("OTEL_BSP_SCHEDULE_DELAY", 5000, 10)
  }),
  /** On SIGTERM or SIGINT, longest the requests in flight may take to finish before their connections are cut. */
  shutdownGraceMillis: limitMillis("SHUTDOWN_GRACE_SECONDS", 25),
  /** Temporary files a crash left behind: partial archive and media uploads, spooled videos. */
  leftovers: group({
    /** A temporary file untouched this long is no live upload's (docs/operating.md, Settings). */
    maxAgeMillis: limitMillis("TEMP_FILE_MAX_AGE_SECONDS", 3600),
    sweepIntervalMillis: limitMillis("TEMP_SWEEP_INTERVAL_SECONDS", 600)
  }),
  /** Edge pieces left out, to measure what they cost (bench/README.md); none by default. */
  edgeOff: Config.String("HTTP_EDGE_OFF").pipe(Config.withDefault(""), refine(parseEdgeOff)),
  /** Web origins whose pages may call the API from a browser (Http/Cors.ts); an empty set sends no CORS headers. */
  corsOrigins: Config.String("CORS_ORIGINS").pipe(
    Config.withDefault(""),
    refine(parseCorsOrigins)
  )
})

/** Every setting of the service, read once from the environment: the type of `appConfig`'s value. */
export interface AppConfigShape extends Config.Success<typeof appConfig> {}

/**
 * The process environment as the settings are read from it. An empty variable is a value, as an
 * operator means it (`HOST_NAME_ALIAS=` turns those aliases off, `REPOHOST_MODE=` is refused),
 * not the unset variable Effect 4's default provider would make of it.
 */
export const environment = (): ConfigProvider.ConfigProvider => ConfigProvider.fromEnv({ preserveEmptyStrings: true })

/** The settings of the process environment, read when the layer is built. */
const fromEnvironment = Effect.suspend(() => appConfig.parse(environment()))

/** The settings, read once from the environment (`AppConfig.layer`). */
export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("AppConfig") {
  static readonly layer = Layer.effect(AppConfig, fromEnvironment)

  /** For tests and tools: the environment's settings with some replaced. */
  static readonly layerWith = (overrides: (c: AppConfigShape) => AppConfigShape) =>
    Layer.effect(AppConfig, Effect.map(fromEnvironment, overrides))
}
