import { Config, ConfigError, Context, Effect, Either, Layer, LogLevel, Option, Redacted } from "effect"
import * as path from "node:path"

/** Every setting of the service, read once from the environment (see the README's table). */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly publicBaseUrl: string
  readonly logLevel: LogLevel.LogLevel
  readonly auth: {
    readonly jwtSecret: Option.Option<Redacted.Redacted>
    readonly jwksUrl: Option.Option<string>
    readonly issuer: Option.Option<string>
    readonly audience: Option.Option<string>
    readonly adminSubjects: ReadonlySet<string>
    readonly adminClaim: string
  }
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
}

/** The public repository host's REST API. */
const defaultRepohostApiUrl = "https://api.github.com"

const logLevels: Record<string, LogLevel.LogLevel> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
}

const LogLevelConfig = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((raw) => {
    const level = logLevels[raw.toLowerCase()]
    return level
      ? Either.right(level)
      : Either.left(ConfigError.InvalidData([], `LOG_LEVEL must be one of debug, info, warn, error; got "${raw}"`))
  })
)

const optionalString = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")))

const optionalRedacted = (name: string) =>
  Config.option(Config.redacted(name)).pipe(
    Config.map(Option.filter((s) => Redacted.value(s).trim() !== ""))
  )

const csv = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map((s) => new Set(s.split(",").map((x) => x.trim()).filter((x) => x !== "")))
  )

export const appConfig: Config.Config<AppConfigShape> = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(8080)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data"), Config.map((d) => path.resolve(d))),
  databaseUrl: optionalRedacted("DATABASE_URL"),
  publicBaseUrl: optionalString("PUBLIC_BASE_URL"),
  logLevel: LogLevelConfig,
  jwtSecret: optionalRedacted("AUTH_JWT_SECRET"),
  jwksUrl: optionalString("AUTH_JWKS_URL"),
  issuer: optionalString("AUTH_ISSUER"),
  audience: optionalString("AUTH_AUDIENCE"),
  adminSubjects: csv("ADMIN_SUBJECTS"),
  adminClaim: Config.string("AUTH_ADMIN_CLAIM").pipe(Config.withDefault("admin")),
  listCacheTtlSeconds: Config.number("LIST_CACHE_TTL_SECONDS").pipe(Config.withDefault(60)),
  repohostApiUrl: Config.string("REPOHOST_API_URL").pipe(
    Config.withDefault(defaultRepohostApiUrl),
    Config.mapOrFail((raw) => {
      const url = raw.trim() === "" ? defaultRepohostApiUrl : raw.trim()
      return URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)
        ? Either.right(url.replace(/\/+$/, ""))
        : Either.left(ConfigError.InvalidData([], `REPOHOST_API_URL must be an http(s) URL; got "${raw}"`))
    })
  ),
  repohostWebHost: optionalString("REPOHOST_WEB_HOST")
}).pipe(
  Config.map((c) => ({
    port: c.port,
    host: c.host,
    dataDir: c.dataDir,
    databaseUrl: c.databaseUrl,
    publicBaseUrl: Option.getOrElse(c.publicBaseUrl, () => `http://localhost:${c.port}`).replace(/\/+$/, ""),
    logLevel: c.logLevel,
    auth: {
      jwtSecret: c.jwtSecret,
      jwksUrl: c.jwksUrl,
      issuer: c.issuer,
      audience: c.audience,
      adminSubjects: c.adminSubjects,
      adminClaim: c.adminClaim
    },
    listCacheTtlMillis: Math.max(0, c.listCacheTtlSeconds) * 1000,
    repohost: {
      apiUrl: c.repohostApiUrl,
      timeoutMillis: 10_000,
      // the API of a host is commonly served from its `api.` subdomain
      webHost: Option.getOrElse(c.repohostWebHost, () => new URL(c.repohostApiUrl).hostname.replace(/^api\./, ""))
        .toLowerCase()
    }
  }))
)

export class AppConfig extends Context.Tag("AppConfig")<AppConfig, AppConfigShape>() {
  /** Reads the environment once. */
  static readonly layer = Layer.effect(AppConfig, appConfig)
  /** For tests and tools: the environment's settings with some replaced. */
  static readonly layerWith = (overrides: (c: AppConfigShape) => AppConfigShape) =>
    Layer.effect(AppConfig, Effect.map(appConfig, overrides))
}
