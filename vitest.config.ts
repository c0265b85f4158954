import { readFileSync } from "node:fs"
import { defineConfig } from "vitest/config"

/**
 * The run's scratch files in memory where the machine has a tmpfs at /dev/shm: the run's
 * PostgreSQL, every test's temporary folder, the clusters and data of the services it spawns
 * (os.tmpdir() reads TMPDIR, which the workers and their children inherit). On this project's
 * machines a database copied from the template took 400-760 ms on the disk and 26 ms there. A
 * TMPDIR the caller set is kept.
 */
const memoryTmp = "/dev/shm"
const isTmpfs = (dir: string) => {
  try {
    return readFileSync("/proc/mounts", "utf8").split("\n").some((line) => line.split(" ")[1] === dir && line.split(" ")[2] === "tmpfs")
  } catch {
    return false
  }
}
if (process.env.TMPDIR === undefined && isTmpfs(memoryTmp)) process.env.TMPDIR = memoryTmp

export default defineConfig({
  test: {
    reporters: ["default", "./test/support/SummaryReporter.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // three files at a time on two cores: a file with its service in the worker waits on PostgreSQL
    // and on its clients' sockets for much of its time. Measured on the fast and service tiers:
    // 170 s with three, 185 s with two on an idle machine; 217 s against 272 s on a loaded one.
    maxWorkers: 3,
    projects: [
      {
        // services over stub layers and TestClock: no database, no network, no sleeps (npm run test:fast).
        // Not isolated: a worker imports effect and src/ once for all its files rather than once per
        // file, which was two thirds of this project's time; these files share no state but layers.
        extends: true,
        test: { name: "fast", include: ["test/**/*.fast.test.ts"], isolate: false }
      },
      {
        // the service over real HTTP on real PostgreSQL, in the test's own process: one server for
        // the run, a database per file. Not isolated either: each file starts its own services on
        // its own database, and a worker that keeps its imports spends half the CPU (27 files:
        // 161 s isolated, 79 s not).
        extends: true,
        test: {
          name: "service",
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.fast.test.ts", "test/**/*.process.test.ts", "test/**/*.heavy.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          isolate: false
        }
      },
      {
        // what only a process shows, run apart (npm run test:process; CI runs every project): the
        // bundled service, CLI and demo started as processes (start-up, signals, crashes,
        // outages), the README's and docs' commands replayed in a shell, the client package
        // packed and installed, pages in headless Chromium. The same server as `service` when both run.
        extends: true,
        test: {
          name: "process",
          include: ["test/**/*.process.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          isolate: false
        }
      },
      {
        // the service as in \`service\`, under volume by design (npm run test:heavy; CI runs every
        // project): the schema-driven fuzzers' hundred requests per operation, bodies at each
        // route's limit. They find what a new route or schema breaks, not what an edit to a
        // handler does, and were a third of \`npm test\`'s time (53 s and 38 s of 175 s).
        extends: true,
        test: {
          name: "heavy",
          include: ["test/**/*.heavy.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          isolate: false
        }
      }
    ]
  }
})
