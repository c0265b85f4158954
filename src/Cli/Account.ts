/**
 * `login`, `publisher create|show` and `token create|list|revoke`: the account side of the CLI,
 * each one call of the typed client with the saved login's bearer token.
 */
import { Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Publisher } from "../Domain/Publisher.ts"
import { CreatedToken, TokenSummary } from "../Domain/Token.ts"
import { writeLogin } from "./ConfigFile.ts"
import { usage } from "./Failure.ts"
import { day, fields, jsonOption, note, print, printJson, shortStatus, table } from "./Output.ts"
import { call, client, fromEnv } from "./Session.ts"

const text = (name: string, description: string) => Flag.String(name).pipe(Flag.withDescription(description))
const optionalText = (name: string, description: string) => text(name, description).pipe(Flag.optional)

/** The record's optional fields that were given. */
const given = <A extends Record<string, Option.Option<string>>>(fields: A): { [K in keyof A]?: string } =>
  Object.fromEntries(
    Object.entries(fields).flatMap(([key, value]) => (Option.isSome(value) ? [[key, value.value]] : []))
  ) as { [K in keyof A]?: string }

const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8").trim()
})

// --- login -----------------------------------------------------------------------------------------

export const login = Command.make(
  "login",
  {
    url: text("url", "Base URL of the registry, e.g. https://registry.example.com"),
    token: optionalText("token", "Bearer token (a JWT); `-` reads it from stdin; default $REGISTRY_TOKEN")
  },
  ({ url, token }) =>
    Effect.gen(function*() {
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        return yield* usage("bad_url", `--url ${url} is not an http(s) URL`)
      }
      const value = Option.isSome(token)
        ? token.value === "-" ? yield* readStdin : token.value
        : Option.getOrUndefined(yield* fromEnv("REGISTRY_TOKEN"))
      if (value === undefined || value === "") {
        return yield* usage("no_token", "no token: pass --token <jwt>, --token - (stdin) or set REGISTRY_TOKEN")
      }
      const base = url.replace(/\/+$/, "")
      const file = yield* writeLogin({ url: base, token: value })
      yield* print(`Logged in to ${base} (saved in ${file})`)
    })
).pipe(Command.withDescription("Save the registry's URL and your bearer token (in a file only you can read)"))

// --- publisher -------------------------------------------------------------------------------------

const printPublisher = (p: Publisher) =>
  Effect.gen(function*() {
    yield* print(fields([
      ["id", p.id],
      ["name", p.name],
      ["status", shortStatus(p.status)],
      ["description", p.description],
      ["website", p.website],
      ["support", p.support],
      ["source", p.source_code_repo],
      ["logo", p.logo],
      ["created", day(p.createdAt)]
    ]))
    if (p.members !== undefined && p.members.length > 0) {
      yield* print("")
      yield* print(table(["MEMBER", "ROLE", "NAME", "EMAIL"], p.members.map((m) => [m.id, m.role, m.user.name ?? "", m.user.email ?? ""])))
    }
  })

const publisherCreate = Command.make(
  "create",
  {
    id: text("id", "The publisher's id: lowercase letters, digits and '-'"),
    name: optionalText("name", "Display name"),
    description: optionalText("description", "What the publisher makes"),
    website: optionalText("website", "Website URL"),
    support: optionalText("support", "Where users get help"),
    logo: optionalText("logo", "Logo URL"),
    source: optionalText("source-code-repo", "Source repository URL"),
    json: jsonOption
  },
  ({ id, name, description, website, support, logo, source, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const payload = { id, ...given({ name, description, website, support, logo, source_code_repo: source }) }
      const created = yield* call("create publisher", registry.api.publishers.createPublisher({ payload }))
      if (json) return yield* printJson(Publisher, created)
      yield* print(`Created publisher ${created.id}`)
    })
).pipe(Command.withDescription("Create a publisher; you become its owner"))

const publisherShow = Command.make(
  "show",
  { id: Argument.String("publisherId"), json: jsonOption },
  ({ id, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const publisher = yield* call("get publisher", registry.api.publicPublishers.getPublisher({ params: { publisherId: id } }))
      yield* json ? printJson(Publisher, publisher) : printPublisher(publisher)
    })
).pipe(Command.withDescription("Show a publisher (members are shown to its members)"))

export const publisher = Command.make("publisher").pipe(
  Command.withDescription("Create and show publishers"),
  Command.withSubcommands([publisherCreate, publisherShow])
)

// --- token -----------------------------------------------------------------------------------------

const publisherIdArg = Argument.String("publisherId")

const tokenCreate = Command.make(
  "create",
  {
    publisherId: publisherIdArg,
    name: text("name", "A name for the token, e.g. ci"),
    description: optionalText("description", "What it is for"),
    json: jsonOption
  },
  ({ publisherId, name, description, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const created = yield* call(
        "create token",
        registry.api.tokens.createToken({ params: { publisherId }, payload: { name, ...given({ description }) } })
      )
      if (json) return yield* printJson(CreatedToken, created)
      yield* print(created.token)
      yield* note("This is the only time the token is shown: keep it (e.g. as REGISTRY_PAT in your CI's secrets).")
    })
).pipe(Command.withDescription("Create a personal access token for publishing; prints its value, shown only once"))

const tokenList = Command.make(
  "list",
  { publisherId: publisherIdArg, json: jsonOption },
  ({ publisherId, json }) =>
    Effect.gen(function*() {
      const registry = yield* client
      const tokens = yield* call("list tokens", registry.api.tokens.listTokens({ params: { publisherId } }))
      if (json) return yield* printJson(Schema.Array(TokenSummary), tokens)
      yield* print(table(
        ["ID", "NAME", "TOKEN", "CREATED", "LAST USED", "DESCRIPTION"],
        tokens.map((t) => [t.id, t.name, t.token, day(t.createdAt), day(t.lastUsedAt), t.description ?? ""])
      ))
    })
).pipe(Command.withDescription("List a publisher's tokens (values masked)"))

const tokenRevoke = Command.make(
  "revoke",
  { publisherId: publisherIdArg, tokenId: Argument.String("tokenId") },
  ({ publisherId, tokenId }) =>
    Effect.gen(function*() {
      const registry = yield* client
      yield* call("revoke token", registry.api.tokens.revokeToken({ params: { publisherId, tokenId } }))
      yield* print(`Revoked token ${tokenId}`)
    })
).pipe(Command.withDescription("Revoke a token at once"))

export const token = Command.make("token").pipe(
  Command.withDescription("Personal access tokens of a publisher"),
  Command.withSubcommands([tokenCreate, tokenList, tokenRevoke])
)
