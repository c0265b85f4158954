import { Config, ConfigProvider, Context, Effect, Layer, type LogLevel, Option, Redacted, Result, Schema, SchemaIssue } from "effect"
import * as path from "node:path"
import { type OptionalPiece, parseEdgeOff } from "./Http/EdgeOff.ts"
import { type CorsOrigins, parseCorsOrigins } from "./Http/Origins.ts"
import { type LogFormat, logFormats } from "./Observability/Logging.ts"

/** Every setting of the service, read once from the environment (see the README's table). */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly publicBaseUrl: string
  readonly logLevel: LogLevel.LogLevel
  /** How log lines are written on stdout (Observability/Logging.ts). */
  readonly logFormat: LogFormat
  /** One INFO line per request (Observability/AccessLog.ts). */
  readonly accessLog: boolean
  readonly auth: {
    readonly jwtSecret: Option.Option<Redacted.Redacted>
    readonly jwksUrl: Option.Option<string>
    readonly issuer: Option.Option<string>
    readonly audience: Option.Option<string>
    readonly adminSubjects: ReadonlySet<string>
    readonly adminClaim: string
    /** The longest a bearer token may live: `exp` − `iat`, or `exp` − now without `iat`. */
    readonly maxTokenLifetimeSeconds: number
    /** How far this service's clock may be from the issuer's (`iat`, `nbf`, `exp`). */
    readonly clockSkewSeconds: number
    /** Failed authentications one client address may make per window; past them a failure gets 429. */
    readonly failureLimit: number
    readonly failureWindowMillis: number
  }
  /** Take the client's address from the last `X-Forwarded-For` entry (behind one trusted proxy). */
  readonly trustProxy: boolean
  /** How long a cached list page may live even without an invalidation (a safety net). */
  readonly listCacheTtlMillis: number
  /** The repository host's REST API, asked by node claiming. */
  readonly repohost: {
    /** Base URL without a trailing slash. */
    readonly apiUrl: string
    /** How long one exchange with the host may take before it counts as down. */
    readonly timeoutMillis: number
    /** The host name in repository URLs that this API answers for (a node elsewhere cannot be claimed). */
    readonly webHost: string
  }
  /**
   * `simulated` asks a built-in offline repository host instead of the configured one: it answers
   * for the repositories of its own reserved example host only (src/Repohost/Client.ts).
   */
  readonly repohostMode: "live" | "simulated"
  /** `simulated` serves built-in offline vendors instead of the configured ones. */
  readonly vendorMode: "live" | "simulated"
  /** The image vendor: `/proxy/imagevendor/<rest>` goes to `<baseUrl>/<rest>`. */
  readonly imageVendor: {
    /** Base URL without a trailing slash. */
    readonly baseUrl: Option.Option<string>
    readonly apiKey: Option.Option<Redacted.Redacted>
    /** The request header that carries the key. */
    readonly apiKeyHeader: string
  }
  /** The music vendor: `/proxy/musicvendor/<rest>` goes to `<baseUrl>/<rest>` with a bearer key. */
  readonly musicVendor: {
    /** Base URL without a trailing slash. */
    readonly baseUrl: Option.Option<string>
    readonly apiKey: Option.Option<Redacted.Redacted>
  }
  /** How long a vendor may take to start answering before the caller gets 504. */
  readonly vendorTimeoutMillis: number
  /** After this long without a vendor event, a blank line keeps the NDJSON stream alive. */
  readonly streamKeepAliveMillis: number
  /** Node archives: size limit, how long a signed upload URL lives, the key that signs it. */
  readonly storage: {
    /** Where archives and media files live: the local folder `dir`, or a bucket shared by every instance. */
    readonly backend: StorageBackend
    /** Where archives live under `local`; instances that serve one catalogue must share it. */
    readonly dir: string
    readonly maxArchiveBytes: number
    readonly uploadUrlTtlSeconds: number
    /**
     * Unset: a random key is generated once in the database (table service_secrets) by the first
     * instance to start, so every instance on that database accepts the others' upload URLs.
     */
    readonly signingSecret: Option.Option<Redacted.Redacted>
    /** Tests only (docs/design.md, "Crash-consistent archives"): the step of an upload at which the process SIGKILLs itself. */
    readonly faultInjection: Option.Option<StorageFaultStep>
  }
  /** The words the clients in the field use where the interface says `host` (Compat/Aliases.ts); "" turns one off. */
  readonly aliases: {
    /** The host application's word: `<word>_version` is also read as `host_version`, ... */
    readonly hostName: string
    /** The host-node word: `<word>_search` is also read as `host_node_search`, ... */
    readonly hostNode: string
  }
  /** Media files of the host's API nodes (POST /customers/storage), kept in the archives' store. */
  readonly media: {
    readonly maxFileBytes: number
    /** The most a user's live files may hold together. */
    readonly maxUserBytes: number
    /** How long a file lives after its creation. */
    readonly fileTtlSeconds: number
    /** How often expired files are swept (their bytes and their rows). */
    readonly sweepIntervalMillis: number
  }
  /** What is read of a body after an early answer (a 413) before the connection closes (RefusedBodies.ts). */
  readonly refusedBodies: {
    readonly drainBytes: number
    readonly drainMillis: number
  }
  /** Connection limits of the HTTP server (Server.ts `makeHttpServer`). */
  readonly http: {
    /** Longest a request's line and headers may take to arrive. */
    readonly headersTimeoutMillis: number
    /** Longest a request's body may take to arrive after its headers, streamed uploads excepted. */
    readonly requestTimeoutMillis: number
    /** Longest a connection waits for its next request after an answer. */
    readonly keepAliveTimeoutMillis: number
    /** Longest a connection may stay silent while no request of it is being worked on. */
    readonly idleTimeoutMillis: number
    /** Longest a streamed upload (archives, media, music video) may stay silent; it has no overall limit. */
    readonly uploadIdleTimeoutMillis: number
  }
  /** Edge pieces left out, to measure what they cost (Http/EdgeOff.ts). */
  readonly edgeOff: ReadonlySet<OptionalPiece>
  /** Prometheus metrics at `/metrics` (README, "Metrics"). */
  readonly metrics: {
    /** A port of its own that serves only `/metrics`; `None`: `/metrics` is on the main port when `token` is set. */
    readonly port: Option.Option<number>
    /** Where that port listens. */
    readonly host: string
    /** The bearer token `/metrics` asks for (on its own port too, when set). */
    readonly token: Option.Option<Redacted.Redacted>
  }
  /** OpenTelemetry traces exported over OTLP/HTTP JSON (README, "Tracing"). */
  readonly tracing: {
    /** Where spans are posted; `None`: no export. */
    readonly tracesUrl: Option.Option<string>
    readonly serviceName: string
    /** Headers of every export (a collector's credentials, say). */
    readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>
    /** How long ended spans wait before they are sent, as a batch. */
    readonly exportIntervalMillis: number
  }
  /** On SIGTERM or SIGINT, longest the requests in flight may take to finish before their connections are cut. */
  readonly shutdownGraceMillis: number
  /** Temporary files a crash left behind: partial archive and media uploads, spooled videos. */
  readonly leftovers: {
    /** A temporary file untouched this long is no live upload's (see README). */
    readonly maxAgeMillis: number
    readonly sweepIntervalMillis: number
  }
  /** Web origins whose pages may call the API from a browser (Web/Cors.ts); an empty set sends no CORS headers. */
  readonly corsOrigins: CorsOrigins
}

