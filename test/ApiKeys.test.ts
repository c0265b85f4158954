/**
 * User API keys: POST/GET/DELETE /customers/api-keys over real HTTP (the anchor's paths and shapes:
 * comfy-cli's vendored openapi.yml, `createCustomerAPIKey`, `listCustomerAPIKeys`,
 * `deleteCustomerAPIKey`; the registry's earlier /users/api-keys answers the same; the shapes
 * registry-web's `src/api/generated.ts` types as `APIKeyWithPlaintext` and `APIKey`), and the
 * `X-API-KEY` header the host's API nodes send when the user has no login token
 * (`comfy_api_nodes/util/_helpers.py`, `get_auth_header`): it authenticates its user on media
 * storage and the media proxy until it is revoked, and not a moment after.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as fc from "fast-check"
import { ApiKeyList, CreatedApiKey } from "../src/Domain/ApiKey.ts"
import { decodeExact, isoMillis, uuidPattern } from "./support/Catalogue.ts"
import { bearerClient } from "./support/Client.ts"
import { query } from "./support/Db.ts"
import { expectError, expectStatus, send, sendText } from "./support/Http.ts"
import { forAll } from "./support/Property.ts"
import { type Running, Service } from "./support/Service.ts"

const prefix = "rgak_"

const decodeCreated = decodeExact(CreatedApiKey)
const decodeList = decodeExact(ApiKeyList)

/** A signed-in user's bearer token (the user is recorded by the first call). */
const tokenOf = (service: Running, sub: string) => Effect.promise(() => service.token({ sub }))

const create = (service: Running, jwt: string, body: unknown) =>
  Effect.map(send(service, "POST", "/customers/api-keys", { token: jwt, body }), (answer) => {
    expectStatus(answer, 201, "create an API key")
    return decodeCreated(answer.body).api_key
  })

/** What the host's API nodes send to media storage: JSON with only the X-API-KEY header. */
const storeWithKey = (service: Running, key: string) =>
  send(service, "POST", "/customers/storage", {
    body: { file_name: "uploaded_image.png", content_type: "image/png" },
    headers: { "X-API-KEY": key, accept: "application/json" }
  })

