/**
 * What a client generated from /openapi.json with openapi-typescript gets: the records' fields the
 * service always sends are required, exactly as in our own schemas, and no type is `unknown`.
 *
 * These are type assertions: `npm test` runs the type check first, and a wrong type fails there.
 * The committed generated file is kept current by Document.fast.test.ts.
 */
import { describe, expectTypeOf, it } from "vitest"
import type { MediaTask, MediaTaskStatus } from "../../src/Domain/Media.ts"
import type { Node, NodeList, NodeStatus, NodeVersion, NodeVersionStatus } from "../../src/Domain/Node.ts"
import type { Publisher } from "../../src/Domain/Publisher.ts"
import type { components } from "./openapi.generated.ts"

type Generated = components["schemas"]

/** The keys of `T` that are not optional. */
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T]

type IsUnknown<T> = unknown extends T ? true : false

/** Whether `unknown` appears anywhere in `T` (a few levels deep: the records nest at most that much). */
type HasUnknown<T, Depth extends ReadonlyArray<0> = []> = Depth["length"] extends 6 ? false
  : IsUnknown<T> extends true ? true
  : T extends ReadonlyArray<infer Item> ? HasUnknown<Item, [...Depth, 0]>
  : T extends object ? true extends { [K in keyof T]-?: HasUnknown<T[K], [...Depth, 0]> }[keyof T] ? true : false
  : false

describe("the types openapi-typescript generates", () => {
  it("require what the service always sends, as our schemas do", () => {
    expectTypeOf<RequiredKeys<Generated["Node"]>>().toEqualTypeOf<RequiredKeys<typeof Node.Encoded>>()
    expectTypeOf<RequiredKeys<Generated["NodeVersion"]>>().toEqualTypeOf<RequiredKeys<typeof NodeVersion.Encoded>>()
    expectTypeOf<RequiredKeys<Generated["Publisher"]>>().toEqualTypeOf<RequiredKeys<typeof Publisher.Encoded>>()
    expectTypeOf<RequiredKeys<Generated["NodeList"]>>().toEqualTypeOf<RequiredKeys<typeof NodeList.Encoded>>()
    expectTypeOf<RequiredKeys<Generated["MediaTask"]>>().toEqualTypeOf<RequiredKeys<typeof MediaTask.Encoded>>()
    // the ones a client can least do without, named
    expectTypeOf<"id" | "status" | "publisher" | "downloads">().toMatchTypeOf<RequiredKeys<Generated["Node"]>>()
    // indexed directly by ComfyUI-Manager (glob/manager_core.py) and comfy-cli (comfy_cli/registry/api.py)
    expectTypeOf<"id" | "name" | "description">().toMatchTypeOf<RequiredKeys<Generated["Node"]>>()
    expectTypeOf<"id" | "name">().toMatchTypeOf<RequiredKeys<Generated["Publisher"]>>()
    expectTypeOf<"id" | "version" | "status" | "createdAt">().toMatchTypeOf<RequiredKeys<Generated["NodeVersion"]>>()
    expectTypeOf<"nodes" | "total" | "page" | "limit" | "totalPages">().toEqualTypeOf<RequiredKeys<Generated["NodeList"]>>()
    expectTypeOf<"task_id" | "status" | "generated">().toEqualTypeOf<RequiredKeys<Generated["MediaTask"]>>()
  })

  it("type statuses as their enumerations", () => {
    expectTypeOf<Generated["Node"]["status"]>().toEqualTypeOf<NodeStatus>()
    expectTypeOf<Generated["NodeVersion"]["status"]>().toEqualTypeOf<NodeVersionStatus>()
    expectTypeOf<Generated["MediaTask"]["status"]>().toEqualTypeOf<typeof MediaTaskStatus.Type>()
    expectTypeOf<Generated["NodeVersion"]["deprecated"]>().toEqualTypeOf<boolean>()
  })

  it("have no unknown types", () => {
    expectTypeOf<HasUnknown<Generated["Node"]>>().toEqualTypeOf<false>()
    expectTypeOf<HasUnknown<Generated["NodeVersion"]>>().toEqualTypeOf<false>()
    expectTypeOf<HasUnknown<Generated["Publisher"]>>().toEqualTypeOf<false>()
    expectTypeOf<HasUnknown<Generated["NodeList"]>>().toEqualTypeOf<false>()
    expectTypeOf<HasUnknown<Generated["MediaTask"]>>().toEqualTypeOf<false>()
    // the check itself sees an unknown
    expectTypeOf<HasUnknown<{ a: { b: ReadonlyArray<unknown> } }>>().toEqualTypeOf<true>()
  })
})
