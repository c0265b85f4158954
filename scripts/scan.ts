/**
 * Scans node pack archives with the registry's rule set, offline, as an upload is scanned: for
 * trying a rule change on real packs before it ships, and for measuring false positives.
 *
 *   npm run scan -- pack.zip [more.zip ...]           every finding, then a count per rule
 *   npm run scan -- --summary packs/*.zip             one line per archive and the counts only
 */
import { Effect } from "effect"
import * as path from "node:path"
import type { Finding } from "../src/Moderation/Rules.ts"
import { ruleSetVersion } from "../src/Moderation/Rules.ts"
import { FileScanner } from "../src/Moderation/FileScanner.ts"
import { scanArchive } from "../src/Moderation/Scanner.ts"

const args = process.argv.slice(2)
const summary = args.includes("--summary")
const files = args.filter((a) => a !== "--summary")
if (files.length === 0) {
  console.error("usage: npm run scan -- [--summary] <archive.zip>...")
  process.exit(2)
}

const counts = new Map<string, number>()
const severities = { high: 0, medium: 0, low: 0 }
console.log(`rule set ${ruleSetVersion}`)
for (const file of files) {
  const started = performance.now()
  const result = await Effect.runPromise(Effect.provide(scanArchive(path.resolve(file)), FileScanner.inline))
  const took = Math.round(performance.now() - started)
  const bySeverity = (s: Finding["severity"]) => result.findings.filter((f) => f.severity === s).length
  console.log(
    `${path.basename(file)}: ${result.filesScanned} files read in ${took} ms; ` +
      `${bySeverity("high")} high, ${bySeverity("medium")} medium, ${bySeverity("low")} low${result.dropped > 0 ? ` (+${result.dropped} not kept)` : ""}`
  )
  for (const f of result.findings) {
    counts.set(`${f.severity} ${f.rule}`, (counts.get(`${f.severity} ${f.rule}`) ?? 0) + 1)
    severities[f.severity] += 1
    if (!summary) console.log(`  ${f.severity} ${f.rule} ${f.file}${f.line === undefined ? "" : `:${f.line}`}  ${f.excerpt}`)
  }
}
console.log(`\n${files.length} archives: ${severities.high} high, ${severities.medium} medium, ${severities.low} low`)
for (const [key, n] of [...counts].sort()) console.log(`  ${n}\t${key}`)
