/**
 * The scanner over whole archives (src/Moderation/Scanner.ts): packs written here as zips, the
 * findings with their files and lines, native programs found by their first bytes whatever their
 * name, binary data under a source file's name, and bad archives (a lying header, a huge file,
 * many files past the reading budget, random bytes) scanned within bounds as findings.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { FileScanner } from "../../src/Moderation/FileScanner.ts"
import { defaultScanLimits, nativeMagic, scanArchive, type ScanLimits, worstSeverity } from "../../src/Moderation/Scanner.ts"
import { forAll } from "../support/Property.ts"
import { rawZip, zipOf } from "../support/Zip.ts"

/** Scans `bytes` as an archive file, as the local store hands it to the scanner. */
const scanned = (bytes: Uint8Array, limits: ScanLimits = defaultScanLimits) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), "scan-"))
      await fs.writeFile(path.join(dir, "a.zip"), bytes)
      return dir
    }),
    (dir) => Effect.provide(scanArchive(path.join(dir, "a.zip"), limits), FileScanner.inline),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

const elf = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(60).fill(0)])

describe("scanning archives", () => {
  it.effect("an honest pack raises nothing", () =>
    Effect.gen(function*() {
      const zip = yield* Effect.promise(() =>
        zipOf({
          "__init__.py": "from .nodes import NODE_CLASS_MAPPINGS\n",
          "nodes.py": "import torch\n\nclass Blur:\n    def run(self, image):\n        return (image,)\n",
          "requirements.txt": "opencv-python>=4.8\n",
          "web/widget.js": "app.registerExtension({ name: 'blur' })\n",
          "README.md": "curl https://x | sh  (not a script: not read)\n",
          "models/weights.safetensors": Buffer.alloc(1024, 7)
        })
      )
      const result = yield* scanned(zip)
      expect(result.findings).toEqual([])
      expect(result.filesScanned).toBe(4)
      expect(result.ruleSetVersion).toMatch(/^\d{4}\.\d{2}\.\d{2}$/)
    }))

  it.effect("a malicious pack: each finding with its rule, severity, file, line and excerpt", () =>
    Effect.gen(function*() {
      const zip = yield* Effect.promise(() =>
        zipOf({
          "__init__.py": "import base64\nfrom .nodes import *\nexec(base64.b64decode(K))\n",
          "tools/helper": elf,
          "lib/fast.pyd": Buffer.concat([Buffer.from("MZ"), Buffer.alloc(100)]),
          "icons/logo.png": Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 0, 0]),
          "nodes.py": Buffer.from([0x00, 0x01, 0xff, 0xfe])
        })
      )
      const result = yield* scanned(zip)
      expect(result.findings).toEqual(expect.arrayContaining([
        { rule: "exec-decoded-data", severity: "high", file: "__init__.py", line: 3, excerpt: "exec(base64.b64decode(K))" },
        expect.objectContaining({ rule: "native-executable", severity: "medium", file: "tools/helper" }),
        expect.objectContaining({ rule: "native-executable", file: "lib/fast.pyd" }),
        expect.objectContaining({ rule: "binary-source", file: "nodes.py" })
      ]))
      // an image is not looked at for executables: its name says what it is for
      expect(result.findings.map((f) => f.file)).not.toContain("icons/logo.png")
      expect(worstSeverity(result.findings)).toBe("high")
    }))

  it.effect("files over the limits are recorded as not read, not read", () =>
    Effect.gen(function*() {
      const limits = { maxFileBytes: 100, maxReadBytes: 200, maxFindings: 3 }
      const zip = yield* Effect.promise(() =>
        zipOf({
          "big.py": "x = 1\n".repeat(50),
          "a.py": "a = 1\n".repeat(15),
          "b.py": "b = 1\n".repeat(15),
          "c.py": "c = 1\n".repeat(15),
          "d.py": "d = 1\n".repeat(15)
        })
      )
      const result = yield* scanned(zip, limits)
      expect(result.findings.map((f) => [f.rule, f.file])).toEqual([["not-scanned", "big.py"], ["not-scanned", "c.py"], ["not-scanned", "d.py"]])
      expect(result.filesScanned).toBe(2)
      // past maxFindings: counted, not kept
      const many = yield* scanned(yield* Effect.promise(() => zipOf({ "x.py": "exec(base64.b64decode(a))\n".repeat(3), "y.py": "exec(zlib.decompress(b))\n".repeat(3) })), {
        ...defaultScanLimits,
        maxFindings: 4
      })
      expect(many.findings).toHaveLength(4)
      expect(many.dropped).toBe(2)
    }))

  it.effect("a header that declares less than the entry holds: not read past it", () =>
    Effect.gen(function*() {
      const result = yield* scanned(rawZip([{ name: "liar.py", content: "import os\n".repeat(100), declaredSize: 10 }]))
      expect(result.findings.map((f) => f.rule)).toEqual(["not-scanned"])
    }))

  it.effect("any bytes: a finding at worst, within bounds", () =>
    forAll({ bytes: fc.uint8Array({ maxLength: 4000 }) }, ({ bytes }) =>
      Effect.map(scanned(bytes), (result) => {
        expect(result.findings.length).toBeLessThanOrEqual(defaultScanLimits.maxFindings)
        for (const f of result.findings) expect(["not-scanned", "binary-source", "native-executable"]).toContain(f.rule)
      }), { numRuns: 50 }))

  // a rescan reads a small archive whole and scans it from memory (src/Moderation/Rescan.ts)
  it.effect("an archive read into memory scans as it does from its file", () => {
    const files = fc.dictionary(
      fc.constantFrom("__init__.py", "nodes.py", "install.sh", "requirements.txt", "web/a.js", "bin/tool", "README.md"),
      fc.oneof(
        fc.string(),
        fc.constantFrom("import base64\nexec(base64.b64decode(K))\n", "git+https://h/x\n", "\u0000\u0001", "\u007fELF\u0002\u0001")
      ),
      { maxKeys: 6 }
    )
    const archive = fc.oneof(
      files.map((entries) => ({ entries })),
      fc.uint8Array({ maxLength: 2000 }).map((raw) => ({ raw }))
    )
    return forAll({ archive }, ({ archive }) =>
      Effect.gen(function*() {
        const bytes = "raw" in archive ? archive.raw : yield* Effect.promise(() => zipOf(archive.entries))
        const fromMemory = yield* Effect.provide(scanArchive(Buffer.from(bytes)), FileScanner.inline)
        expect(fromMemory).toEqual(yield* scanned(bytes))
      }), { numRuns: 60 })
  })

  it("native programs by their first bytes", () => {
    expect(nativeMagic(elf)).toMatch(/ELF/)
    expect(nativeMagic(Buffer.from("MZ\x90\x00"))).toMatch(/PE/)
    expect(nativeMagic(Buffer.from([0xcf, 0xfa, 0xed, 0xfe]))).toMatch(/Mach-O/)
    expect(nativeMagic(Buffer.from("#!/b"))).toBeUndefined()
  })
})
