/**
 * The authorization matrix (CONTRACT.md, "Identity and roles" and "Operation rules"): every
 * endpoint behind the `Authentication` middleware, called by each kind of caller, answers the
 * status of the table below. Real HTTP, real PostgreSQL, a loopback fake of the repository host
 * for claims.
 *
 * Roles are memberships of the publisher under test (`matrix`): `olga` owns it, `adam` is an
 * admin, `mia` a member; `stan` belongs to no publisher; `root` is a site admin (admin claim) and a
 * member of nothing. The invalid token is a well-formed JWT of the owner signed with another key.
 *
 * User API keys (`X-API-KEY`) are four more actors, whose columns follow from the table: on an
 * endpoint that takes a key (`KeyOrBearerAuthentication`), the owner's and the stranger's keys
 * answer as their bearer tokens do, a wrong and a revoked key 401; every other endpoint refuses
 * every key with 401.
 *
 * Every cell is an independent call: a row builds a fresh request for each actor, with fresh
 * targets where the call changes something (a new node to claim, a new token to revoke, a new
 * member to remove, a new publisher to ban, ...), so no cell depends on what another did.
 */
import { expect, layer } from "@effect/vitest"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { Api } from "../src/Api.ts"
import { Authentication, KeyOrBearerAuthentication } from "../src/Domain/Auth.ts"
import type { ImageTaskKind } from "../src/Domain/Media.ts"
import { mintToken } from "../src/Auth/Jwt.ts"
import { addMember, type MemberRole, query } from "./support/Db.ts"
import { type Fake, FakeRepohost } from "./support/FakeRepohost.ts"
import { errorBodyProblem, fetchText } from "./support/Http.ts"
import { type Running, Service } from "./support/Service.ts"

// --- the matrix ----------------------------------------------------------------------------------

const actors = ["none", "invalid", "stranger", "member", "admin", "owner", "siteAdmin"] as const
type Actor = typeof actors[number]

/**
 * One row per protected endpoint (`METHOD path` as the Api declares it), a second row for the
 * listings' `include_banned=true`; one column per actor, in the order of `actors`.
 */