/** An S3-compatible bucket (STORAGE=s3). */
export interface S3Settings {
  /** `None`: the provider's own endpoint for `region`. */
  readonly endpoint: Option.Option<string>
  readonly bucket: string
  readonly region: string
  /** Buckets addressed as `<endpoint>/<bucket>/<key>` rather than `<bucket>.<endpoint>/<key>` (most non-AWS stores). */
  readonly forcePathStyle: boolean
  /**
   * Tests and tools only: fixed credentials. `None` (always, from the environment): the SDK's
   * default chain, i.e. the standard AWS variables, shared files, or the instance's role.
   */
  readonly credentials: Option.Option<{ readonly accessKeyId: string; readonly secretAccessKey: Redacted.Redacted }>
  /** A public base (a CDN's) that downloads are sent to instead of presigned URLs. */
  readonly publicBaseUrl: Option.Option<string>
}

export type StorageBackend =
  | { readonly _tag: "local" }
  | ({ readonly _tag: "s3" } & S3Settings)

/** The steps of an archive upload, in order, at which a crash test may kill the process (Storage/Storage.ts). */
export const storageFaultSteps = ["after-temp-write", "after-fsync", "after-rename", "after-dir-fsync", "after-commit"] as const
export type StorageFaultStep = typeof storageFaultSteps[number]

