/**
 * Features own their wiring and their error answers (docs/architecture.md, "Layers": "One service
 * style" and "Errors"): each feature folder exports one layer of its handlers, which `src/App.ts` names once;
 * no feature imports the whole Api or the application; and the errors every endpoint may answer
 * are declared once, by `AnyEndpoint`, never again on an endpoint.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { Api } from "../src/Api.ts"
import { AnyEndpoint } from "../src/Domain/RegistryApi.ts"

const src = path.resolve(import.meta.dirname, "..", "src")

/** The feature folders: those whose Http.ts builds HttpApi groups. */
const features = fs.readdirSync(src, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(src, entry.name, "Http.ts")))
  .map((entry) => entry.name)
  .filter((folder) => fs.readFileSync(path.join(src, folder, "Http.ts"), "utf8").includes("HttpApiBuilder.group("))

const sourcesOf = (folder: string) =>
  fs.readdirSync(path.join(src, folder)).filter((name) => name.endsWith(".ts")).map((name) => ({
    file: `src/${folder}/${name}`,
    text: fs.readFileSync(path.join(src, folder, name), "utf8")
  }))

const identifierOf = (schema: unknown) => (schema as { readonly ast?: { readonly annotations?: { readonly identifier?: string } } }).ast?.annotations?.identifier

describe("features own their wiring", () => {
  it("there are feature folders to check", () => {
    expect(features).toEqual(expect.arrayContaining(["Catalog", "Publishing", "Tokens"]))
  })

  it("no feature imports the whole Api, the application or the server", () => {
    const offending = features.flatMap((folder) =>
      sourcesOf(folder)
        .filter(({ text }) => /from "\.\.\/(Api|App|Server)\.ts"/.test(text))
        .map(({ file }) => file)
    )
    expect(offending).toEqual([])
  })

  it("each feature exports one layer of its handlers, and src/App.ts names each once", () => {
    const app = fs.readFileSync(path.join(src, "App.ts"), "utf8")
    for (const folder of features) {
      const http = fs.readFileSync(path.join(src, folder, "Http.ts"), "utf8")
      expect(http, `src/${folder}/Http.ts`).toMatch(new RegExp(`^export const ${folder}Http = `, "m"))
      expect(app.match(new RegExp(`\\b${folder}Http\\b`, "g"))?.length, `${folder}Http in src/App.ts`).toBe(2)
    }
  })
})

describe("the errors every endpoint may answer are declared once", () => {
  const everyEndpoint = new Set([...AnyEndpoint.error].map(identifierOf))
  const endpoints = Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ name: `${group.identifier}.${endpoint.identifier}`, endpoint }))
  )

  it("AnyEndpoint declares BadRequest and InternalError", () => {
    expect([...everyEndpoint].sort()).toEqual(["BadRequest", "InternalError"])
  })

  it("every endpoint of the Api is under AnyEndpoint", () => {
    const outside = endpoints.filter(({ endpoint }) => ![...endpoint.middlewares].some((m) => m === AnyEndpoint)).map(({ name }) => name)
    expect(endpoints.length).toBeGreaterThan(50)
    expect(outside).toEqual([])
  })

  it("no endpoint declares them again", () => {
    const repeated = endpoints.flatMap(({ name, endpoint }) =>
      [...endpoint.error].map(identifierOf).filter((id) => everyEndpoint.has(id)).map((id) => `${name}: ${id}`)
    )
    expect(repeated).toEqual([])
  })
})
