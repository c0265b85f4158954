/**
 * The OpenAPI document through the tools its readers use: Ajv in strict JSON Schema 2020-12 mode,
 * Redocly's recommended rules, and openapi-typescript's output (checked in, compiled by the
 * project's strict tsconfig, asserted in GeneratedTypes.fast.test.ts). Apart from
 * Document.fast.test.ts because loading and running these tools takes seconds, more than a
 * contributor's fast loop should spend.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormatsPlugin from "ajv-formats"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { generatedTypes, typesBaseUrl } from "../../scripts/lib/OpenApiTypes.ts"
import { apiDocument } from "../../src/ApiDocument.ts"

type Json = Record<string, any>

const document: Json = apiDocument(typesBaseUrl)
const schemas: Json = document.components.schemas
const root = path.resolve(import.meta.dirname, "../..")

describe("the OpenAPI document through its readers' tools", () => {
  it("every component schema compiles in Ajv (JSON Schema 2020-12, strict mode)", () => {
    const ajv = new Ajv2020({ strict: true, discriminator: true })
    addFormatsPlugin.default(ajv)
    const base = "https://schemas.registry.test/components/schemas/"
    for (const [name, schema] of Object.entries<Json>(schemas)) {
      const absolute = JSON.parse(JSON.stringify(schema).replaceAll("\"#/components/schemas/", `"${base}`))
      ajv.addSchema({ ...absolute, $id: base + name })
    }
    for (const name of Object.keys(schemas)) {
      expect(() => ajv.getSchema(base + name), name).not.toThrow()
      expect(ajv.getSchema(base + name), name).toBeTypeOf("function")
    }
    // the main records' examples are there (JSONSchema drops one that does not encode) and valid
    for (const name of ["Node", "NodeVersion", "Publisher", "NodeList", "MediaTask"]) {
      const example = schemas[name].examples?.[0]
      expect(example, `${name} has an example`).toBeDefined()
      const valid = ajv.getSchema(base + name)!
      expect(valid(example), `${name}: ${JSON.stringify(valid.errors)}`).toBe(true)
    }
    // and the schemas say what the service sends: a node without its id is no node
    const validNode = ajv.getSchema(`${base}Node`)!
    const { id: _, ...withoutId } = schemas.Node.examples[0]
    expect(validNode(withoutId)).toBe(false)
  })

  it("passes Redocly's recommended rules without an error or a warning", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "openapi-"))
    try {
      const file = path.join(dir, "openapi.json")
      fs.writeFileSync(file, JSON.stringify(document))
      const cli = path.join(root, "node_modules/@redocly/cli/bin/cli.js")
      const { stdout } = await promisify(execFile)(process.execPath, [cli, "lint", file, "--format=json", "--extends=recommended"], {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }
      }).catch((e: { stdout: string }) => e)
      const report = JSON.parse(stdout)
      expect(report.problems.map((p: Json) => `${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`)).toEqual([])
      expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 })
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it("is what openapi-typescript generates test/OpenApi/openapi.generated.ts from", async () => {
    const committed = fs.readFileSync(path.join(import.meta.dirname, "openapi.generated.ts"), "utf8")
    // if this fails, the document changed: npm run -s openapi -- --types > test/OpenApi/openapi.generated.ts
    expect(await generatedTypes(document)).toBe(committed)
  })
})