/** A duration setting in whole milliseconds; at least 10 ms, since 0 would turn a limit off in Node. */
const seconds = (value: number) => Math.round(Math.max(0.01, value) * 1000)

/** The public repository host's REST API. */
const defaultRepohostApiUrl = "https://api.github.com"

/** A setting's value that is present but wrong: the message names the setting and says what it takes. */
const invalid = (message: string) => new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))

/** Checks or converts a setting's value; a failure's message becomes the configuration's error. */
const refine = <A, B>(f: (a: A) => Result.Result<B, string>) => Config.mapEffect((a: A) => Effect.fromResult(Result.mapError(f(a), invalid)))

const logLevels: Record<string, LogLevel.LogLevel> = {
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error"
}

const LogLevelConfig = Config.String("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  refine((raw) => {
    const level = logLevels[raw.toLowerCase()]
    return level
      ? Result.succeed(level)
      : Result.fail(`LOG_LEVEL must be one of debug, info, warn, error; got "${raw}"`)
  })
)

/** Pretty for a person at a terminal; logfmt, one line per entry, for whatever collects the output. */
const defaultLogFormat: LogFormat = process.stdout.isTTY === true ? "pretty" : "logfmt"

const LogFormatConfig = Config.Literals(logFormats, "LOG_FORMAT").pipe(Config.withDefault(defaultLogFormat))

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

const VendorModeConfig = Config.Literals(["live", "simulated"], "VENDOR_MODE").pipe(Config.withDefault("live"))
const RepohostModeConfig = Config.Literals(["live", "simulated"], "REPOHOST_MODE").pipe(Config.withDefault("live"))

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

const csv = (name: string) =>
  Config.String(name).pipe(
    Config.withDefault(""),
    Config.map((s) => new Set(s.split(",").map((x) => x.trim()).filter((x) => x !== "")))
  )

/** STORAGE and, under `s3`, its settings: a bucket is required, the rest has defaults. */
const StorageBackendConfig: Config.Config<StorageBackend> = Config.all({
  kind: Config.Literals(["local", "s3"], "STORAGE").pipe(Config.withDefault("local")),
  endpoint: optionalHttpUrl("S3_ENDPOINT"),
  bucket: optionalString("S3_BUCKET"),
  // the SDK's own variable as a fallback: the one a machine set up for AWS already has
  region: Config.orElse(Config.String("S3_REGION"), () => Config.String("AWS_REGION")).pipe(Config.withDefault("us-east-1")),
  forcePathStyle: Config.Boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false)),
  publicBaseUrl: optionalHttpUrl("ARCHIVE_PUBLIC_BASE_URL")
}).pipe(
  refine(({ kind, bucket, ...s3 }): Result.Result<StorageBackend, string> => {
    if (kind === "local") return Result.succeed({ _tag: "local" })
    if (Option.isNone(bucket)) return Result.fail("STORAGE=s3 needs S3_BUCKET, the bucket's name")
    return Result.succeed({ _tag: "s3", ...s3, bucket: bucket.value.trim(), credentials: Option.none() })
  })
)