const matrix = [
  // endpoint                                                     none invalid stranger member admin owner siteAdmin
  ["GET /publishers/:publisherId/nodes",                           401, 401,    200,     200,   200,  200,  200],
  ["GET /publishers/:publisherId/nodes?include_banned=true",       401, 401,    403,     200,   200,  200,  200],
  ["GET /publishers/:publisherId/nodes/v2",                        401, 401,    200,     200,   200,  200,  200],
  ["GET /publishers/:publisherId/nodes/v2?include_banned=true",    401, 401,    403,     200,   200,  200,  200],
  ["POST /publishers",                                             401, 401,    201,     201,   201,  201,  201],
  ["PUT /publishers/:publisherId",                                 401, 401,    403,     403,   200,  200,  200],
  ["GET /users",                                                   401, 401,    200,     200,   200,  200,  200],
  ["GET /users/publishers",                                        401, 401,    200,     200,   200,  200,  200],
  ["DELETE /publishers/:publisherId",                              401, 401,    403,     403,   403,  204,  204],
  ["GET /publishers/:publisherId/permissions",                     401, 401,    200,     200,   200,  200,  200],
  ["GET /publishers/:publisherId/nodes/:nodeId/permissions",       401, 401,    200,     200,   200,  200,  200],
  ["POST /publishers/:publisherId/members",                        401, 401,    403,     403,   403,  201,  403],
  ["DELETE /publishers/:publisherId/members/:userId",              401, 401,    403,     403,   403,  204,  403],
  ["POST /publishers/:publisherId/tokens",                         401, 401,    403,     403,   201,  201,  403],
  ["GET /publishers/:publisherId/tokens",                          401, 401,    403,     403,   200,  200,  403],
  ["DELETE /publishers/:publisherId/tokens/:tokenId",              401, 401,    403,     403,   204,  204,  403],
  ["POST /publishers/:publisherId/nodes/:nodeId/trusted-publishers", 401, 401, 403,     403,   201,  201,  403],
  ["GET /publishers/:publisherId/nodes/:nodeId/trusted-publishers", 401, 401,  403,     403,   200,  200,  403],
  ["DELETE /publishers/:publisherId/nodes/:nodeId/trusted-publishers/:trustedPublisherId", 401, 401, 403, 403, 204, 204, 403],
  ["POST /publishers/:publisherId/nodes/:nodeId/claim-my-node",    401, 401,    403,     403,   200,  200,  403],
  ["POST /nodes/:nodeId/versions/:version/host-nodes",             401, 401,    403,     403,   403,  403,  201],
  ["PUT /nodes/:nodeId/versions/:version/host-nodes/:hostNodeName", 401, 401,   403,     403,   200,  200,  200],
  ["PUT /nodes/:nodeId/versions/:version/host-node-extract-status", 401, 401,  403,     403,   403,  403,  204],
  ["POST /admin/nodes",                                            401, 401,    403,     403,   403,  403,  201],
  ["PUT /admin/nodes/:nodeId",                                     401, 401,    403,     403,   403,  403,  200],
  ["PUT /admin/publishers/:publisherId",                           401, 401,    403,     403,   403,  403,  200],
  ["POST /publishers/:publisherId/ban",                            401, 401,    403,     403,   403,  403,  204],
  ["POST /publishers/:publisherId/nodes/:nodeId/ban",              401, 401,    403,     403,   403,  403,  204],
  ["POST /admin/generate-token",                                   401, 401,    403,     403,   403,  403,  200],
  ["POST /publishers/:publisherId/nodes",                          401, 401,    403,     403,   201,  201,  201],
  ["PUT /publishers/:publisherId/nodes/:nodeId",                   401, 401,    403,     403,   200,  200,  200],
  ["DELETE /publishers/:publisherId/nodes/:nodeId",                401, 401,    403,     403,   204,  204,  204],
  ["PUT /publishers/:publisherId/nodes/:nodeId/versions/:versionId", 401, 401,  403,     403,   200,  200,  200],
  ["DELETE /publishers/:publisherId/nodes/:nodeId/versions/:versionId", 401, 401, 403,   403,   204,  204,  204],
  ["POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/yank", 401, 401, 403, 403,   200,  200,  200],
  ["POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/unyank", 401, 401, 403, 403, 200,  200,  200],
  ["PUT /admin/nodes/:nodeId/versions/:version",                   401, 401,    403,     403,   403,  403,  200],
  ["GET /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review", 401, 401, 403, 200,  200,  200,  200],
  // the hosted version is Active: those allowed are told it is not held
  ["POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/messages", 401, 401, 403, 409, 409, 409, 409],
  ["POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/request", 401, 401, 403, 409, 409, 409, 409],
  ["GET /admin/held-versions",                                     401, 401,    403,     403,   403,  403,  200],
  ["POST /admin/nodes/:nodeId/versions/:versionId/review/decision", 401, 401,   403,     403,   403,  403,  409],
  ["GET /admin/audit-log",                                         401, 401,    403,     403,   403,  403,  200],
  ["POST /admin/rescan",                                           401, 401,    403,     403,   403,  403,  202],
  // media operations: any authenticated user; a task only to its owner (here: the owner's task)
  ["POST /proxy/imagevendor/v1/ai/image-style-transfer",           401, 401,    200,     200,   200,  200,  200],
  ["POST /proxy/imagevendor/v1/ai/skin-enhancer/creative",         401, 401,    200,     200,   200,  200,  200],
  ["POST /proxy/imagevendor/v1/ai/skin-enhancer/faithful",         401, 401,    200,     200,   200,  200,  200],
  ["POST /proxy/imagevendor/v1/ai/skin-enhancer/flexible",         401, 401,    200,     200,   200,  200,  200],
  ["GET /proxy/imagevendor/v1/ai/image-style-transfer/:task_id",   401, 401,    404,     404,   404,  200,  404],
  ["GET /proxy/imagevendor/v1/ai/skin-enhancer/:task_id",          401, 401,    404,     404,   404,  200,  404],
  ["POST /proxy/imagevendor/v1/ai/image-upscaler",                 401, 401,    200,     200,   200,  200,  200],
  ["POST /proxy/imagevendor/v1/ai/image-upscaler-precision-v2",    401, 401,    200,     200,   200,  200,  200],
  ["POST /proxy/imagevendor/v1/ai/image-relight",                  401, 401,    200,     200,   200,  200,  200],
  ["GET /proxy/imagevendor/v1/ai/image-upscaler/:task_id",         401, 401,    404,     404,   404,  200,  404],
  ["GET /proxy/imagevendor/v1/ai/image-upscaler-precision-v2/:task_id", 401, 401, 404,   404,   404,  200,  404],
  ["GET /proxy/imagevendor/v1/ai/image-relight/:task_id",          401, 401,    404,     404,   404,  200,  404],
  ["POST /proxy/musicvendor/v2m/generate",                         401, 401,    415,     415,   415,  415,  415],
  ["POST /proxy/musicvendor/t2m/generate",                         401, 401,    400,     400,   400,  400,  400],
  // reviews: any authenticated user rates any visible node
  ["POST /nodes/:nodeId/reviews",                                  401, 401,    200,     200,   200,  200,  200],
  // a user's own API keys and media storage: any authenticated user; a key only to its user (here: the owner's key)
  ["POST /customers/api-keys",                                     401, 401,    201,     201,   201,  201,  201],
  ["GET /customers/api-keys",                                      401, 401,    200,     200,   200,  200,  200],
  ["DELETE /customers/api-keys/:keyId",                            401, 401,    404,     404,   404,  204,  404],
  ["POST /customers/storage",                                      401, 401,    200,     200,   200,  200,  200],
  // customers: any authenticated user, their own record; quota overrides by site admins
  ["POST /customers",                                              401, 401,    201,     201,   201,  201,  201],
  ["GET /customers/me",                                            401, 401,    200,     200,   200,  200,  200],
  ["GET /customers/balance",                                       401, 401,    200,     200,   200,  200,  200],
  ["GET /customers/usage",                                         401, 401,    200,     200,   200,  200,  200],
  ["GET /admin/customers/:customer_id/quotas",                     401, 401,    403,     403,   403,  403,  200],
  ["PUT /admin/customers/:customer_id/quotas",                     401, 401,    403,     403,   403,  403,  200],
  ["GET /customers/webhooks/deliveries",                           401, 401,    200,     200,   200,  200,  200],
  ["GET /customers/webhooks/secret",                               401, 401,    200,     200,   200,  200,  200],
  ["POST /customers/webhooks/secret/rotate",                       401, 401,    200,     200,   200,  200,  200]
] as const

