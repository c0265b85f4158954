/**
 * The table of error codes in docs/api.md, generated from the error classes so the two cannot
 * drift apart (test/ErrorTable.test.ts fails when they do).
 *
 *   npm run errors:table             rewrite the table in docs/api.md
 *   npm run errors:table -- --check  exit 1 if docs/api.md's table is out of date, write nothing
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { apiErrors } from "../src/Domain/ApiErrors.ts"

export const startMarker = "<!-- error-codes:start -->"
export const endMarker = "<!-- error-codes:end -->"

export const tablePath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../docs/api.md")

/** A pipe inside a cell would end it. */
const cell = (text: string) => text.replaceAll("|", "\\|")

/** One row per class of `apiErrors`, in its order. */
export const errorTable = (): string =>
  [
    "| code | status | meaning |",
    "|---|---|---|",
    ...apiErrors.map((error) => `| \`${error.code}\` | ${error.status} | ${cell(error.description)} |`)
  ].join("\n") + "\n"

/** Where the table lies: from the line after the start marker to the end marker's line. */
const tableBounds = (page: string): { readonly start: number; readonly end: number } | undefined => {
  const marker = page.indexOf(`${startMarker}\n`)
  const end = page.indexOf(endMarker, marker)
  return marker < 0 || end < 0 ? undefined : { start: marker + startMarker.length + 1, end }
}

/** What lies between the marker lines, or undefined without them. */
export const tableSection = (page: string): string | undefined => {
  const bounds = tableBounds(page)
  return bounds && page.slice(bounds.start, bounds.end)
}

const main = () => {
  const page = fs.readFileSync(tablePath, "utf8")
  const bounds = tableBounds(page)
  if (bounds === undefined) {
    console.error(`docs/api.md has no "${startMarker}" line followed by an "${endMarker}" line to put the table between`)
    process.exit(1)
  }
  const table = errorTable()
  if (page.slice(bounds.start, bounds.end) === table) {
    console.log(`docs/api.md: the table of error codes is up to date (${apiErrors.length} codes)`)
    return
  }
  if (process.argv.includes("--check")) {
    console.error("docs/api.md: the table of error codes differs from src/Domain/ApiErrors.ts: run `npm run errors:table`")
    process.exit(1)
  }
  fs.writeFileSync(tablePath, page.slice(0, bounds.start) + table + page.slice(bounds.end))
  console.log(`docs/api.md: rewrote the table of error codes (${apiErrors.length} codes)`)
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main()
}
