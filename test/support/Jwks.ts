/**
 * A loopback identity provider for tests: an RS256 key pair made with `jose` and a tiny `node:http`
 * server answering its public JWK set, so the service can be configured with `auth.jwksUrl`.
 */
import { Context, Effect, Layer } from "effect"
import * as jose from "jose"
import * as http from "node:http"

export interface JwksServerShape {
  /** Where the public JWK set is served. */
  readonly url: string
  readonly kid: string
  readonly privateKey: jose.CryptoKey
  /** The public key as SPKI PEM text (what an algorithm-confusion attacker would use as an HMAC secret). */
  readonly publicKeyPem: string
  /** How many times the JWK set was fetched. */
  readonly hits: () => number
  /** Signs claims with the provider's private key (RS256, with its `kid`). */
  readonly sign: (
    claims: jose.JWTPayload,
    options?: { readonly expiresIn?: string | number; readonly kid?: string }
  ) => Promise<string>
}

export class JwksServer extends Context.Service<JwksServer, JwksServerShape>()("test/JwksServer") {
  static readonly layer = Layer.effect(
    JwksServer,
    Effect.gen(function*() {
      const { privateKey, publicKey } = yield* Effect.promise(() => jose.generateKeyPair("RS256", { extractable: true }))
      const kid = "test-key-1"
      const jwk = { ...(yield* Effect.promise(() => jose.exportJWK(publicKey))), kid, alg: "RS256", use: "sig" }
      const publicKeyPem = yield* Effect.promise(() => jose.exportSPKI(publicKey))
      const body = JSON.stringify({ keys: [jwk] })
      let hits = 0
      const server = yield* Effect.acquireRelease(
        Effect.callback<http.Server>((resume) => {
          const s = http.createServer((req, res) => {
            if (req.url === "/.well-known/jwks.json") {
              hits++
              res.writeHead(200, { "content-type": "application/json" }).end(body)
            } else {
              res.writeHead(404).end()
            }
          })
          s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
        }),
        (s) => Effect.callback<void>((resume) => {
          s.closeAllConnections()
          s.close(() => resume(Effect.void))
        })
      )
      const { port } = server.address() as { port: number }
      return {
        url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
        kid,
        privateKey,
        publicKeyPem,
        hits: () => hits,
        sign: (claims, options) =>
          new jose.SignJWT(claims)
            .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: options?.kid ?? kid })
            .setIssuedAt()
            .setExpirationTime(options?.expiresIn ?? "10m")
            .sign(privateKey)
      }
    })
  )
}