/** Callers with an `X-API-KEY` header and no Authorization. */
const keyActors = ["wrongKey", "revokedKey", "ownerKey", "strangerKey"] as const
type KeyActor = typeof keyActors[number]

/** What a key actor gets on a row: its user's bearer answer where keys are taken, else 401. */
const expectedForKey = (actor: KeyActor, row: ReadonlyArray<number>, takesKeys: boolean) =>
  !takesKeys || actor === "wrongKey" || actor === "revokedKey"
    ? 401
    : row[actors.indexOf(actor === "ownerKey" ? "owner" : "stranger")]!

type RowKey = typeof matrix[number][0]

/** The endpoint a row exercises: its key without the query variant. */
const endpointOf = (key: string) => key.split("?")[0]!

// --- fixtures ------------------------------------------------------------------------------------

const publisherId = "matrix"
const users = { owner: "olga", admin: "adam", member: "mia", stranger: "stan", siteAdmin: "root" } as const
const roles: ReadonlyArray<readonly [string, MemberRole]> = [[users.owner, "owner"], [users.admin, "admin"], [users.member, "member"]]

/** A node of the publisher, with a version that has host-node records. */
const hostedNode = "matrix-node"
const hostedVersion = "1.0.0"

/** A token the fake repository host knows as an administrator of every repository of `ann`. */
const vcsAdminToken = "vcs-matrix-admin-of-ann"
const webHost = "repohost.example"
const annRepository = (repo: string) => `https://${webHost}/ann/${repo}`

const trustedIssuer = "https://issuer.example"

const TestLayer = Layer.unwrap(
  Effect.map(FakeRepohost, (fake) =>
    // the image proxy's rows run against the simulated vendor
    Service.layer((c) => ({
      ...c,
      vendorMode: "simulated",
      repohost: { apiUrl: fake.url, timeoutMillis: 2_000, webHost },
      // registering a trusted publisher asks no issuer: one listed is enough
      trustedPublishing: { ...c.trustedPublishing, issuers: [trustedIssuer] }
    })))
).pipe(Layer.provideMerge(FakeRepohost.layer))

/** What a row's request builder may use. */
interface Fixture {
  readonly service: Running
  /** A new short suffix on each call, for fresh ids. */
  readonly fresh: () => string
}

interface Request {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly path: string
  readonly body?: unknown
}

type Build = (f: Fixture) => Promise<Request>

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)

/** A user the registry has seen (members can only be added once seen). */
const freshUser = async (f: Fixture) => {
  const id = `user-${f.fresh()}`
  await run(query(f.service, "INSERT INTO users (id) VALUES ($1)", [id]))
  return id
}

