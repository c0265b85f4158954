/**
 * Ends the run with the twenty slowest test files (where the suite's time goes, for whoever keeps
 * CI within its budget), then the plain line `N passed, N failed, N skipped`, which CI reads
 * whatever the test runner.
 */
import * as path from "node:path"
import type { Reporter, TestModule } from "vitest/node"

const slowestShown = 20

/** A file's time: importing it and its set-up, then its tests and hooks. */
const secondsOf = (module: TestModule) => {
  const d = module.diagnostic()
  return (d.prepareDuration + d.collectDuration + d.setupDuration + d.duration) / 1000
}

const slowestFiles = (testModules: ReadonlyArray<TestModule>) =>
  [...testModules]
    .map((module) => ({ file: path.relative(process.cwd(), module.moduleId), seconds: secondsOf(module) }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, slowestShown)
    .map(({ file, seconds }) => `${seconds.toFixed(1).padStart(8)} s  ${file}`)

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === "passed") passed++
        else if (state === "failed") failed++
        else skipped++
      }
      if (module.state() === "failed" && module.children.size === 0) failed++
    }
    const slowest = slowestFiles(testModules)
    // printed last, after the default reporter's own summary
    process.once("exit", () => {
      console.log(`\nslowest test files:\n${slowest.join("\n")}`)
      console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`)
    })
  }
}
