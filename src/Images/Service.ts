/**
 * Image tasks: start a task at the vendor and record it with its owner; answer polls from the
 * vendor without ever moving a status backwards; make a repeated Idempotency-Key answer the first
 * request's task with one vendor call.
 */
import { Clock, Context, Data, Effect, Fiber, Layer, Option, Schedule } from "effect"
import { HttpServerRequest } from "effect/http"
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { AppConfig } from "../Config.ts"
import { CurrentUser } from "../Domain/Auth.ts"
import { type ImageOperation, type ImageTaskKind, MediaTask, taskKindOf, terminalStatuses } from "../Domain/Media.ts"
import { isUuid } from "../Domain/Schemas.ts"
import { ClaimOutcome, type KeyClaim, type StoredTask, TaskRepo } from "./TaskRepo.ts"
import { decodeVendorTask, ImageVendor } from "./Vendor.ts"
import type { VendorFailure, VendorUnconfigured } from "../Vendors/Failure.ts"
import type { VendorTask } from "./Vendor.ts"
import { traced } from "../Tracing.ts"
import { type Caller, Metering, type OverQuota } from "../Customers/Metering.ts"

export class TaskMissing extends Data.TaggedError("TaskMissing")<{ readonly taskId: string }> {
  override get message() {
    return `No task '${this.taskId}' of yours`
  }
}

export class KeyReused extends Data.TaggedError("KeyReused")<{ readonly key: string }> {
  override get message() {
    return `Idempotency-Key '${this.key}' was used with another request body within the last 24 hours`
  }
}

/** A callback whose token is no task's. */
export class CallbackUnknown extends Data.TaggedError("CallbackUnknown") {
  override get message() {
    return "No task has this callback URL"
  }
}

/** A callback that does not name its token's task, or names no task: nothing is changed. */
export class CallbackRefused extends Data.TaggedError("CallbackRefused")<{ readonly reason: string }> {
  override get message() {
    return `Callback refused: ${this.reason}`
  }
}

export class KeyInProgress extends Data.TaggedError("KeyInProgress")<{ readonly key: string }> {
  override get message() {
    return `A request with Idempotency-Key '${this.key}' is still in progress; retry later`
  }
}

/** JSON with keys sorted at every level: equal meaning, equal text. */
const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
    ? `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`
    : JSON.stringify(value)

/**
 * The hash an Idempotency-Key is bound to: the request as decoded, defaults applied. The skin
 * enhancer's modes share their kind's keys without naming the mode here: their bodies differ
 * anyway (after the defaults, faithful always has `skin_detail`, flexible `optimized_for`,
 * creative neither), so one key given to two modes is a key reused.
 */
export const requestHash = (kind: ImageTaskKind, body: unknown): Uint8Array =>
  createHash("sha256").update(`${kind}\n${canonicalJson(body)}`).digest()

const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b) === 0

/** How often a repeated key looks whether the first request has finished. */
const keyPollMillis = 25
/** How much longer than the vendor timeout a repeat waits for the first request. */
const keyWaitGraceMillis = 2_000

/** Finished tasks an instance remembers at most (the oldest remembered is forgotten first). */
const finishedCapacity = 10_000

/** Why a start at the vendor failed. */
type StartFailure = VendorFailure | VendorUnconfigured | OverQuota

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * The bytes of the request's body for its usage event: its Content-Length, read from the request
 * the start runs in (0 outside one), rather than encoding the body again.
 */
const requestBytes = Effect.map(Effect.serviceOption(HttpServerRequest.HttpServerRequest), (request) =>
  Option.match(request, {
    onNone: () => 0,
    onSome: (r) => {
      const n = Number(r.headers["content-length"])
      return Number.isSafeInteger(n) && n >= 0 ? n : 0
    }
  }))

/** The size of a start's answer, for its usage event. */
const answerBytes = (task: StoredTask) => Buffer.byteLength(JSON.stringify(toWire(task)))

/** The hash a callback token is stored as (the token itself is only in the URL the vendor holds). */
export const callbackTokenHash = (token: string) => createHash("sha256").update(token).digest()

/** Where the vendor calls back for one task: unguessable (256 random bits), bound to that task. */
export const callbackPath = (token: string) => `/proxy/imagevendor/callbacks/${token}`

/** A stored task as clients see it. */
export const toWire = (task: StoredTask) =>
  new MediaTask({ task_id: task.id, status: task.status, generated: task.generated }, { disableChecks: true })

