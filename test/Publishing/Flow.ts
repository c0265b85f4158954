/**
 * The publishing tests' steps over real HTTP: a publisher with an owner and a personal access
 * token, publish, upload to the signed URL, install, download. Every answer is decoded strictly
 * with the Domain schemas.
 */
import { Effect } from "effect"
import { expect } from "vitest"
import { PublishResponse } from "../../src/Publishing/Api.ts"
import { decodeExact, decodeVersion } from "../support/Catalogue.ts"
import { type Answer, expectStatus, send } from "../support/Http.ts"
import type { Running } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"

export const decodePublished = decodeExact(PublishResponse)

export interface Publisher {
  readonly id: string
  /** A bearer JWT of the publisher's owner. */
  readonly ownerJwt: string
  /** A personal access token of the publisher. */
  readonly pat: string
}

/** Creates publisher `id` owned by `owner` and a personal access token of it. */
export const makePublisher = (service: Running, id: string, owner = `owner-of-${id}`) =>
  Effect.gen(function*() {
    const ownerJwt = yield* Effect.promise(() => service.token({ sub: owner }))
    expectStatus(yield* send(service, "POST", "/publishers", { token: ownerJwt, body: { id, name: id } }), 201, `create ${id}`)
    const created = expectStatus(
      yield* send<{ token: string }>(service, "POST", `/publishers/${id}/tokens`, { token: ownerJwt, body: { name: "cli" } }),
      201,
      `token of ${id}`
    )
    return { id, ownerJwt, pat: created.body.token } satisfies Publisher
  })

export interface PublishOptions {
  readonly pat?: string | undefined
  readonly jwt?: string | undefined
  readonly node?: Record<string, unknown> | undefined
  readonly versionFields?: Record<string, unknown> | undefined
}

/** `POST .../versions` with the token in the body (or a bearer JWT); the raw answer. */
export const publish = (service: Running, publisherId: string, nodeId: string, version: string, options: PublishOptions = {}) =>
  send(service, "POST", `/publishers/${publisherId}/nodes/${nodeId}/versions`, {
    token: options.jwt,
    body: {
      ...(options.pat === undefined ? {} : { personal_access_token: options.pat }),
      node: options.node ?? { name: nodeId, description: `The ${nodeId} node` },
      node_version: { version, changelog: `release ${version}`, ...options.versionFields }
    }
  })

/** A publish that must succeed: its decoded answer. */
export const published = (service: Running, publisher: Publisher, nodeId: string, version: string, options: PublishOptions = {}) =>
  Effect.map(publish(service, publisher.id, nodeId, version, { pat: publisher.pat, ...options }), (answer) => {
    expectStatus(answer, 201, `publish ${nodeId}@${version}`)
    return decodePublished(answer.body)
  })

/** The signed URL's path and query, to send to any instance (the tests' base URL has no port). */
export const pathOf = (signedUrl: string) => {
  const url = new URL(signedUrl)
  return url.pathname + url.search
}

/** `PUT` bytes to a signed URL on this instance. */
export const upload = (service: Running, signedUrl: string, bytes: Uint8Array, contentType = "application/zip") =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await service.fetch(pathOf(signedUrl), { method: "PUT", body: bytes, headers: { "content-type": contentType } })
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, body: text === "" ? undefined : JSON.parse(text) as unknown }
  })

/** Publishes `nodeId@version` and uploads a zip of `files`: the upload's answer. */
export const releasePack = (service: Running, publisher: Publisher, nodeId: string, version: string, files: Record<string, string | Uint8Array>) =>
  Effect.gen(function*() {
    const { signedUrl } = yield* published(service, publisher, nodeId, version)
    return yield* upload(service, signedUrl, yield* Effect.promise(() => zipOf(files)))
  })

/** `GET /nodes/{nodeId}/install[?version=]`; the answer. */
export const install = (service: Running, nodeId: string, version?: string) =>
  send(service, "GET", `/nodes/${nodeId}/install${version === undefined ? "" : `?version=${encodeURIComponent(version)}`}`)

/** An install that must succeed: the version, with its download URL. */
export const installed = (service: Running, nodeId: string, version?: string) =>
  Effect.map(install(service, nodeId, version), (answer) => {
    expectStatus(answer, 200, `install ${nodeId}${version === undefined ? "" : `@${version}`}`)
    const v = decodeVersion(answer.body)
    expect(v.downloadUrl).toMatch(/^https?:\/\//)
    return v
  })

/** The bytes a download URL serves, from this instance. */
export const download = (service: Running, downloadUrl: string) =>
  Effect.promise(async () => {
    const response = await service.fetch(pathOf(downloadUrl))
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
  })

/**
 * A 422 archive_rejected: an ErrorResponse with `details` besides, one `{check, message}` per failed
 * check; answers the checks' names in order.
 */
export const expectRejected = (answer: Answer) => {
  if (answer.status !== 422) expect.fail(`expected 422, got ${answer.status}: ${answer.text}`)
  const body = answer.body as { error: string; message: string; details: ReadonlyArray<{ check: string; message: string }> }
  expect(Object.keys(body).sort()).toEqual(["details", "error", "message"])
  expect(body.error).toBe("archive_rejected")
  expect(body.message).toMatch(/still Pending/)
  expect(body.details.length).toBeGreaterThan(0)
  for (const d of body.details) {
    expect(Object.keys(d).sort()).toEqual(["check", "message"])
    expect(d.message.length).toBeGreaterThan(0)
    expect(body.message).toContain(d.message.replace(/\.+$/, ""))
  }
  return body.details
}