export const appConfig: Config.Config<AppConfigShape> = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(8080)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault("./data"), Config.map((d) => path.resolve(d))),
  databaseUrl: optionalRedacted("DATABASE_URL"),
  publicBaseUrl: optionalString("PUBLIC_BASE_URL"),
  logLevel: LogLevelConfig,
  logFormat: LogFormatConfig,
  accessLog: Config.Boolean("ACCESS_LOG").pipe(Config.withDefault(true)),
  jwtSecret: optionalRedacted("AUTH_JWT_SECRET"),
  jwksUrl: optionalString("AUTH_JWKS_URL"),
  issuer: optionalString("AUTH_ISSUER"),
  audience: optionalString("AUTH_AUDIENCE"),
  adminSubjects: csv("ADMIN_SUBJECTS"),
  adminClaim: Config.String("AUTH_ADMIN_CLAIM").pipe(Config.withDefault("admin")),
  maxTokenLifetimeSeconds: Config.Int("AUTH_MAX_TOKEN_LIFETIME_SECONDS").pipe(Config.withDefault(30 * 24 * 60 * 60)),
  clockSkewSeconds: Config.Int("AUTH_CLOCK_SKEW_SECONDS").pipe(Config.withDefault(60)),
  authFailureLimit: Config.Int("AUTH_FAILURE_LIMIT").pipe(Config.withDefault(20)),
  authFailureWindowSeconds: Config.Finite("AUTH_FAILURE_WINDOW_SECONDS").pipe(Config.withDefault(60)),
  trustProxy: Config.Boolean("TRUST_PROXY").pipe(Config.withDefault(false)),
  listCacheTtlSeconds: Config.Finite("LIST_CACHE_TTL_SECONDS").pipe(Config.withDefault(60)),
  repohostApiUrl: Config.String("REPOHOST_API_URL").pipe(
    Config.withDefault(defaultRepohostApiUrl),
    refine((raw) => {
      const url = raw.trim() === "" ? defaultRepohostApiUrl : raw.trim()
      return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)
        ? Result.succeed(url.replace(/\/+$/, ""))
        : Result.fail(`REPOHOST_API_URL must be an http(s) URL; got "${raw}"`)
    })
  ),
  repohostWebHost: optionalString("REPOHOST_WEB_HOST"),
  repohostMode: RepohostModeConfig,
  vendorMode: VendorModeConfig,
  imageVendorBaseUrl: optionalHttpUrl("IMAGEVENDOR_BASE_URL"),
  imageVendorApiKey: optionalRedacted("IMAGEVENDOR_API_KEY"),
  imageVendorApiKeyHeader: Config.String("IMAGEVENDOR_API_KEY_HEADER").pipe(Config.withDefault("x-api-key")),
  musicVendorBaseUrl: optionalHttpUrl("MUSICVENDOR_BASE_URL"),
  musicVendorApiKey: optionalRedacted("MUSICVENDOR_API_KEY"),
  vendorTimeoutSeconds: Config.Finite("VENDOR_TIMEOUT_SECONDS").pipe(Config.withDefault(60)),
  storageBackend: StorageBackendConfig,
  storageDir: optionalString("STORAGE_DIR"),
  maxArchiveBytes: Config.Int("MAX_ARCHIVE_BYTES").pipe(Config.withDefault(100 * 1024 * 1024)),
  uploadUrlTtlSeconds: Config.Int("UPLOAD_URL_TTL_SECONDS").pipe(Config.withDefault(3600)),
  storageSigningSecret: optionalRedacted("STORAGE_SIGNING_SECRET"),
  // read only when set: unset (production) there is no fault and no default to get wrong
  storageFaultInjection: Config.option(Config.Literals(storageFaultSteps, "FAULT_INJECT_STORAGE")),
  hostNameAlias: aliasWord("HOST_NAME_ALIAS", "comfyui"),
  hostNodeAlias: aliasWord("HOST_NODE_ALIAS", "comfy_node"),
  mediaMaxFileBytes: Config.Int("MEDIA_MAX_FILE_BYTES").pipe(Config.withDefault(100 * 1024 * 1024)),
  mediaMaxUserBytes: Config.Int("MEDIA_MAX_USER_BYTES").pipe(Config.withDefault(1024 * 1024 * 1024)),
  mediaFileTtlSeconds: Config.Int("MEDIA_FILE_TTL_SECONDS").pipe(Config.withDefault(24 * 60 * 60)),
  mediaSweepIntervalSeconds: Config.Finite("MEDIA_SWEEP_INTERVAL_SECONDS").pipe(Config.withDefault(300)),
  refusedBodyDrainBytes: Config.Int("REFUSED_BODY_DRAIN_BYTES").pipe(Config.withDefault(64 * 1024 * 1024)),
  refusedBodyDrainSeconds: Config.Finite("REFUSED_BODY_DRAIN_SECONDS").pipe(Config.withDefault(30)),
  headersTimeoutSeconds: Config.Finite("HTTP_HEADERS_TIMEOUT_SECONDS").pipe(Config.withDefault(10)),
  requestTimeoutSeconds: Config.Finite("HTTP_REQUEST_TIMEOUT_SECONDS").pipe(Config.withDefault(60)),
  keepAliveTimeoutSeconds: Config.Finite("HTTP_KEEP_ALIVE_TIMEOUT_SECONDS").pipe(Config.withDefault(5)),
  idleTimeoutSeconds: Config.Finite("HTTP_IDLE_TIMEOUT_SECONDS").pipe(Config.withDefault(30)),
  uploadIdleTimeoutSeconds: Config.Finite("UPLOAD_IDLE_TIMEOUT_SECONDS").pipe(Config.withDefault(60)),
  edgeOff: Config.String("HTTP_EDGE_OFF").pipe(Config.withDefault(""), refine(parseEdgeOff)),
  shutdownGraceSeconds: Config.Finite("SHUTDOWN_GRACE_SECONDS").pipe(Config.withDefault(25)),
  tempFileMaxAgeSeconds: Config.Finite("TEMP_FILE_MAX_AGE_SECONDS").pipe(Config.withDefault(3600)),
  tempSweepIntervalSeconds: Config.Finite("TEMP_SWEEP_INTERVAL_SECONDS").pipe(Config.withDefault(600)),
  metricsPort: Config.option(Config.Port("METRICS_PORT")),
  metricsHost: optionalString("METRICS_HOST"),
  metricsToken: optionalRedacted("METRICS_TOKEN"),
  otlpEndpoint: optionalHttpUrl("OTEL_EXPORTER_OTLP_ENDPOINT"),
  otlpTracesEndpoint: optionalHttpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  otlpHeaders,
  otelServiceName: optionalString("OTEL_SERVICE_NAME"),
  // the OpenTelemetry batch span processor's variable, in milliseconds
  otelExportDelayMillis: Config.Int("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000)),
  corsOrigins: Config.String("CORS_ORIGINS").pipe(
    Config.withDefault(""),
    refine(parseCorsOrigins)
  )
}).pipe(
  Config.map((c) => ({
    port: c.port,
    host: c.host,
    dataDir: c.dataDir,
    databaseUrl: c.databaseUrl,
    publicBaseUrl: Option.getOrElse(c.publicBaseUrl, () => `http://localhost:${c.port}`).replace(/\/+$/, ""),
    logLevel: c.logLevel,
    logFormat: c.logFormat,
    accessLog: c.accessLog,
    auth: {
      jwtSecret: c.jwtSecret,
      jwksUrl: c.jwksUrl,
      issuer: c.issuer,
      audience: c.audience,
      adminSubjects: c.adminSubjects,
      adminClaim: c.adminClaim,
      maxTokenLifetimeSeconds: Math.max(1, c.maxTokenLifetimeSeconds),
      clockSkewSeconds: Math.max(0, c.clockSkewSeconds),
      failureLimit: Math.max(1, c.authFailureLimit),
      failureWindowMillis: Math.max(0.001, c.authFailureWindowSeconds) * 1000
    },
    trustProxy: c.trustProxy,
    listCacheTtlMillis: Math.max(0, c.listCacheTtlSeconds) * 1000,
    repohost: {
      apiUrl: c.repohostApiUrl,
      timeoutMillis: 10_000,
      // the API of a host is commonly served from its `api.` subdomain
      webHost: Option.getOrElse(c.repohostWebHost, () => new URL(c.repohostApiUrl).hostname.replace(/^api\./, ""))
        .toLowerCase()
    },
    repohostMode: c.repohostMode,
    vendorMode: c.vendorMode,
    imageVendor: {
      baseUrl: c.imageVendorBaseUrl,
      apiKey: c.imageVendorApiKey,
      apiKeyHeader: c.imageVendorApiKeyHeader.trim() || "x-api-key"
    },
    musicVendor: { baseUrl: c.musicVendorBaseUrl, apiKey: c.musicVendorApiKey },
    vendorTimeoutMillis: Math.max(1, c.vendorTimeoutSeconds) * 1000,
    streamKeepAliveMillis: 30_000,
    storage: {
      backend: c.storageBackend,
      dir: Option.getOrElse(Option.map(c.storageDir, (d) => path.resolve(d)), () => path.join(c.dataDir, "archives")),
      maxArchiveBytes: Math.max(1, c.maxArchiveBytes),
      uploadUrlTtlSeconds: Math.max(1, c.uploadUrlTtlSeconds),
      signingSecret: c.storageSigningSecret,
      faultInjection: c.storageFaultInjection
    },
    aliases: { hostName: c.hostNameAlias, hostNode: c.hostNodeAlias },
    media: {
      maxFileBytes: Math.max(1, c.mediaMaxFileBytes),
      maxUserBytes: Math.max(1, c.mediaMaxUserBytes),
      fileTtlSeconds: Math.max(1, c.mediaFileTtlSeconds),
      sweepIntervalMillis: Math.max(0.01, c.mediaSweepIntervalSeconds) * 1000
    },
    refusedBodies: {
      drainBytes: Math.max(0, c.refusedBodyDrainBytes),
      drainMillis: seconds(c.refusedBodyDrainSeconds)
    },
    http: {
      headersTimeoutMillis: seconds(c.headersTimeoutSeconds),
      requestTimeoutMillis: seconds(c.requestTimeoutSeconds),
      keepAliveTimeoutMillis: seconds(c.keepAliveTimeoutSeconds),
      idleTimeoutMillis: seconds(c.idleTimeoutSeconds),
      uploadIdleTimeoutMillis: seconds(c.uploadIdleTimeoutSeconds)
    },
    edgeOff: c.edgeOff,
    shutdownGraceMillis: seconds(c.shutdownGraceSeconds),
    metrics: {
      port: c.metricsPort,
      host: Option.getOrElse(c.metricsHost, () => c.host),
      token: c.metricsToken
    },
    tracing: {
      // the signal-specific variable is the whole URL; the general one is a base (OTLP exporter specification)
      tracesUrl: Option.orElse(c.otlpTracesEndpoint, () => Option.map(c.otlpEndpoint, (base) => `${base}/v1/traces`)),
      serviceName: Option.getOrElse(c.otelServiceName, () => "node-registry"),
      headers: c.otlpHeaders,
      exportIntervalMillis: Math.max(10, c.otelExportDelayMillis)
    },
    leftovers: {
      maxAgeMillis: seconds(c.tempFileMaxAgeSeconds),
      sweepIntervalMillis: seconds(c.tempSweepIntervalSeconds)
    },
    corsOrigins: c.corsOrigins
  }))
)

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
