/**
 * A loopback stand-in for the repository host's REST API (`GET /user`, `GET /repos/{owner}/{repo}`).
 * What it answers depends on the bearer token: each token is given a behaviour by the test, an
 * unknown token is refused with 401 like the real host does. Every request is recorded.
 */
import { Context, Effect, Layer } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { closeServer } from "./Loopback.ts"

export type Behaviour =
  /**
   * A valid token of `login`, who administers the repositories in `admin` and may read those in
   * `read` ("owner/repo", or "owner/*" for all of an owner's); other repositories are 404 to it.
   */
  | { readonly kind: "user"; readonly login: string; readonly admin?: ReadonlyArray<string>; readonly read?: ReadonlyArray<string> }
  /** 401, as for an unknown, expired or revoked token. */
  | { readonly kind: "invalid" }
  /** 403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` this many seconds ahead. */
  | { readonly kind: "quotaSpent"; readonly resetInSeconds: number }
  /** 429 with `retry-after`. */
  | { readonly kind: "tooManyRequests"; readonly retryAfter: number }
  /** A 5xx. */
  | { readonly kind: "error"; readonly status: number }
  /** Accepts the request and never answers. */
  | { readonly kind: "hang" }

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly userAgent: string | undefined
}

export interface Fake {
  /** The API base URL to configure the service with. */
  readonly url: string
  readonly behave: (token: string, behaviour: Behaviour) => void
  /** Delays every answer of `/repos/...` by this much (to hold concurrent claims in flight together). */
  readonly setRepoDelay: (millis: number) => void
  readonly requests: () => ReadonlyArray<RecordedRequest>
  readonly clearRequests: () => void
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
  res.end(text)
}

const start = () =>
  new Promise<{ server: http.Server; fake: Fake }>((resolve) => {
    const behaviours = new Map<string, Behaviour>()
    const recorded: Array<RecordedRequest> = []
    let repoDelay = 0

    const answer = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const path = (req.url ?? "/").split("?")[0]!
      const authorization = req.headers.authorization
      const token = /^Bearer (.+)$/.exec(authorization ?? "")?.[1]
      const behaviour: Behaviour = (token !== undefined && behaviours.get(token)) || { kind: "invalid" }
      switch (behaviour.kind) {
        case "hang":
          return
        case "invalid":
          return json(res, 401, { message: "Bad credentials" })
        case "quotaSpent":
          return json(res, 403, { message: "API rate limit exceeded" }, {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + behaviour.resetInSeconds)
          })
        case "tooManyRequests":
          return json(res, 429, { message: "Too many requests" }, { "retry-after": String(behaviour.retryAfter) })
        case "error":
          return json(res, behaviour.status, { message: "Server error" })
        case "user": {
          if (req.method !== "GET") return json(res, 404, { message: "Not Found" })
          if (path === "/user") return json(res, 200, { login: behaviour.login, id: 1 })
          const repo = /^\/repos\/([^/]+)\/([^/]+)$/.exec(path)
          if (!repo) return json(res, 404, { message: "Not Found" })
          const name = `${decodeURIComponent(repo[1]!)}/${decodeURIComponent(repo[2]!)}`.toLowerCase()
          const matches = (patterns: ReadonlyArray<string> | undefined) =>
            (patterns ?? []).some((p) => {
              const pattern = p.toLowerCase()
              return pattern.endsWith("/*") ? name.startsWith(pattern.slice(0, -1)) : pattern === name
            })
          const admin = matches(behaviour.admin)
          const read = admin || matches(behaviour.read)
          if (!read) return json(res, 404, { message: "Not Found" })
          return json(res, 200, {
            full_name: name,
            permissions: { admin, maintain: admin, push: admin, triage: admin, pull: true }
          })
        }
      }
    }

    const server = http.createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0]!
      recorded.push({
        method: req.method ?? "",
        path,
        authorization: req.headers.authorization,
        userAgent: req.headers["user-agent"]
      })
      req.resume()
      if (repoDelay > 0 && path.startsWith("/repos/")) setTimeout(() => answer(req, res), repoDelay)
      else answer(req, res)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        server,
        fake: {
          url: `http://127.0.0.1:${port}`,
          behave: (token, behaviour) => void behaviours.set(token, behaviour),
          setRepoDelay: (millis) => void (repoDelay = millis),
          requests: () => [...recorded],
          clearRequests: () => void (recorded.length = 0)
        }
      })
    })
  })

export class FakeRepohost extends Context.Service<FakeRepohost, Fake>()("test/FakeRepohost") {
  static readonly layer = Layer.effect(
    FakeRepohost,
    Effect.acquireRelease(Effect.promise(start), ({ server }) =>
      Effect.promise(() => closeServer(server))).pipe(Effect.map(({ fake }) => fake))
  )
}