export class ImageTasks extends Context.Service<ImageTasks>()("ImageTasks", {
  make: Effect.gen(function*() {
    const vendor = yield* ImageVendor
    const tasks = yield* TaskRepo
    const { publicBaseUrl, vendorTimeoutMillis } = yield* AppConfig
    const metering = yield* Metering

    /**
     * Finished tasks by id, with their owners. A finished task never changes again (TaskRepo's
     * UPDATE refuses to move it) and nothing deletes tasks, so its poll is answered from here
     * without the vendor or the database; another instance reads it once from the database.
     */
    const finished = new Map<string, { readonly ownerId: string; readonly task: StoredTask }>()
    const remember = (ownerId: string, task: StoredTask) => {
      if (!terminalStatuses.includes(task.status) || finished.has(task.id)) return task
      if (finished.size >= finishedCapacity) finished.delete(finished.keys().next().value!)
      finished.set(task.id, { ownerId, task })
      return task
    }

    /**
     * Starts the task at the vendor and records it (binding the claimed key, if any). It runs to
     * its end even if the caller leaves, so that a task the vendor started is never lost; a
     * failure releases the key so that a retry may try again.
     */
    const startAtVendor = (
      caller: Caller & { readonly bytesIn: number },
      operation: ImageOperation,
      body: Readonly<Record<string, unknown>>,
      claim: Option.Option<KeyClaim>
    ) =>
      Effect.gen(function*() {
        const ownerId = caller.customerId
        // the quota is taken here, where the vendor is called, so that a repeated key costs nothing
        const meter = yield* metering.begin(caller, operation, { holds: "start" })
        // the vendor is given our callback URL, never the client's webhook_url (kept with the task)
        const token = randomBytes(32).toString("base64url")
        const webhookUrl = typeof body["webhook_url"] === "string" ? body["webhook_url"] : undefined
        const started = yield* vendor.start(operation, { ...body, webhook_url: publicBaseUrl + callbackPath(token) }).pipe(
          Effect.onError(() => meter.end("failed", { in: caller.bytesIn }))
        )
        const record = (id: string) =>
          tasks.create({
            id,
            vendorTaskId: started.taskId,
            ownerId,
            kind: taskKindOf(operation),
            status: Option.getOrElse(started.status, () => "CREATED" as const),
            generated: started.generated ?? [],
            callbackTokenHash: callbackTokenHash(token),
            webhookUrl
          }, claim)
        // the vendor's id is the client's when it is a UUID (its webhooks name it); else, or when
        // the vendor repeats an id, one of ours
        const recorded = yield* record(isUuid(started.taskId) ? started.taskId.toLowerCase() : randomUUID())
        const task = Option.isSome(recorded)
          ? recorded.value
          : yield* Effect.flatMap(record(randomUUID()), (again) => Effect.orDie(Effect.fromOption(again)))
        // the start's hold now counts until this task is COMPLETED or FAILED, however that is seen
        yield* meter.recorded(task.id)
        yield* meter.end("succeeded", { in: caller.bytesIn, out: answerBytes(task) })
        return task
      }).pipe(
        Effect.onError(() => Option.match(claim, { onNone: () => Effect.void, onSome: tasks.releaseKey })),
        // a fiber of its own: a caller who leaves stops waiting, the start (bounded by the vendor timeout) goes on
        Effect.forkDetach,
        Effect.flatMap(Fiber.join)
      )

    /**
     * The vendor's word on a task, by poll or by callback alike: a status this service does not
     * know is not stored, nor one that changes nothing; else the task moves (forwards only).
     */
    const apply = (ownerId: string, task: StoredTask, answer: VendorTask) =>
      Effect.gen(function*() {
        if (Option.isNone(answer.status)) return task
        const unchanged = answer.status.value === task.status &&
          (answer.generated === undefined || sameList(answer.generated, task.generated))
        return unchanged ? task : remember(ownerId, yield* tasks.advance(task.id, answer.status.value, answer.generated))
      })

    const ownTask = (ownerId: string, kind: ImageTaskKind, taskId: string) =>
      Effect.flatMap(tasks.find(ownerId, kind, taskId), Option.match({
        onNone: () => Effect.fail(new TaskMissing({ taskId })),
        onSome: Effect.succeed
      }))

    /** What a key held by an earlier request answers: its task, once it has one. */
    const heldBy = (
      claim: KeyClaim,
      held: Extract<ClaimOutcome, { _tag: "Held" }>
    ): Effect.Effect<StoredTask, KeyReused | KeyInProgress | TaskMissing> =>
      !sameBytes(held.requestHash, claim.requestHash)
        ? Effect.fail(new KeyReused({ key: claim.key }))
        : Option.match(held.taskId, {
          onNone: () => Effect.fail(new KeyInProgress({ key: claim.key })),
          onSome: (taskId) => ownTask(claim.ownerId, claim.kind, taskId)
        })

    /**
     * With a key: the first request claims it and calls the vendor; a repeat with the same body
     * answers the task it started, looking again every `keyPollMillis` until `deadline` while it
     * is still at the vendor. A key let go meanwhile (the first request failed) is claimed again.
     */
    const startIdempotently = (
      caller: Caller & { readonly bytesIn: number },
      claim: KeyClaim,
      operation: ImageOperation,
      body: Readonly<Record<string, unknown>>,
      deadline: number
    ): Effect.Effect<StoredTask, StartFailure | TaskMissing | KeyReused | KeyInProgress> =>
      Effect.flatMap(tasks.claimKey(claim), (outcome): Effect.Effect<StoredTask, StartFailure | TaskMissing | KeyReused | KeyInProgress> =>
        ClaimOutcome.$match(outcome, {
          Claimed: () => startAtVendor(caller, operation, body, Option.some(claim)),
          Held: (held) =>
            heldBy(claim, held).pipe(
              Effect.catchTag("KeyInProgress", () =>
                Effect.flatMap(
                  tasks.readKey(claim),
                  (now): Effect.Effect<StoredTask, StartFailure | TaskMissing | KeyReused | KeyInProgress> =>
                    Option.isNone(now) ? startIdempotently(caller, claim, operation, body, deadline) : heldBy(claim, now.value)
                ).pipe(
                  Effect.retry({
                    schedule: Schedule.spaced(keyPollMillis),
                    while: (e) =>
                      e._tag === "KeyInProgress"
                        ? Effect.map(Clock.currentTimeMillis, (now) => now <= deadline)
                        : Effect.succeed(false)
                  }),
                  Effect.delay(keyPollMillis)
                ))
            )
        }))

    return {
      /** Starts a task of the caller's; with an Idempotency-Key, at most once per key and body. */
      start: traced("ImageTasks.start")(
        function*(operation: ImageOperation, body: Readonly<Record<string, unknown>>, key: string | undefined) {
          const user = yield* CurrentUser
          const caller = { customerId: user.id, apiKeyId: user.apiKeyId, bytesIn: yield* requestBytes }
          if (key === undefined) return yield* startAtVendor(caller, operation, body, Option.none())
          const deadline = (yield* Clock.currentTimeMillis) + vendorTimeoutMillis + keyWaitGraceMillis
          const kind = taskKindOf(operation)
          const claim = { ownerId: user.id, kind, key, requestHash: requestHash(kind, body) }
          return yield* startIdempotently(caller, claim, operation, body, deadline)
        }
      ),

      /** The caller's task, after asking the vendor unless it has finished. */
      poll: traced("ImageTasks.poll")(function*(kind: ImageTaskKind, taskId: string) {
        const user = yield* CurrentUser
        // ids are UUIDs, stored in lower case; anyone else's task, or another kind's, is asked of the database (and is 404)
        const known = finished.get(taskId.toLowerCase())
        if (known !== undefined && known.ownerId === user.id && known.task.kind === kind) return known.task
        const task = yield* ownTask(user.id, kind, taskId)
        if (terminalStatuses.includes(task.status)) return remember(user.id, task)
        return yield* apply(user.id, task, yield* vendor.poll(kind, task.vendorTaskId))
      }),

      /**
       * The vendor's callback for the task of `token`: the payload must be a task, and that task;
       * else nothing changes. Updates the task as a poll would (which queues the client's
       * delivery, if any, when it finishes).
       */
      callback: traced("ImageTasks.callback")(function*(token: string, payload: unknown) {
        const found = yield* tasks.findByCallback(callbackTokenHash(token))
        if (Option.isNone(found)) return yield* new CallbackUnknown()
        const { id, kind, owner_id } = found.value
        const answer = yield* decodeVendorTask(payload).pipe(
          Effect.mapError(() => new CallbackRefused({ reason: "the payload is no task (task_id is required)" }))
        )
        const task = yield* Effect.flatMap(tasks.find(owner_id, kind, id), Effect.fromOption).pipe(Effect.orDie)
        if (answer.taskId !== task.vendorTaskId) {
          return yield* new CallbackRefused({ reason: "the payload names another task than this callback URL's" })
        }
        yield* apply(owner_id, task, answer)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(ImageTasks, ImageTasks.make)
  static readonly layer = ImageTasks.layerWithoutDependencies.pipe(Layer.provide([ImageVendor.layer, TaskRepo.layer, Metering.layer]))
}
