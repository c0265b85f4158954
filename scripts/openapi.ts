/**
 * Writes the OpenAPI document, as `/openapi.json` serves it, for tools that read a file:
 * `npm run -s openapi -- [--url <publicBaseUrl>] [--types]`. With `--types`, the TypeScript types
 * openapi-typescript generates from it instead (test/OpenApi/openapi.generated.ts is that output).
 */
import { parseArgs } from "node:util"
import { apiDocument } from "../src/ApiDocument.ts"
import { generatedTypes, typesBaseUrl } from "./lib/OpenApiTypes.ts"

const { values } = parseArgs({
  options: { url: { type: "string" }, types: { type: "boolean", default: false } }
})
const document = apiDocument(values.url ?? (values.types ? typesBaseUrl : "http://localhost:8080"))
process.stdout.write(values.types ? await generatedTypes(document) : `${JSON.stringify(document, null, 2)}\n`)
