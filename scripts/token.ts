/**
 * Prints a development bearer token signed with the service's HS256 secret (AUTH_JWT_SECRET, or
 * the one generated in DATA_DIR). The token alone is the last line of standard output. It reads
 * the service's own settings (DATA_DIR, AUTH_*), so give it those of the service it is for:
 * `DATA_DIR=./data-demo npm run token -- --sub alice` for `npm run demo`'s. `--expires` may not
 * exceed AUTH_MAX_TOKEN_LIFETIME_SECONDS (30 days unless set), the longest the service accepts.
 *
 *   npm run token -- --sub <id> [--email <e>] [--name <n>] [--admin] [--expires 30d]
 */
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Option } from "effect"
import * as jose from "jose"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { mintToken } from "../src/Auth/Jwt.ts"
import { appConfig } from "../src/Config.ts"

const { values } = parseArgs({
  options: {
    sub: { type: "string" },
    email: { type: "string" },
    name: { type: "string" },
    admin: { type: "boolean", default: false },
    expires: { type: "string", default: "30d" }
  }
})

const main = async () => {
  if (!values.sub) {
    console.error("usage: npm run token -- --sub <id> [--email <e>] [--name <n>] [--admin] [--expires 30d]")
    process.exit(2)
  }
  const config = await Effect.runPromise(appConfig)
  if (Option.isSome(config.auth.jwksUrl)) {
    console.error("AUTH_JWKS_URL is set: tokens come from your identity provider, not from this command")
    process.exit(2)
  }
  const claims = { sub: values.sub, email: values.email, name: values.name, admin: values.admin }
  const token = await Effect.runPromise(Effect.provide(mintToken(config, claims, values.expires), NodeFileSystem.layer))
  // measured on the token itself, as the service will: jose reads the duration
  const { iat, exp } = jose.decodeJwt(token)
  if (exp! - iat! > config.auth.maxTokenLifetimeSeconds) {
    console.error(
      `--expires ${values.expires} is longer than AUTH_MAX_TOKEN_LIFETIME_SECONDS (${config.auth.maxTokenLifetimeSeconds} s): the service would refuse the token`
    )
    process.exit(2)
  }
  // named, since a token signed with another folder's key is refused (401) by the service
  const key = Option.isSome(config.auth.jwtSecret) ? "AUTH_JWT_SECRET" : path.join(config.dataDir, "jwt-secret")
  console.error(`token for ${values.sub}${values.admin ? " (site admin)" : ""}, valid for ${values.expires}, signed with ${key}:`)
  console.log(token)
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e)
  process.exit(1)
})
