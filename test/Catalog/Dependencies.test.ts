/**
 * Dependencies as data over real HTTP and PostgreSQL: a publish parses each dependency as a PEP
 * 508 requirement, names the ones that are not in its answer (the publish succeeds) and shows them
 * as such on the version; `POST /dependencies/conflicts` answers, per package, the requirements
 * no version satisfies together with the versions that asked, evaluating markers against the
 * caller's environment or saying it assumed them; versions stored before parsing are parsed by
 * the backfill job.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { query } from "../support/Db.ts"
import { expectBadRequest, expectError, expectStatus, get, send } from "../support/Http.ts"
import { type Running, Service } from "../support/Service.ts"
import { makePublisher, publish } from "../Publishing/Flow.ts"

const check = (service: Running, body: unknown) => send(service, "POST", "/dependencies/conflicts", { body })

layer(Service.layer(), { excludeTestServices: true })("dependencies", (it) => {
  it.effect("a publish names the dependencies that are not requirements, succeeds, and the version shows them parsed", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const acme = yield* makePublisher(service, "acme")
      const answer = expectStatus(
        yield* publish(service, "acme", "lamp", "1.0.0", {
          pat: acme.pat,
          versionFields: { dependencies: ["numpy>=2", "Pillow[jpeg] <10 ; sys_platform == 'win32'", "opencv-python!!", "torch"] }
        }),
        201,
        "publish lamp"
      )
      const body = answer.body as { dependency_problems?: Array<{ requirement: string; error: string }>; node_version: Record<string, unknown> }
      expect(body.dependency_problems).toEqual([{ requirement: "opencv-python!!", error: expect.stringMatching(/at character 14/) }])
      const version = (yield* get(service, "/nodes/lamp/versions/1.0.0")).body as Record<string, unknown>
      expect(version.dependencies).toEqual(["numpy>=2", "Pillow[jpeg] <10 ; sys_platform == 'win32'", "opencv-python!!", "torch"])
      expect(version.dependency_requirements).toEqual([
        { requirement: "numpy>=2", name: "numpy", package: "numpy", extras: [], specifier: ">=2" },
        {
          requirement: "Pillow[jpeg] <10 ; sys_platform == 'win32'",
          name: "Pillow",
          package: "pillow",
          extras: ["jpeg"],
          specifier: "<10",
          marker: "sys_platform == 'win32'"
        },
        { requirement: "opencv-python!!", error: expect.any(String) },
        { requirement: "torch", name: "torch", package: "torch", extras: [], specifier: "" }
      ])
      expect(body.node_version.dependency_requirements).toEqual(version.dependency_requirements)
      // every dependency parsed: no problems named
      const clean = expectStatus(
        yield* publish(service, "acme", "shade", "1.0.0", { pat: acme.pat, versionFields: { dependencies: ["NumPy<1.27,>=1.20", "pillow>=10"] } }),
        201,
        "publish shade"
      )
      expect((clean.body as Record<string, unknown>).dependency_problems).toBeUndefined()
      yield* publish(service, "acme", "wick", "1.0.0", { pat: acme.pat, versionFields: { dependencies: ["numpy>=1"] } })
    }))

  it.effect("the conflict check names, per package, the requirements that cannot hold together and who asked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const versions = [
        { node_id: "lamp", version: "1.0.0" },
        { node_id: "shade", version: "1.0.0" },
        { node_id: "wick", version: "1.0.0" },
        { node_id: "nope", version: "1.0.0" }
      ]
      const assumed = expectStatus(yield* check(service, { versions }), 200, "check").body as Record<string, any>
      expect(assumed.conflicts).toEqual([
        {
          package: "numpy",
          requirements: [
            { node_id: "lamp", version: "1.0.0", requirement: "numpy>=2", specifier: ">=2", marker_assumed: false },
            { node_id: "shade", version: "1.0.0", requirement: "NumPy<1.27,>=1.20", specifier: "<1.27,>=1.20", marker_assumed: false }
          ]
        },
        {
          package: "pillow",
          requirements: [
            {
              node_id: "lamp",
              version: "1.0.0",
              requirement: "Pillow[jpeg] <10 ; sys_platform == 'win32'",
              specifier: "<10",
              marker: "sys_platform == 'win32'",
              marker_assumed: true
            },
            { node_id: "shade", version: "1.0.0", requirement: "pillow>=10", specifier: ">=10", marker_assumed: false }
          ]
        }
      ])
      expect(assumed.markers_assumed).toBe(true)
      expect(assumed.unparseable).toEqual([{ node_id: "lamp", version: "1.0.0", requirement: "opencv-python!!", error: expect.any(String) }])
      expect(assumed.not_found).toEqual([{ node_id: "nope", version: "1.0.0" }])

      const linux = expectStatus(yield* check(service, { versions, environment: { sys_platform: "linux" } }), 200, "linux").body as Record<string, any>
      expect(linux.conflicts.map((c: { package: string }) => c.package)).toEqual(["numpy"])
      expect(linux.markers_assumed).toBe(false)

      // versions published before parsing began (no stored parse) are read from their text alike
      yield* query(service, "UPDATE node_versions SET dependency_requirements = NULL WHERE node_id = 'shade'")
      const old = (yield* get(service, "/nodes/shade/versions/1.0.0")).body as Record<string, unknown>
      expect(old.dependency_requirements).toBeUndefined()
      const again = expectStatus(yield* check(service, { versions }), 200, "again").body as Record<string, any>
      expect(again.conflicts).toEqual(assumed.conflicts)

      // the backfill job (queued at every start) parses them and stores the form a publish stores
      yield* query(service, `SELECT graphile_worker.add_job('dependency-parse-backfill', '{"after":"00000000-0000-0000-0000-000000000000"}'::json)`)
      let back: Record<string, unknown> = old
      for (let i = 0; i < 200 && back.dependency_requirements === undefined; i++) {
        yield* Effect.sleep("50 millis")
        back = (yield* get(service, "/nodes/shade/versions/1.0.0")).body as Record<string, unknown>
      }
      expect(back.dependency_requirements).toEqual([
        { requirement: "NumPy<1.27,>=1.20", name: "NumPy", package: "numpy", extras: [], specifier: "<1.27,>=1.20" },
        { requirement: "pillow>=10", name: "pillow", package: "pillow", extras: [], specifier: ">=10" }
      ])
    }))

  it.effect("bad input: 400 naming the field or marker variable, 413 naming versions past 500", () =>
    Effect.gen(function*() {
      const service = yield* Service
      expectBadRequest(yield* check(service, {}), "versions")
      expectBadRequest(yield* check(service, { versions: [{ node_id: "lamp" }] }), "versions.0.version")
      expectBadRequest(yield* check(service, { versions: [], environment: { python: "3.12" } }), "environment.python")
      expectStatus(yield* check(service, { versions: [] }), 200, "empty")
      const many = Array.from({ length: 10_000 }, (_, i) => ({ node_id: `n${i}`, version: "1.0.0" }))
      const e = expectError(yield* check(service, { versions: many }), 413, "payload_too_large")
      expect(e.message).toContain("'versions'")
    }))
})
