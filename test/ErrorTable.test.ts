/**
 * The error classes and the table of codes in docs/api.md: the table is exactly what
 * `scripts/error-table.ts` renders from `apiErrors`, `apiErrors` holds every class, and the classes
 * are well formed (unique snake_case codes, error statuses, a description for the table).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import { errorTable, tablePath, tableSection } from "../scripts/error-table.ts"
import * as ApiErrors from "../src/Domain/ApiErrors.ts"

const { apiErrors } = ApiErrors

const page = fs.readFileSync(tablePath, "utf8")

describe("error codes", () => {
  it("docs/api.md's table is generated from the error classes", () => {
    expect(tableSection(page), "docs/api.md's table of error codes is out of date: run `npm run errors:table`")
      .toBe(errorTable())
  })

  it("apiErrors lists every error class of the module, so the table misses none", () => {
    const declared = Object.values(ApiErrors).filter((value) => typeof value === "function" && "code" in value)
    expect(declared.filter((error) => !(apiErrors as ReadonlyArray<unknown>).includes(error)).map((error) => error.name)).toEqual([])
  })

  it("every code is unique and snake_case", () => {
    const codes = apiErrors.map((error) => error.code)
    expect(codes.filter((code, i) => codes.indexOf(code) !== i), "codes given to two classes").toEqual([])
    expect(codes.filter((code) => !/^[a-z]+(_[a-z]+)*$/.test(code)), "codes that are not snake_case").toEqual([])
  })

  it("every status is an error status", () => {
    const bad = apiErrors.filter((error) => !Number.isInteger(error.status) || error.status < 400 || error.status > 599)
    expect(bad.map((error) => `${error.code}: ${error.status}`)).toEqual([])
  })

  it("every class has a description", () => {
    const bad = apiErrors.filter((error) => error.description.trim() === "")
    expect(bad.map((error) => error.code)).toEqual([])
  })
})
