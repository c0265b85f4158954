/**
 * ImageTasks on stub layers: a finished task's poll is answered from memory, without the vendor or
 * the database, to its owner only and for its own kind; an unfinished one is looked up every time.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { CurrentUser, type User } from "../../src/Domain/Auth.ts"
import type { ImageTaskKind, MediaTaskStatus } from "../../src/Domain/Media.ts"
import { ImageTasks } from "../../src/Images/Service.ts"
import { type StoredTask, TaskRepo } from "../../src/Images/TaskRepo.ts"
import { ImageVendor } from "../../src/Images/Vendor.ts"
import { failureTag, stub, testConfig } from "../support/Stub.ts"
import { Metering } from "../../src/Customers/Metering.ts"

const ann: User = { id: "ann", email: undefined, name: undefined, isSiteAdmin: false }
const bob: User = { ...ann, id: "bob" }
const created: StoredTask = {
  id: "4f8a3bde-9f0e-4b41-8a59-2f7a1c3e9d10",
  vendorTaskId: "v-1",
  kind: "skin-enhancer",
  status: "CREATED",
  generated: []
}
const done = ["https://images.example/done.png"]

/** ImageTasks over a one-task database of ann's and a vendor answering `vendorStatus`, counting both. */
const world = (stored: StoredTask, vendorStatus: MediaTaskStatus) => {
  const counts = { finds: 0, vendorPolls: 0, advances: 0 }
  let row = stored
  const layer = ImageTasks.layerWithoutDependencies.pipe(
    Layer.provide([
      stub(TaskRepo, {
        find: (ownerId, kind, id) =>
          Effect.sync(() => {
            counts.finds++
            return ownerId === ann.id && kind === row.kind && id.toLowerCase() === row.id ? Option.some(row) : Option.none()
          }),
        advance: (_id, status, generated) =>
          Effect.sync(() => {
            counts.advances++
            row = { ...row, status, generated: generated ?? row.generated }
            return row
          })
      }),
      stub(Metering, { begin: () => Effect.succeed({ recorded: () => Effect.void, end: () => Effect.void }) }),
      stub(ImageVendor, {
        poll: (_kind, vendorTaskId) =>
          Effect.sync(() => {
            counts.vendorPolls++
            return { taskId: vendorTaskId, status: Option.some(vendorStatus), generated: vendorStatus === "COMPLETED" ? done : [] }
          })
      }),
      testConfig()
    ])
  )
  const poll = (user: User, kind: ImageTaskKind = "skin-enhancer", id = stored.id) =>
    Effect.flatMap(ImageTasks, (tasks) => tasks.poll(kind, id)).pipe(Effect.provideService(CurrentUser, user))
  return { counts, layer, poll }
}

it.effect("a task the vendor finished is answered from memory afterwards, whatever the case of its id", () => {
  const { counts, layer, poll } = world(created, "COMPLETED")
  return Effect.gen(function*() {
    const first = yield* poll(ann)
    expect(first).toEqual({ ...created, status: "COMPLETED", generated: done })
    expect(counts).toEqual({ finds: 1, vendorPolls: 1, advances: 1 })
    expect(yield* poll(ann)).toEqual(first)
    expect(yield* poll(ann, "skin-enhancer", created.id.toUpperCase())).toEqual(first)
    expect(counts).toEqual({ finds: 1, vendorPolls: 1, advances: 1 })
  }).pipe(Effect.provide(layer))
})

it.effect("a task found finished in the database is read once and never asked of the vendor", () => {
  const { counts, layer, poll } = world({ ...created, status: "FAILED" }, "IN_PROGRESS")
  return Effect.gen(function*() {
    expect((yield* poll(ann)).status).toBe("FAILED")
    expect((yield* poll(ann)).status).toBe("FAILED")
    expect(counts).toEqual({ finds: 1, vendorPolls: 0, advances: 0 })
  }).pipe(Effect.provide(layer))
})

it.effect("a remembered task is still no one else's, and not another kind's", () => {
  const { counts, layer, poll } = world({ ...created, status: "COMPLETED" }, "COMPLETED")
  return Effect.gen(function*() {
    yield* poll(ann)
    expect(failureTag(yield* Effect.exit(poll(bob)))).toBe("TaskMissing")
    expect(failureTag(yield* Effect.exit(poll(ann, "image-style-transfer")))).toBe("TaskMissing")
    // both were asked of the database, which answers only the owner's task of its kind
    expect(counts).toEqual({ finds: 3, vendorPolls: 0, advances: 0 })
  }).pipe(Effect.provide(layer))
})

it.effect("an unfinished task is looked up, and asked of the vendor, at every poll", () => {
  const { counts, layer, poll } = world(created, "IN_PROGRESS")
  return Effect.gen(function*() {
    for (let i = 0; i < 3; i++) expect(Exit.isSuccess(yield* Effect.exit(poll(ann)))).toBe(true)
    expect((yield* poll(ann)).status).toBe("IN_PROGRESS")
    // the first poll moved it to IN_PROGRESS; the later ones changed nothing
    expect(counts).toEqual({ finds: 4, vendorPolls: 4, advances: 1 })
  }).pipe(Effect.provide(layer))
})
