/**
 * ImageTasks on stub layers with TestClock: a repeated Idempotency-Key waits for the first
 * request's task (looking again every 25 ms, until the vendor timeout and a grace have passed),
 * refuses another body at once, and never calls the vendor itself.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { CurrentUser } from "../../src/Domain/Auth.ts"
import { ImageTasks, requestHash } from "../../src/Images/Service.ts"
import { ClaimOutcome, type StoredTask, TaskRepo } from "../../src/Images/TaskRepo.ts"
import { ImageVendor } from "../../src/Images/Vendor.ts"
import { failureTag, stub, testConfig } from "../support/Stub.ts"
import { Metering } from "../../src/Customers/Metering.ts"

const vendorTimeoutMillis = 10_000
const graceMillis = 2_000

const caller = { id: "ann", email: undefined, name: undefined, isSiteAdmin: false }
const body = { image: "https://images.example/face.png", sharpen: 0, smart_grain: 2 }
const hash = requestHash("skin-enhancer", body)
const task: StoredTask = {
  id: "4f8a3bde-9f0e-4b41-8a59-2f7a1c3e9d10",
  vendorTaskId: "v-1",
  kind: "skin-enhancer",
  status: "CREATED",
  generated: []
}

/** ImageTasks over a stub TaskRepo, a vendor that must not be called, and a 10 s vendor timeout. */
const tasksWith = (repo: Partial<TaskRepo["Service"]>) =>
  ImageTasks.layerWithoutDependencies.pipe(
    Layer.provide([
      stub(TaskRepo, repo),
      stub(Metering, { begin: () => Effect.succeed({ recorded: () => Effect.void, end: () => Effect.void }) }),
      stub(ImageVendor, {}),
      testConfig((c) => ({ ...c, vendorTimeoutMillis }))
    ])
  )

const held = (taskId: Option.Option<string>, requestHash = hash) => ClaimOutcome.Held({ requestHash, taskId })

/** Starts with the key `k`, as `ann`, in a fiber of its own. */
const startWithKey = (layer: Layer.Layer<ImageTasks>) =>
  Effect.flatMap(ImageTasks, (tasks) => tasks.start("skin-enhancer/creative", body, "k")).pipe(
    Effect.provideService(CurrentUser, caller),
    Effect.provide(layer),
    Effect.forkChild
  )

it.effect("a repeat waits for the first request's task, looking again every 25 ms", () =>
  Effect.gen(function*() {
    let reads = 0
    const fiber = yield* startWithKey(tasksWith({
      claimKey: () => Effect.succeed(held(Option.none())),
      readKey: () =>
        Effect.sync(() => {
          reads++
          return Option.some(held(reads >= 4 ? Option.some(task.id) : Option.none()))
        }),
      find: (ownerId, kind, id) =>
        Effect.succeed(ownerId === caller.id && kind === "skin-enhancer" && id === task.id ? Option.some(task) : Option.none())
    }))
    // one look every 25 ms, none in between
    for (const expected of [1, 2, 3]) {
      yield* TestClock.adjust(24)
      expect(reads).toBe(expected - 1)
      yield* TestClock.adjust(1)
      expect(reads).toBe(expected)
    }
    expect(fiber.pollUnsafe()).toBeUndefined()
    yield* TestClock.adjust(25)
    expect(yield* Fiber.join(fiber)).toEqual(task)
    expect(reads).toBe(4)
  }))

it.effect("a repeat gives up with KeyInProgress once the vendor timeout and its grace have passed", () =>
  Effect.gen(function*() {
    const fiber = yield* startWithKey(tasksWith({
      claimKey: () => Effect.succeed(held(Option.none())),
      readKey: () => Effect.succeed(Option.some(held(Option.none())))
    }))
    yield* TestClock.adjust(vendorTimeoutMillis + graceMillis - 50)
    expect(fiber.pollUnsafe()).toBeUndefined()
    yield* TestClock.adjust(100)
    const exit = yield* Fiber.await(fiber)
    expect(failureTag(exit)).toBe("KeyInProgress")
  }))

it.effect("the same key with another body is KeyReused at once", () =>
  Effect.gen(function*() {
    const fiber = yield* startWithKey(tasksWith({
      claimKey: () => Effect.succeed(held(Option.none(), requestHash("skin-enhancer", { ...body, sharpen: 50 })))
    }))
    const exit = yield* Fiber.await(fiber)
    expect(failureTag(exit)).toBe("KeyReused")
  }))

it.effect("a key the first request let go is claimed again by the repeat, which then starts the task itself", () =>
  Effect.gen(function*() {
    let claims = 0
    let started = 0
    const layer = ImageTasks.layerWithoutDependencies.pipe(
      Layer.provide([
        stub(TaskRepo, {
          claimKey: () => Effect.sync(() => (++claims === 1 ? held(Option.none()) : ClaimOutcome.Claimed())),
          readKey: () => Effect.succeed(Option.none()),
          create: (t) => Effect.succeed(Option.some({ ...task, id: t.id, vendorTaskId: t.vendorTaskId }))
        }),
        stub(Metering, { begin: () => Effect.succeed({ recorded: () => Effect.void, end: () => Effect.void }) }),
      stub(ImageVendor, {
          start: () => Effect.sync(() => ({ taskId: `v-${++started}`, status: Option.some("CREATED" as const), generated: [] }))
        }),
        testConfig((c) => ({ ...c, vendorTimeoutMillis }))
      ])
    )
    const fiber = yield* startWithKey(layer)
    yield* TestClock.adjust(25)
    const stored = yield* Fiber.join(fiber)
    expect({ claims, started, vendorTaskId: stored.vendorTaskId }).toEqual({ claims: 2, started: 1, vendorTaskId: "v-1" })
  }))
