/** Scratch folders for tests. */
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"

/** A new folder under the system's temporary one, named from `prefix`; removed when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )
