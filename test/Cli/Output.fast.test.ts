/**
 * What the CLI prints for people: aligned tables, key-value lists, byte counts and the upload's
 * progress bar.
 */
import { describe, expect, it } from "@effect/vitest"
import { bytes, fields, progressLine, shortStatus, table } from "../../src/Cli/Output.ts"

describe("output", () => {
  it("tables align their columns and cut long cells", () => {
    expect(table(["ID", "VERSION", "DESCRIPTION"], [["a", "1.0.0", "first"], ["longer-id", "10.0.0", "x".repeat(80)]])).toBe(
      [
        "ID         VERSION  DESCRIPTION",
        "a          1.0.0    first",
        `longer-id  10.0.0   ${"x".repeat(59)}…`
      ].join("\n")
    )
    expect(fields([["id", "acme"], ["website", undefined], ["status", "Active"]])).toBe("id      acme\nstatus  Active")
    expect(shortStatus("NodeVersionStatusFlagged")).toBe("Flagged")
  })

  it("the progress bar and byte counts", () => {
    expect(progressLine("uploading", 0, 200, 10)).toBe("uploading [----------]   0%  0 B / 200 B")
    expect(progressLine("uploading", 1536, 3072, 10)).toBe("uploading [#####-----]  50%  1.5 KiB / 3.0 KiB")
    expect(progressLine("uploading", 0, 0, 4)).toBe("uploading [####] 100%  0 B / 0 B")
    expect(bytes(5 * 1024 * 1024)).toBe("5.0 MiB")
  })
})
