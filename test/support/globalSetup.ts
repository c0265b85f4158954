/**
 * One PostgreSQL server for the whole run: the one DATABASE_URL names, else an embedded one in a
 * temporary folder. Each test file then creates its own database on it (see Service.ts).
 * The compiled service in dist/, which the tests that spawn processes run, is built first when
 * it is missing or older than src/.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { startEmbedded } from "../../src/Db/Embedded.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** A URL of the server with rights to create databases. */
    adminDatabaseUrl: string
  }
}

const root = path.resolve(import.meta.dirname, "../..")

export default async function setup(project: TestProject) {
  execFileSync(process.execPath, ["scripts/build.mjs", "--if-stale"], { cwd: root, stdio: "inherit" })
  const external = process.env.DATABASE_URL
  if (external) {
    project.provide("adminDatabaseUrl", external)
    return
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-test-"))
  const server = await startEmbedded(dir)
  project.provide("adminDatabaseUrl", server.url)
  return async () => {
    await server.stop()
    await fs.rm(dir, { recursive: true, force: true })
  }
}