const addMembers = async (f: Fixture, publisher: string, members: ReadonlyArray<readonly [string, MemberRole]>) => {
  for (const [userId, role] of members) await run(addMember(f.service, publisher, userId, role))
}

/** An unrevoked token of the publisher, written directly (its value is never needed). */
const freshTokenId = async (f: Fixture) => {
  const rows = await run(query<{ id: string }>(
    f.service,
    `INSERT INTO personal_access_tokens (publisher_id, name, token_hash, token_hint)
     VALUES ($1, $2, $3, 'rgpat_xx') RETURNING id::text`,
    [publisherId, `token-${f.fresh()}`, randomBytes(32)]
  ))
  return rows[0]!.id
}

/** A host-node record of the hosted version. */
const freshHostNode = async (f: Fixture) => {
  const name = `HostNode${f.fresh()}`
  await run(query(
    f.service,
    `INSERT INTO host_nodes (version_id, host_node_name)
     SELECT id, $3 FROM node_versions WHERE node_id = $1 AND version = $2`,
    [hostedNode, hostedVersion, name]
  ))
  return name
}

/** A node of the publisher, with a Pending version when one is named. */
const freshNode = async (f: Fixture, version?: string) => {
  const nodeId = `own-${f.fresh()}`
  await run(f.service.writes.insertNodes([{ id: nodeId, publisher_id: publisherId }]))
  if (version !== undefined) await run(f.service.writes.insertVersions([{ node_id: nodeId, version }]))
  return nodeId
}

/** A finished image task of the publisher's owner, written directly (polling it asks no vendor). */
const ownersTask = async (f: Fixture, kind: ImageTaskKind) => {
  const rows = await run(query<{ id: string }>(
    f.service,
    `INSERT INTO media_tasks (id, vendor_task_id, owner_id, kind, status)
     VALUES (gen_random_uuid(), $1, $2, $3, 'COMPLETED') RETURNING id::text`,
    [`vendor-${f.fresh()}`, users.owner, kind]
  ))
  return rows[0]!.id
}

/** An unrevoked API key of the publisher's owner, written directly (its value is never needed). */
const ownersKeyId = async (f: Fixture) => {
  const rows = await run(query<{ id: string }>(
    f.service,
    `INSERT INTO api_keys (user_id, name, key_hash, key_hint) VALUES ($1, $2, $3, 'rgak_…xxxx') RETURNING id::text`,
    [users.owner, `key-${f.fresh()}`, randomBytes(32)]
  ))
  return rows[0]!.id
}

/** Makes an API key of the user with this bearer token; answers its value. */
const createKey = async (service: Running, jwt: string) => {
  const answer = await fetchText(service, "POST", "/customers/api-keys", { token: jwt, body: { name: "matrix" } })
  return (JSON.parse(answer.text) as { api_key: { id: string; plaintext_key: string } }).api_key
}

