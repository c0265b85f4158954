/**
 * The image proxy's handlers: validate (by the schemas), start a task at the vendor and record it
 * with its owner, answer polls from the vendor without ever moving a status backwards, and make a
 * repeated Idempotency-Key answer the first request's task with one vendor call.
 */
import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Fiber, Option } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { Api } from "../Api.ts"
import { CurrentUser } from "../Auth/CurrentUser.ts"
import { AppConfig } from "../Config.ts"
import type { MediaTask } from "../Domain/Media.ts"
import { Conflict, NotFound } from "../Errors.ts"
import { type ImageTaskKind, ImageVendor, type ImageVendorError } from "./ImageVendor.ts"
import { type KeyClaim, type StoredTask, TaskRepo, terminalStatuses } from "./TaskRepo.ts"
import { isUuid } from "../Domain/Schemas.ts"

const toWire = (task: StoredTask): MediaTask => ({ task_id: task.id, status: task.status, generated: [...task.generated] })

/** JSON with keys sorted at every level: equal meaning, equal text. */
const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`
    : JSON.stringify(value)

/** The hash an Idempotency-Key is bound to: the request as decoded, defaults applied. */
export const requestHash = (kind: ImageTaskKind, body: unknown) =>
  createHash("sha256").update(`${kind}\n${canonicalJson(body)}`).digest()

/** How often a repeated key looks whether the first request has finished. */
const keyPollMillis = 25
/** How much longer than the vendor timeout a repeat waits for the first request. */
const keyWaitGraceMillis = 2_000

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

const taskNotFound = (taskId: string) => new NotFound({ message: `No task '${taskId}' of yours` })

export const ImageProxyLive = HttpApiBuilder.group(Api, "imageProxy", (handlers) =>
  Effect.gen(function*() {
    const vendor = yield* ImageVendor
    const tasks = yield* TaskRepo
    const { vendorTimeoutMillis } = yield* AppConfig

    /**
     * Starts the task at the vendor and records it (binding the claimed key, if any). It runs to
     * its end even if the caller leaves, so that a task the vendor started is never lost; a
     * failure releases the key so that a retry may try again.
     */
    const startAtVendor = (ownerId: string, kind: ImageTaskKind, body: Readonly<Record<string, unknown>>, claim: Option.Option<KeyClaim>) =>
      Effect.gen(function*() {
        const started = yield* vendor.start(kind, body)
        const record = (id: string) =>
          tasks.create({
            id,
            vendorTaskId: started.taskId,
            ownerId,
            kind,
            status: Option.getOrElse(started.status, () => "CREATED" as const),
            generated: started.generated ?? []
          }, claim)
        // the vendor's id is the client's when it is a UUID (its webhooks name it); else, or when
        // the vendor repeats an id, one of ours
        const recorded = yield* record(isUuid(started.taskId) ? started.taskId.toLowerCase() : randomUUID())
        return Option.isSome(recorded) ? recorded.value : Option.getOrThrow(yield* record(randomUUID()))
      }).pipe(
        Effect.onError(() => Option.match(claim, { onNone: () => Effect.void, onSome: tasks.releaseKey })),
        // a fiber of its own: a caller who leaves stops waiting, the start (bounded by the vendor timeout) goes on
        Effect.forkDaemon,
        Effect.flatMap(Fiber.join)
      )

    const ownTask = (ownerId: string, kind: ImageTaskKind, taskId: string) =>
      Effect.flatten(Effect.map(tasks.find(ownerId, kind, taskId), Option.match({
        onNone: () => Effect.fail(taskNotFound(taskId)),
        onSome: Effect.succeed
      })))

    const keyReused = (key: string) =>
      new Conflict({
        code: "idempotency_key_reused",
        message: `Idempotency-Key '${key}' was used with another request body within the last 24 hours`
      })

    /**
     * With a key: the first request claims it and calls the vendor; a repeat with the same body
     * answers the task it started, waiting for it while it is still at the vendor.
     */
    const startIdempotently = (claim: KeyClaim, body: Readonly<Record<string, unknown>>, deadline: number): Effect.Effect<StoredTask, Conflict | NotFound | ImageVendorError, never> =>
      Effect.gen(function*() {
        const outcome = yield* tasks.claimKey(claim)
        if (outcome._tag === "Claimed") return yield* startAtVendor(claim.ownerId, claim.kind, body, Option.some(claim))
        let held = outcome
        while (true) {
          if (!held.requestHash.equals(claim.requestHash)) return yield* keyReused(claim.key)
          if (Option.isSome(held.taskId)) return yield* ownTask(claim.ownerId, claim.kind, held.taskId.value)
          if ((yield* Clock.currentTimeMillis) > deadline) {
            return yield* new Conflict({
              code: "idempotency_key_in_progress",
              message: `A request with Idempotency-Key '${claim.key}' is still in progress; retry later`
            })
          }
          yield* Effect.sleep(keyPollMillis)
          const now = yield* tasks.readKey(claim)
          // the first request failed and let the key go: this one tries in its place
          if (Option.isNone(now)) return yield* startIdempotently(claim, body, deadline)
          held = now.value
        }
      })

    const start = (kind: ImageTaskKind, body: Readonly<Record<string, unknown>>, key: string | undefined) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        if (key === undefined) return yield* startAtVendor(user.id, kind, body, Option.none())
        const deadline = (yield* Clock.currentTimeMillis) + vendorTimeoutMillis + keyWaitGraceMillis
        return yield* startIdempotently({ ownerId: user.id, kind, key, requestHash: requestHash(kind, body) }, body, deadline)
      })

    /** The stored task, after asking the vendor unless it has finished. */
    const poll = (kind: ImageTaskKind, taskId: string) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const task = yield* ownTask(user.id, kind, taskId)
        if (terminalStatuses.includes(task.status)) return { data: toWire(task) }
        const answer = yield* vendor.poll(kind, task.vendorTaskId)
        // a status this service does not know is not stored, nor one that changes nothing
        const unchanged = Option.isNone(answer.status) ||
          (answer.status.value === task.status && (answer.generated === undefined || sameList(answer.generated, task.generated)))
        const stored = unchanged ? task : yield* tasks.advance(task.id, Option.getOrThrow(answer.status), answer.generated)
        return { data: toWire(stored) }
      })

    return handlers
      .handle("startStyleTransfer", ({ headers, payload }) =>
        Effect.map(start("image-style-transfer", payload, headers["idempotency-key"]), toWire))
      .handle("startSkinEnhancer", ({ headers, payload }) =>
        Effect.map(start("skin-enhancer", payload, headers["idempotency-key"]), (task) => ({ data: toWire(task) })))
      .handle("pollStyleTransfer", ({ path }) => poll("image-style-transfer", path.task_id))
      .handle("pollSkinEnhancer", ({ path }) => poll("skin-enhancer", path.task_id))
  }))

const simulatedFile = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.svg$/i

/** A small picture, its colours taken from the task id, so that each task shows its own. */
const simulatedSvg = (taskId: string) => {
  const hue = parseInt(taskId.slice(0, 6), 16) % 360
  return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
<stop offset="0" stop-color="hsl(${hue},70%,60%)"/><stop offset="1" stop-color="hsl(${(hue + 140) % 360},70%,40%)"/>
</linearGradient></defs>
<rect width="512" height="512" fill="url(#g)"/>
<text x="256" y="240" font-family="sans-serif" font-size="40" text-anchor="middle" fill="#fff">simulated</text>
<text x="256" y="290" font-family="monospace" font-size="16" text-anchor="middle" fill="#fff">${taskId}</text>
</svg>
`
}

export const SimulatedImagesLive = HttpApiBuilder.group(Api, "simulatedImages", (handlers) =>
  Effect.gen(function*() {
    const { mode } = yield* ImageVendor
    return handlers.handle("simulatedImage", ({ path }) => {
      const match = simulatedFile.exec(path.file)
      return mode === "simulated" && match
        ? Effect.succeed(simulatedSvg(match[1]!.toLowerCase()))
        : Effect.fail(new NotFound({ message: `No simulated image '${path.file}'` }))
    })
  }))

/**
 * With VENDOR_MODE=simulated every answer of the image proxy, errors included, carries
 * `x-vendor-mode: simulated`, so that nobody mistakes its images for a vendor's.
 */
export const SimulatedModeHeader = HttpApiBuilder.middleware(
  Effect.map(AppConfig, (config) => (app) =>
    config.vendorMode !== "simulated"
      ? app
      : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        request.url.startsWith("/proxy/imagevendor/")
          ? Effect.zipRight(
            HttpApp.appendPreResponseHandler((_request, response) =>
              Effect.succeed(HttpServerResponse.setHeader(response, "x-vendor-mode", "simulated"))
            ),
            app
          )
          : app))
)
