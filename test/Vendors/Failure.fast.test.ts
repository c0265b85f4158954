/** What a vendor's error body says, for the 400s that pass its words on. */
import { describe, expect, it } from "@effect/vitest"
import { vendorMessage } from "../../src/Vendors/Failure.ts"

describe("vendorMessage", () => {
  it("reads message, error.message, data.message, detail or error, the first that says something", () => {
    expect(vendorMessage(JSON.stringify({ message: " too dark ", detail: "x" }))).toBe("too dark")
    expect(vendorMessage(JSON.stringify({ error: { message: "bad image" } }))).toBe("bad image")
    expect(vendorMessage(JSON.stringify({ data: { message: "no face found" } }))).toBe("no face found")
    expect(vendorMessage(JSON.stringify({ message: "  ", detail: "unsupported engine" }))).toBe("unsupported engine")
    expect(vendorMessage(JSON.stringify({ error: "quota" }))).toBe("quota")
    expect(vendorMessage(JSON.stringify({ message: "m".repeat(600) }))).toBe("m".repeat(500))
  })

  it("takes a short plain-text body as it is, and nothing from HTML, other JSON or silence", () => {
    expect(vendorMessage(" image too small \n")).toBe("image too small")
    expect(vendorMessage("<html><body>Bad Request</body></html>")).toBeUndefined()
    expect(vendorMessage(JSON.stringify({ code: 17 }))).toBeUndefined()
    expect(vendorMessage("[1, 2]")).toBeUndefined()
    expect(vendorMessage("x".repeat(501))).toBeUndefined()
    expect(vendorMessage("")).toBeUndefined()
  })
})
