/**
 * A loopback OIDC issuer, as a CI system's token service is to the registry: a discovery document
 * at `/.well-known/openid-configuration` naming its JWK set, the set itself, and identity tokens
 * signed with its current key. `rotate()` replaces the key (the old one leaves the set), as an
 * issuer rotating its keys does; `forge` signs with a key the issuer never published.
 */
import { Context, Effect, Layer } from "effect"
import * as jose from "jose"
import * as http from "node:http"
import { randomUUID } from "node:crypto"

interface Key {
  readonly kid: string
  readonly privateKey: jose.CryptoKey
  readonly jwk: jose.JWK
}

export interface SignOptions {
  /** Seconds from now; negative for a token that has expired. Default 300. */
  readonly expiresIn?: number
  /** Seconds from now before which the token is not valid. */
  readonly notBefore?: number
  /** Sign with a key the issuer never published, under its current key id. */
  readonly forge?: boolean
  /** The key id the header names instead of the signing key's. */
  readonly kid?: string
}

export interface OidcIssuerShape {
  /** The issuer URL: the tokens' `iss`. */
  readonly url: string
  /** Fetches of the key set so far. */
  readonly keyFetches: () => number
  /** Signs `claims` as an identity token (with `iat`, `exp`, `nbf`, and `iss` and a fresh `jti` unless given). */
  readonly sign: (claims: jose.JWTPayload, options?: SignOptions) => Promise<string>
  /** A new signing key replaces the current one in the key set. */
  readonly rotate: () => Promise<void>
}

const makeKey = async (): Promise<Key> => {
  const { privateKey, publicKey } = await jose.generateKeyPair("ES256", { extractable: true })
  const kid = randomUUID()
  return { kid, privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } }
}

export class OidcIssuer extends Context.Service<OidcIssuer, OidcIssuerShape>()("test/OidcIssuer") {
  static readonly layer = Layer.effect(
    OidcIssuer,
    Effect.gen(function*() {
      let key = yield* Effect.promise(makeKey)
      const stranger = yield* Effect.promise(makeKey)
      let keyFetches = 0
      let url = ""
      const server = yield* Effect.acquireRelease(
        Effect.callback<http.Server>((resume) => {
          const s = http.createServer((req, res) => {
            const json = (body: unknown) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body))
            if (req.url === "/.well-known/openid-configuration") return json({ issuer: url, jwks_uri: `${url}/keys` })
            if (req.url === "/keys") {
              keyFetches++
              return json({ keys: [key.jwk] })
            }
            res.writeHead(404).end()
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.callback<void>((resume) => {
          s.closeAllConnections()
          s.close(() => resume(Effect.void))
        })
      )
      url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
      return {
        url,
        keyFetches: () => keyFetches,
        sign: (claims, options = {}) => {
          const now = Math.floor(Date.now() / 1000)
          const signer = options.forge === true ? { ...stranger, kid: key.kid } : key
          return new jose.SignJWT({ jti: randomUUID(), ...claims })
            .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: options.kid ?? signer.kid })
            .setIssuer(claims.iss ?? url)
            .setIssuedAt(now)
            .setExpirationTime(now + (options.expiresIn ?? 300))
            .setNotBefore(now + (options.notBefore ?? 0))
            .sign(signer.privateKey)
        },
        rotate: async () => {
          key = await makeKey()
        }
      }
    })
  )
}

/** The claims GitHub Actions puts in a run's identity token, for `owner/name`'s workflow file. */
export const githubClaims = (
  audience: string,
  options: {
    readonly repository: string
    readonly workflow?: string
    readonly ref?: string
    readonly sha?: string
    readonly runId?: string
    readonly environment?: string
  }
): jose.JWTPayload => {
  const ref = options.ref ?? "refs/tags/v1.0.0"
  const workflow = options.workflow ?? "publish.yml"
  return {
    aud: audience,
    sub: `repo:${options.repository}:ref:${ref}`,
    repository: options.repository,
    repository_owner: options.repository.split("/")[0],
    workflow_ref: `${options.repository}/.github/workflows/${workflow}@${ref}`,
    job_workflow_ref: `${options.repository}/.github/workflows/${workflow}@${ref}`,
    ref,
    ref_type: ref.startsWith("refs/tags/") ? "tag" : "branch",
    sha: options.sha ?? "0123456789abcdef0123456789abcdef01234567",
    run_id: options.runId ?? "4242",
    run_attempt: "1",
    event_name: "push",
    ...(options.environment === undefined ? {} : { environment: options.environment })
  }
}

/** The claims GitLab CI/CD puts in a job's ID token, for the project at `path`. */
export const gitlabClaims = (
  audience: string,
  host: string,
  options: { readonly project: string; readonly ciFile?: string; readonly ref?: string; readonly pipelineId?: string }
): jose.JWTPayload => {
  const refPath = options.ref ?? "refs/heads/main"
  return {
    aud: audience,
    sub: `project_path:${options.project}:ref_type:branch:ref:main`,
    project_path: options.project,
    namespace_path: options.project.split("/").slice(0, -1).join("/"),
    ref: refPath.replace(/^refs\/(heads|tags)\//, ""),
    ref_type: refPath.startsWith("refs/tags/") ? "tag" : "branch",
    ref_path: refPath,
    sha: "89abcdef0123456789abcdef0123456789abcdef",
    pipeline_id: options.pipelineId ?? "777",
    ci_config_ref_uri: `${host}/${options.project}//${options.ciFile ?? ".gitlab-ci.yml"}@${refPath}`
  }
}