/** How to call each row's endpoint, with fresh targets for the calls that change something. */
const requests: { readonly [K in RowKey]: Build } = {
  "GET /publishers/:publisherId/nodes": async () => ({ method: "GET", path: `/publishers/${publisherId}/nodes` }),
  "GET /publishers/:publisherId/nodes?include_banned=true": async () => ({
    method: "GET",
    path: `/publishers/${publisherId}/nodes?include_banned=true`
  }),
  "GET /publishers/:publisherId/nodes/v2": async () => ({ method: "GET", path: `/publishers/${publisherId}/nodes/v2` }),
  "GET /publishers/:publisherId/nodes/v2?include_banned=true": async () => ({
    method: "GET",
    path: `/publishers/${publisherId}/nodes/v2?include_banned=true`
  }),
  "POST /publishers": async (f) => ({ method: "POST", path: "/publishers", body: { id: `made-${f.fresh()}` } }),
  "PUT /publishers/:publisherId": async (f) => ({
    method: "PUT",
    path: `/publishers/${publisherId}`,
    body: { description: `edited ${f.fresh()}` }
  }),
  "GET /users": async () => ({ method: "GET", path: "/users" }),
  "GET /users/publishers": async () => ({ method: "GET", path: "/users/publishers" }),
  "DELETE /publishers/:publisherId": async (f) => {
    // a publisher of its own, with the same memberships and no nodes, so that deleting it touches no other cell
    const target = `deleted-${f.fresh()}`
    await run(f.service.writes.upsertPublishers([{ id: target }]))
    await addMembers(f, target, roles)
    return { method: "DELETE", path: `/publishers/${target}` }
  },
  // every caller may ask; what canEdit says is held against the writes in test/PublisherDirectory.test.ts
  "GET /publishers/:publisherId/permissions": async () => ({ method: "GET", path: `/publishers/${publisherId}/permissions` }),
  "GET /publishers/:publisherId/nodes/:nodeId/permissions": async () => ({
    method: "GET",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/permissions`
  }),
  "POST /publishers/:publisherId/members": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/members`,
    body: { user_id: await freshUser(f), role: "member" }
  }),
  "DELETE /publishers/:publisherId/members/:userId": async (f) => {
    const userId = await freshUser(f)
    await addMembers(f, publisherId, [[userId, "member"]])
    return { method: "DELETE", path: `/publishers/${publisherId}/members/${userId}` }
  },
  "POST /publishers/:publisherId/tokens": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/tokens`,
    body: { name: `token ${f.fresh()}` }
  }),
  "GET /publishers/:publisherId/tokens": async () => ({ method: "GET", path: `/publishers/${publisherId}/tokens` }),
  "DELETE /publishers/:publisherId/tokens/:tokenId": async (f) => ({
    method: "DELETE",
    path: `/publishers/${publisherId}/tokens/${await freshTokenId(f)}`
  }),
  "POST /publishers/:publisherId/nodes/:nodeId/trusted-publishers": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/trusted-publishers`,
    body: { issuer: trustedIssuer, repository_owner: "matrix", repository_name: `repo-${f.fresh()}`, workflow: "publish.yml" }
  }),
  "GET /publishers/:publisherId/nodes/:nodeId/trusted-publishers": async () => ({
    method: "GET",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/trusted-publishers`
  }),
  "DELETE /publishers/:publisherId/nodes/:nodeId/trusted-publishers/:trustedPublisherId": async (f) => {
    const rows = await run(query<{ id: string }>(
      f.service,
      `INSERT INTO trusted_publishers (publisher_id, node_id, issuer, repository_owner, repository_name, workflow)
       VALUES ($1, $2, $3, 'matrix', $4, 'publish.yml') RETURNING id::text`,
      [publisherId, hostedNode, trustedIssuer, `repo-${f.fresh()}`]
    ))
    return { method: "DELETE", path: `/publishers/${publisherId}/nodes/${hostedNode}/trusted-publishers/${rows[0]!.id}` }
  },
  "POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/messages": async () => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/versions/${hostedVersion}/review/messages`,
    body: { body: "a question" }
  }),
  "POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review/request": async () => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/versions/${hostedVersion}/review/request`
  }),
  "GET /admin/held-versions": async () => ({ method: "GET", path: "/admin/held-versions" }),
  "POST /admin/nodes/:nodeId/versions/:versionId/review/decision": async () => ({
    method: "POST",
    path: `/admin/nodes/${hostedNode}/versions/${hostedVersion}/review/decision`,
    body: { decision: "approve", reason: "reviewed" }
  }),
  "GET /admin/audit-log": async () => ({ method: "GET", path: "/admin/audit-log" }),
  "POST /admin/rescan": async () => ({ method: "POST", path: "/admin/rescan" }),
  "GET /publishers/:publisherId/nodes/:nodeId/versions/:versionId/review": async () => ({
    method: "GET",
    path: `/publishers/${publisherId}/nodes/${hostedNode}/versions/${hostedVersion}/review`
  }),
  "POST /publishers/:publisherId/nodes/:nodeId/claim-my-node": async (f) => {
    const nodeId = `claimable-${f.fresh()}`
    await run(f.service.writes.insertNodes([{ id: nodeId, publisher_id: "unclaimed", repository: annRepository(nodeId) }]))
    return {
      method: "POST",
      path: `/publishers/${publisherId}/nodes/${nodeId}/claim-my-node`,
      body: { VCS_TOKEN: vcsAdminToken }
    }
  },
  "POST /nodes/:nodeId/versions/:version/host-nodes": async (f) => ({
    method: "POST",
    path: `/nodes/${hostedNode}/versions/${hostedVersion}/host-nodes`,
    body: [{ host_node_name: `Created${f.fresh()}`, category: "test" }]
  }),
  "PUT /nodes/:nodeId/versions/:version/host-nodes/:hostNodeName": async (f) => ({
    method: "PUT",
    path: `/nodes/${hostedNode}/versions/${hostedVersion}/host-nodes/${await freshHostNode(f)}`,
    body: { description: "edited" }
  }),
  "PUT /nodes/:nodeId/versions/:version/host-node-extract-status": async (f) => ({
    method: "PUT",
    path: `/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0/host-node-extract-status`,
    body: { status: "failed" }
  }),
  "POST /admin/nodes": async (f) => {
    const nodeId = `waiting-${f.fresh()}`
    return { method: "POST", path: "/admin/nodes", body: { id: nodeId, repository: annRepository(nodeId) } }
  },
  "PUT /admin/nodes/:nodeId": async (f) => {
    const nodeId = `moderated-${f.fresh()}`
    await run(f.service.writes.insertNodes([{ id: nodeId, publisher_id: publisherId }]))
    return { method: "PUT", path: `/admin/nodes/${nodeId}`, body: { search_ranking: 3 } }
  },
  "PUT /admin/publishers/:publisherId": async (f) => {
    // a publisher of its own, with the same memberships, so that banning it touches no other cell
    const target = `banned-${f.fresh()}`
    await run(f.service.writes.upsertPublishers([{ id: target }]))
    await addMembers(f, target, roles)
    return { method: "PUT", path: `/admin/publishers/${target}`, body: { status: "PublisherStatusBanned" } }
  },
  "POST /publishers/:publisherId/ban": async (f) => {
    // as for PUT /admin/publishers: a publisher of its own, so that banning it touches no other cell
    const target = `banned-${f.fresh()}`
    await run(f.service.writes.upsertPublishers([{ id: target }]))
    await addMembers(f, target, roles)
    return { method: "POST", path: `/publishers/${target}/ban` }
  },
  "POST /publishers/:publisherId/nodes/:nodeId/ban": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f)}/ban`
  }),
  "POST /admin/generate-token": async () => ({ method: "POST", path: "/admin/generate-token" }),
  "POST /publishers/:publisherId/nodes": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes`,
    body: { id: `created-${f.fresh()}`, name: "Created" }
  }),
  "PUT /publishers/:publisherId/nodes/:nodeId": async (f) => ({
    method: "PUT",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f)}`,
    body: { description: "edited" }
  }),
  "DELETE /publishers/:publisherId/nodes/:nodeId": async (f) => ({
    method: "DELETE",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f)}`
  }),
  "PUT /publishers/:publisherId/nodes/:nodeId/versions/:versionId": async (f) => ({
    method: "PUT",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0`,
    body: { deprecated: true }
  }),
  "DELETE /publishers/:publisherId/nodes/:nodeId/versions/:versionId": async (f) => ({
    method: "DELETE",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0`
  }),
  "POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/yank": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0/yank`,
    body: { reason: "broken" }
  }),
  "POST /publishers/:publisherId/nodes/:nodeId/versions/:versionId/unyank": async (f) => ({
    method: "POST",
    path: `/publishers/${publisherId}/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0/unyank`
  }),
  "PUT /admin/nodes/:nodeId/versions/:version": async (f) => ({
    method: "PUT",
    path: `/admin/nodes/${await freshNode(f, "1.0.0")}/versions/1.0.0`,
    body: { status: "NodeVersionStatusFlagged", status_reason: "checked by hand" }
  }),
  "POST /proxy/imagevendor/v1/ai/image-style-transfer": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/image-style-transfer",
    body: { image: "https://images.example/a.png", reference_image: "https://images.example/b.png" }
  }),
  "POST /proxy/imagevendor/v1/ai/skin-enhancer/creative": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/skin-enhancer/creative",
    body: { image: "https://images.example/a.png" }
  }),
  "POST /proxy/imagevendor/v1/ai/skin-enhancer/faithful": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/skin-enhancer/faithful",
    body: { image: "https://images.example/a.png", skin_detail: 80 }
  }),
  "POST /proxy/imagevendor/v1/ai/skin-enhancer/flexible": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/skin-enhancer/flexible",
    body: { image: "https://images.example/a.png", optimized_for: "enhance_skin" }
  }),
  "GET /proxy/imagevendor/v1/ai/image-style-transfer/:task_id": async (f) => ({
    method: "GET",
    path: `/proxy/imagevendor/v1/ai/image-style-transfer/${await ownersTask(f, "image-style-transfer")}`
  }),
  "GET /proxy/imagevendor/v1/ai/skin-enhancer/:task_id": async (f) => ({
    method: "GET",
    path: `/proxy/imagevendor/v1/ai/skin-enhancer/${await ownersTask(f, "skin-enhancer")}`
  }),
  "POST /proxy/imagevendor/v1/ai/image-upscaler": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/image-upscaler",
    body: { image: "https://images.example/a.png", scale_factor: "4x" }
  }),
  "POST /proxy/imagevendor/v1/ai/image-upscaler-precision-v2": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/image-upscaler-precision-v2",
    body: { image: "https://images.example/a.png", scale_factor: 2 }
  }),
  "POST /proxy/imagevendor/v1/ai/image-relight": async () => ({
    method: "POST",
    path: "/proxy/imagevendor/v1/ai/image-relight",
    body: { image: "https://images.example/a.png", style: "clean" }
  }),
  "GET /proxy/imagevendor/v1/ai/image-upscaler/:task_id": async (f) => ({
    method: "GET",
    path: `/proxy/imagevendor/v1/ai/image-upscaler/${await ownersTask(f, "image-upscaler")}`
  }),
  "GET /proxy/imagevendor/v1/ai/image-upscaler-precision-v2/:task_id": async (f) => ({
    method: "GET",
    path: `/proxy/imagevendor/v1/ai/image-upscaler-precision-v2/${await ownersTask(f, "image-upscaler-precision-v2")}`
  }),
  "GET /proxy/imagevendor/v1/ai/image-relight/:task_id": async (f) => ({
    method: "GET",
    path: `/proxy/imagevendor/v1/ai/image-relight/${await ownersTask(f, "image-relight")}`
  }),
  "POST /customers/api-keys": async (f) => ({ method: "POST", path: "/customers/api-keys", body: { name: `key ${f.fresh()}` } }),
  "GET /customers/api-keys": async () => ({ method: "GET", path: "/customers/api-keys" }),
  "DELETE /customers/api-keys/:keyId": async (f) => ({ method: "DELETE", path: `/customers/api-keys/${await ownersKeyId(f)}` }),
  "POST /customers/storage": async (f) => ({
    method: "POST",
    path: "/customers/storage",
    body: { file_name: `file-${f.fresh()}.png`, content_type: "image/png" }
  }),
  // no customer record yet, whoever calls: each call makes one (201)
  "POST /customers": async (f) => {
    await run(query(f.service, "DELETE FROM customers"))
    return { method: "POST", path: "/customers" }
  },
  // every user seen has a record
  "GET /customers/me": async (f) => {
    await run(query(f.service, "INSERT INTO customers (user_id) SELECT id FROM users ON CONFLICT DO NOTHING"))
    return { method: "GET", path: "/customers/me" }
  },
  "GET /customers/balance": async () => ({ method: "GET", path: "/customers/balance" }),
  "GET /customers/usage": async () => ({ method: "GET", path: "/customers/usage" }),
  "GET /admin/customers/:customer_id/quotas": async () => ({ method: "GET", path: `/admin/customers/${users.owner}/quotas` }),
  "PUT /admin/customers/:customer_id/quotas": async () => ({
    method: "PUT",
    path: `/admin/customers/${users.owner}/quotas`,
    body: { tasks_in_flight: null }
  }),
  // any authenticated caller gets past authentication to the form check: a JSON body is 415
  "POST /proxy/musicvendor/v2m/generate": async () => ({
    method: "POST",
    path: "/proxy/musicvendor/v2m/generate",
    body: { video: "https://videos.example/v.mp4" }
  }),
  // any authenticated caller gets past authentication to the body check: a blank prompt is 400
  "POST /proxy/musicvendor/t2m/generate": async () => ({
    method: "POST",
    path: "/proxy/musicvendor/t2m/generate",
    body: { prompt: " " }
  }),
  "GET /customers/webhooks/deliveries": async () => ({ method: "GET", path: "/customers/webhooks/deliveries" }),
  "GET /customers/webhooks/secret": async () => ({ method: "GET", path: "/customers/webhooks/secret" }),
  "POST /customers/webhooks/secret/rotate": async () => ({ method: "POST", path: "/customers/webhooks/secret/rotate" }),
  "POST /nodes/:nodeId/reviews": async (f) => ({ method: "POST", path: `/nodes/${await freshNode(f)}/reviews?star=4` })
}

