/**
 * The repository host's REST API, as node claiming needs it: who a VCS token's user is, and
 * whether that user administers a repository. The host's answers are reduced here to what the
 * claim decides on; its failures to three errors (token refused, rate-limited, unavailable).
 *
 * The VCS token travels as `Redacted` and only ever leaves in the Authorization header: it is
 * never logged, and nothing logged here carries the request.
 *
 * With `REPOHOST_MODE=simulated` (a server setting, never a request's) a built-in host answers
 * instead, for the repositories of `simulatedWebHost` only: a reserved example domain that no
 * real repository lives on, so the simulation can never hand over a real repository's node.
 */
import { HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { NodeHttpClient } from "@effect/platform-node"
import { Clock, Context, Data, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import { retryAfterSeconds } from "../Vendors/RetryAfter.ts"
import { traced } from "../Tracing.ts"
import { measuredVendor } from "../Observability/Metrics.ts"

/** The host the simulated repository host answers for; seeded catalogues name it (RFC 2606 reserves it). */
export const simulatedWebHost = "repohost.example.com"

/** The user every VCS token belongs to on the simulated host. */
export const simulatedLogin = "simulated-user"

/** The host refused the token (401): it is unknown, expired or revoked. */
export class RepohostInvalidToken extends Data.TaggedError("RepohostInvalidToken")<{}> {
  override get message() {
    return "The repository host refused VCS_TOKEN"
  }
}

/** The host rate-limited us for `retryAfterSeconds`. */
export class RepohostRateLimited extends Data.TaggedError("RepohostRateLimited")<{
  readonly retryAfterSeconds: number
}> {
  override get message() {
    return "The repository host is rate-limiting requests; try again later"
  }
}

/** The host could not be reached, timed out, failed (5xx) or answered something unusable. */
export class RepohostUnavailable extends Data.TaggedError("RepohostUnavailable")<{
  readonly reason: string
}> {
  override get message() {
    return "The repository host is unavailable; try again later"
  }
}

export type RepohostError = RepohostInvalidToken | RepohostRateLimited | RepohostUnavailable

/** A repository on the host. */
export interface RepositoryRef {
  /** Lowercased host name, when the URL names one. */
  readonly host: string | undefined
  readonly owner: string
  readonly repo: string
}

const segment = /^[A-Za-z0-9_.-]+$/
const validRef = (host: string, owner: string, repo: string): Option.Option<RepositoryRef> =>
  segment.test(owner) && segment.test(repo) && repo !== "." && repo !== ".." && owner !== "." && owner !== ".."
    ? Option.some({ host: host.toLowerCase(), owner, repo })
    : Option.none()

const stripGit = (repo: string) => repo.replace(/\.git$/i, "")

/**
 * The owner and repository named by a node's `repository` field: `https://host/owner/repo`
 * (a `.git` suffix, trailing slashes and deeper paths such as `/tree/main` tolerated),
 * `ssh://git@host/owner/repo.git`, the scp-like `git@host:owner/repo.git`, or `host/owner/repo`
 * without a scheme. The caller checks that the host is the configured repository host's.
 */
export const parseRepositoryUrl = (raw: string): Option.Option<RepositoryRef> => {
  const text = raw.trim()
  const scp = /^[A-Za-z0-9_.-]+@([A-Za-z0-9.-]+):\/?([^/]+)\/([^/]+?)\/*$/.exec(text)
  if (scp) return validRef(scp[1]!, scp[2]!, stripGit(scp[3]!))
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`
  if (!URL.canParse(withScheme)) return Option.none()
  const url = new URL(withScheme)
  if (!/^(https?|ssh|git):$/.test(url.protocol)) return Option.none()
  const parts = url.pathname.split("/").filter((p) => p !== "")
  if (parts.length < 2) return Option.none()
  try {
    return validRef(url.hostname, decodeURIComponent(parts[0]!), stripGit(decodeURIComponent(parts[1]!)))
  } catch {
    return Option.none()
  }
}

const User = Schema.Struct({ login: Schema.String })
const Repository = Schema.Struct({
  permissions: Schema.optional(Schema.Struct({ admin: Schema.optional(Schema.Boolean) }))
})

/** The client's failures before any answer: the request was not sent, or not in full. */
const requestFailures: ReadonlySet<string> = new Set(["TransportError", "EncodeError", "InvalidUrlError"])

/** A rate-limit answer: 429, or a 403 that says the quota is spent or when to come back. */
const isRateLimit = (response: HttpClientResponse.HttpClientResponse) =>
  response.status === 429 ||
  (response.status === 403 &&
    (response.headers["x-ratelimit-remaining"]?.trim() === "0" || response.headers["retry-after"] !== undefined))

/**
 * The offline host: it knows every token, as the user `simulatedLogin`, who administers every
 * repository on `simulatedWebHost` and none elsewhere.
 */
const makeSimulated = Effect.gen(function*() {
  yield* Effect.logWarning(
    `WARNING: REPOHOST_MODE=simulated — node claims ask a built-in SIMULATED repository host: any VCS_TOKEN ` +
      `administers every repository on ${simulatedWebHost}; nodes on other hosts cannot be claimed`
  )
  return {
    webHost: simulatedWebHost,
    login: traced("Repohost.login")(function*(_token: Redacted.Redacted) {
      return simulatedLogin
    }),
    administers: traced("Repohost.administers")(function*(_token: Redacted.Redacted, { host }: RepositoryRef) {
      return host === simulatedWebHost
    })
  }
})

/**
 * The repository host's REST API (`REPOHOST_API_URL`), over Node's HTTP stack (undici), or the
 * simulated host when the operator sets `REPOHOST_MODE=simulated`. `webHost` is the host name of
 * the repository URLs it answers for.
 */
export class Repohost extends Context.Service<Repohost>()("Repohost", {
  make: Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.repohostMode === "simulated") return yield* makeSimulated
    const { apiUrl, timeoutMillis, webHost } = config.repohost
    const client = (yield* HttpClient.HttpClient).pipe(
      measuredVendor("repohost"),
      HttpClient.mapRequest((request) =>
        request.pipe(
          HttpClientRequest.prependUrl(apiUrl),
          HttpClientRequest.acceptJson,
          // the public host refuses requests without a user agent
          HttpClientRequest.setHeader("user-agent", "extension-registry")
        )
      )
    )

    const unavailable = (reason: string) => Effect.fail(new RepohostUnavailable({ reason }))

    /**
     * One GET with the token. A 2xx body is decoded with `schema`; the statuses in `passOn` are
     * answered as `None` for the caller to judge; the rest become errors. The whole exchange,
     * body included, is bounded by the configured timeout.
     */
    const get = <A, I>(
      path: string,
      token: Redacted.Redacted,
      schema: Schema.Codec<A, I>,
      passOn: ReadonlyArray<number>
    ): Effect.Effect<Option.Option<A>, RepohostError> =>
      Effect.gen(function*() {
        const response = yield* client.execute(HttpClientRequest.get(path).pipe(HttpClientRequest.bearerToken(token)))
        if (response.status >= 200 && response.status < 300) {
          return Option.some(yield* HttpClientResponse.schemaBodyJson(schema)(response))
        }
        if (response.status === 401) return yield* new RepohostInvalidToken()
        if (isRateLimit(response)) {
          const retryAfter = retryAfterSeconds(response.headers, yield* Clock.currentTimeMillis)
          yield* Effect.logWarning(`repository host rate limit reached (retry after ${retryAfter} s)`)
          return yield* new RepohostRateLimited({ retryAfterSeconds: retryAfter })
        }
        if (passOn.includes(response.status)) return Option.none()
        return yield* unavailable(
          response.status >= 500 ? `it answered ${response.status}` : `it answered ${response.status} unexpectedly`
        )
      }).pipe(
        Effect.catchTags({
          HttpClientError: (e) =>
            requestFailures.has(e.reason._tag)
              ? unavailable(`it could not be reached (${e.reason._tag.replace(/Error$/, "")})`)
              : unavailable("its answer could not be read"),
          SchemaError: () => unavailable("its answer did not have the expected shape")
        }),
        Effect.timeoutOrElse({
          duration: timeoutMillis,
          orElse: () => unavailable(`no answer within ${timeoutMillis} ms`)
        }),
        Effect.tapErrorTag("RepohostUnavailable", (e) => Effect.logWarning(`repository host unavailable: ${e.reason}`))
      )

    return {
      webHost,
      /** The login of the token's user (`GET /user`). */
      login: traced("Repohost.login")(function*(token: Redacted.Redacted) {
        // a 403 on /user is a token without the right to say who it is: as good as refused
        const user = yield* get("/user", token, User, [403])
        if (Option.isNone(user)) return yield* new RepohostInvalidToken()
        return user.value.login
      }),
      /**
       * Whether the token's user administers the repository (`GET /repos/{owner}/{repo}`,
       * `permissions.admin`). A repository the user cannot see, or that does not exist, is `false`.
       */
      administers: traced("Repohost.administers")(function*(token: Redacted.Redacted, { owner, repo }: RepositoryRef) {
        const repository = yield* get(`/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`, token, Repository, [403, 404])
        return Option.exists(repository, (r) => r.permissions?.admin === true)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Repohost, Repohost.make)
  static readonly layer = Repohost.layerWithoutDependencies.pipe(Layer.provide(NodeHttpClient.layerUndici))
}