layer(Service.layer((c) => ({ ...c, vendorMode: "simulated" })), { excludeTestServices: true })("API keys", (it) => {
  it.effect("a key is shown once with its prefix and 256 random bits; only its hash is stored", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "kim")
      const created = yield* create(service, jwt, { name: "laptop", description: "the host on my laptop" })
      expect(created.plaintext_key).toMatch(/^rgak_[A-Za-z0-9_-]{43}$/)
      expect(created.id).toMatch(uuidPattern)
      expect(created.name).toBe("laptop")
      expect(created.description).toBe("the host on my laptop")
      expect(created.key_prefix).toBe(`${prefix}…${created.plaintext_key.slice(-4)}`)
      expect(created.created_at).toMatch(isoMillis)

      const rows = yield* query<Record<string, unknown>>(service, "SELECT * FROM api_keys WHERE id = $1", [created.id])
      expect(JSON.stringify(rows)).not.toContain(created.plaintext_key.slice(prefix.length))
      expect(rows[0]!.key_hash).toEqual(createHash("sha256").update(created.plaintext_key).digest())

      // two keys never repeat
      const again = yield* create(service, jwt, { name: "laptop" })
      expect(again.plaintext_key).not.toBe(created.plaintext_key)
    }))

  it.effect("the typed client lists a user's own keys masked and revokes them; another's are 404", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const lea = yield* bearerClient(service, yield* tokenOf(service, "lea"))
      const max = yield* bearerClient(service, yield* tokenOf(service, "max"))
      const first = (yield* lea.api.apiKeys.createApiKey({ payload: { name: "one" } })).api_key
      const second = (yield* lea.api.apiKeys.createApiKey({ payload: { name: "two" } })).api_key
      const maxs = (yield* max.api.apiKeys.createApiKey({ payload: { name: "mine" } })).api_key

      const listed = yield* lea.api.apiKeys.listApiKeys()
      expect(listed.api_keys.map((k) => k.id)).toEqual([first.id, second.id])
      expect(listed.api_keys.map((k) => k.key_prefix)).toEqual([first.key_prefix, second.key_prefix])
      expect(JSON.stringify(listed)).not.toContain(first.plaintext_key)

      // the wire form: the anchor's `{api_keys: [...]}`, no value in it
      const raw = yield* send(service, "GET", "/customers/api-keys", { token: yield* tokenOf(service, "lea") })
      expect(Object.keys(decodeList(raw.body).api_keys[0]!).sort()).toEqual(["created_at", "id", "key_prefix", "name"])

      const lost = yield* max.api.apiKeys.revokeApiKey({ params: { keyId: first.id } }).pipe(Effect.flip)
      expect(lost._tag).toBe("NotFound")
      yield* lea.api.apiKeys.revokeApiKey({ params: { keyId: first.id } })
      expect((yield* lea.api.apiKeys.listApiKeys()).api_keys.map((k) => k.id)).toEqual([second.id])
      expect((yield* lea.api.apiKeys.revokeApiKey({ params: { keyId: first.id } }).pipe(Effect.flip))._tag).toBe("NotFound")
      expect((yield* lea.api.apiKeys.revokeApiKey({ params: { keyId: "not-a-uuid" } }).pipe(Effect.flip))._tag).toBe("NotFound")
      expect((yield* max.api.apiKeys.listApiKeys()).api_keys.map((k) => k.id)).toEqual([maxs.id])
    }))

  it.effect("X-API-KEY authenticates as its user until revoked, then 401 at once, like a wrong bearer token", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "noa")
      const key = (yield* create(service, jwt, { name: "host" })).plaintext_key

      expectStatus(yield* storeWithKey(service, key), 200, "storage with the key")
      const files = yield* query<{ owner_id: string }>(service, "SELECT owner_id FROM media_files")
      expect(files.map((f) => f.owner_id)).toContain("noa")

      const [revokedKey] = (yield* send(service, "GET", "/customers/api-keys", { token: jwt }).pipe(
        Effect.map((a) => decodeList(a.body).api_keys)
      ))
      expectStatus(yield* send(service, "DELETE", `/customers/api-keys/${revokedKey!.id}`, { token: jwt }), 204, "revoke")
      // the same answer as a wrong bearer token: 401, ErrorResponse with `unauthorized`
      expectError(yield* storeWithKey(service, key), 401, "unauthorized")
      expectError(
        yield* send(service, "POST", "/customers/storage", { token: "not.a.jwt", body: { file_name: "a.png" } }),
        401,
        "unauthorized"
      )
      expectError(yield* storeWithKey(service, `${prefix}${"A".repeat(43)}`), 401, "unauthorized")
      expectError(yield* storeWithKey(service, "anything"), 401, "unauthorized")
    }))

  it.effect("Authorization is read first; a key cannot manage keys; no credential at all is 401", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "ora")
      const key = (yield* create(service, jwt, { name: "host" })).plaintext_key
      // a wrong bearer token is not rescued by a good key
      expectError(
        yield* send(service, "POST", "/customers/storage", {
          token: "not.a.jwt",
          body: { file_name: "a.png" },
          headers: { "X-API-KEY": key }
        }),
        401,
        "unauthorized"
      )
      expectError(yield* send(service, "GET", "/customers/api-keys", { headers: { "X-API-KEY": key } }), 401, "unauthorized")
      expectError(yield* send(service, "GET", "/users/api-keys", { headers: { "X-API-KEY": key } }), 401, "unauthorized")
      expectError(yield* send(service, "POST", "/customers/storage", { body: { file_name: "a.png" } }), 401, "unauthorized")
      expectError(
        yield* send(service, "POST", "/customers/storage", { body: { file_name: "a.png" }, headers: { "X-API-KEY": "" } }),
        401,
        "unauthorized"
      )
    }))

  it.effect("the earlier /users/api-keys paths are the same routes: one set of keys, the same answers", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const jwt = yield* tokenOf(service, "pia")
      // the anchor's CreateAPIKeyRequest {name, description}: 201 {api_key: APIKeyWithPlaintext}
      const made = yield* create(service, jwt, { name: "old client", description: "made at the anchor's path" })
      const earlier = yield* send(service, "POST", "/users/api-keys", { token: jwt, body: { name: "earlier" } })
      const madeEarlier = decodeCreated(expectStatus(earlier, 201, "create at the earlier path").body).api_key
      const listNow = yield* sendText(service, "GET", "/customers/api-keys", { token: jwt })
      const listBefore = yield* sendText(service, "GET", "/users/api-keys", { token: jwt })
      expect(listBefore.text).toBe(listNow.text)
      expect(decodeList(JSON.parse(listNow.text)).api_keys.map((k) => k.id)).toEqual([made.id, madeEarlier.id])
      // revoked at either path, gone at both
      expectStatus(yield* send(service, "DELETE", `/users/api-keys/${made.id}`, { token: jwt }), 204, "revoke, earlier path")
      expectError(yield* send(service, "DELETE", `/customers/api-keys/${made.id}`, { token: jwt }), 404, "not_found")
      expectStatus(yield* send(service, "DELETE", `/customers/api-keys/${madeEarlier.id}`, { token: jwt }), 204, "revoke")
      expect(decodeList((yield* send(service, "GET", "/users/api-keys", { token: jwt })).body).api_keys).toEqual([])
      // the document names the anchor's path only
      const document = JSON.parse((yield* sendText(service, "GET", "/openapi.json")).text) as { paths: Record<string, unknown> }
      expect(Object.keys(document.paths).filter((p) => p.includes("api-keys")).sort()).toEqual(["/customers/api-keys", "/customers/api-keys/{keyId}"])
    }))

  const text = (max: number) => fc.string({ maxLength: max + 20 })
  let runs = 0

  it.effect(
    "creation validates its body: a name of 1-100 characters and a description of at most 1000, no NUL",
    () =>
      forAll(
        {
          name: fc.option(text(100), { nil: undefined }),
          description: fc.option(fc.oneof(text(1000), fc.string({ minLength: 990, maxLength: 1010 })), { nil: undefined }),
          nul: fc.boolean()
        },
        ({ name, description, nul }) =>
          Effect.gen(function*() {
            const service = yield* Service
            const jwt = yield* tokenOf(service, `prop-${runs++}`)
            const named = name === undefined ? undefined : nul ? `${name}\u0000` : name
            const body = { ...(named === undefined ? {} : { name: named }), ...(description === undefined ? {} : { description }) }
            const valid = named !== undefined && named.length >= 1 && named.length <= 100 && !named.includes("\u0000") &&
              (description === undefined || (description.length <= 1000 && !description.includes("\u0000")))
            const answer = yield* send(service, "POST", "/customers/api-keys", { token: jwt, body })
            if (valid) {
              expectStatus(answer, 201, JSON.stringify(body))
              expect(decodeCreated(answer.body).api_key.name).toBe(named)
            } else {
              expectError(answer, 400, "bad_request")
            }
            const stored = yield* query(service, "SELECT 1 FROM api_keys k WHERE k.user_id = $1", [`prop-${runs - 1}`])
            expect(stored.length).toBe(valid ? 1 : 0)
          }),
        { numRuns: 40 }
      ),
    120_000
  )
})