// --- the endpoints that need authentication, from the Api itself ----------------------------------

const endpointsBehind = (middleware: unknown): Set<string> => {
  const found = new Set<string>()
  for (const group of Object.values(Api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      // the Api's and the group's middleware are on each endpoint
      const middlewares: ReadonlyArray<unknown> = [...endpoint.middlewares]
      if (middlewares.includes(middleware)) found.add(`${endpoint.method} ${endpoint.path}`)
    }
  }
  return found
}

const protectedEndpoints = () => new Set([...endpointsBehind(Authentication), ...endpointsBehind(KeyOrBearerAuthentication)])

layer(TestLayer, { excludeTestServices: true })("authorization matrix", (it) => {
  it.effect("every protected endpoint answers each kind of caller as CONTRACT.md says", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const fake: Fake = yield* FakeRepohost

      // the table covers exactly the endpoints behind Authentication: a new one needs a row
      const declared = [...protectedEndpoints()].sort()
      const covered = [...new Set(matrix.map(([key]) => endpointOf(key)))].sort()
      expect(covered, "rows of the matrix vs endpoints with an authentication middleware").toEqual(declared)
      const takingKeys = endpointsBehind(KeyOrBearerAuthentication)

      let counter = 0
      const fixture: Fixture = { service, fresh: () => `${++counter}` }

      yield* service.writes.upsertPublishers([{ id: publisherId, name: "Matrix" }])
      yield* Effect.promise(() => addMembers(fixture, publisherId, roles))
      yield* service.writes.insertNodes([{ id: hostedNode, publisher_id: publisherId }])
      yield* service.writes.insertVersions([{ node_id: hostedNode, version: hostedVersion, status: "NodeVersionStatusActive" }])
      fake.behave(vcsAdminToken, { kind: "user", login: "ann", admin: ["ann/*"] })

      const jwts: Record<Actor, string | undefined> = yield* Effect.promise(async () => ({
        none: undefined,
        // the owner's claims, signed with a key the service does not know
        invalid: await Effect.runPromise(mintToken(
          { ...service.config, auth: { ...service.config.auth, jwtSecret: Option.some(Redacted.make(`wrong-${"k".repeat(40)}`)) } },
          { sub: users.owner }
        ).pipe(Effect.provide(NodeFileSystem.layer))),
        stranger: await service.token({ sub: users.stranger }),
        member: await service.token({ sub: users.member }),
        admin: await service.token({ sub: users.admin }),
        owner: await service.token({ sub: users.owner }),
        siteAdmin: await service.token({ sub: users.siteAdmin, admin: true })
      }))
      const apiKeys: Record<KeyActor, string> = yield* Effect.promise(async () => {
        const revoked = await createKey(service, jwts.owner!)
        await fetchText(service, "DELETE", `/customers/api-keys/${revoked.id}`, { token: jwts.owner })
        return {
          wrongKey: `rgak_${"A".repeat(43)}`,
          revokedKey: revoked.plaintext_key,
          ownerKey: (await createKey(service, jwts.owner!)).plaintext_key,
          strangerKey: (await createKey(service, jwts.stranger!)).plaintext_key
        }
      })

      const mismatches = yield* Effect.promise(async () => {
        const found: Array<string> = []
        for (const [key, ...expected] of matrix) {
          for (const [column, actor] of actors.entries()) {
            const want = expected[column]!
            const request = await requests[key](fixture)
            const answer = await fetchText(service, request.method, request.path, { token: jwts[actor], body: request.body })
            const cell = `${key} × ${actor} (${request.method} ${request.path})`
            if (answer.status !== want) {
              found.push(`${cell}: expected ${want}, got ${answer.status} ${answer.text.slice(0, 200)}`)
            }
            if (answer.status >= 300) {
              const problem = errorBodyProblem(answer)
              if (problem !== undefined) {
                found.push(`${cell}: ${answer.status} is not exactly {error, message}: ${problem}: ${answer.text.slice(0, 200)}`)
              }
            }
          }
          for (const actor of keyActors) {
            const want = expectedForKey(actor, expected, takingKeys.has(endpointOf(key)))
            const request = await requests[key](fixture)
            const answer = await fetchText(service, request.method, request.path, {
              body: request.body,
              headers: { "X-API-KEY": apiKeys[actor] }
            })
            if (answer.status !== want) {
              found.push(`${key} × ${actor} (${request.method} ${request.path}): expected ${want}, got ${answer.status} ${answer.text.slice(0, 200)}`)
            }
          }
        }
        return found
      })

      expect(mismatches, `${mismatches.length} of ${matrix.length * (actors.length + keyActors.length)} cells differ:\n${mismatches.join("\n")}`)
        .toEqual([])
    }))
})
