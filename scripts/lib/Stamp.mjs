/**
 * The stamps of builds (scripts/build.mjs, packages/client/build.mjs): a build writes its stamp
 * when it succeeds, dated when it began, so that a source saved during a build still counts as
 * newer. Plain JavaScript: it runs before anything is compiled, on every start.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** The latest modification time of `file`, or of anything under it when it is a folder. */
const newestMillis = (file) => {
  const stat = fs.statSync(file)
  if (!stat.isDirectory()) return stat.mtimeMs
  return fs.readdirSync(file, { recursive: true })
    .reduce((newest, entry) => Math.max(newest, fs.statSync(path.join(file, entry)).mtimeMs), stat.mtimeMs)
}

/** Whether `stamp` is missing or older than one of `inputs` (absolute paths). */
export const isStale = (stamp, inputs) => {
  const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : -1
  return built < 0 || inputs.some((input) => newestMillis(input) > built)
}

/** Writes `stamp`, dated `began`. */
export const writeStamp = (stamp, began) => {
  fs.writeFileSync(stamp, "")
  fs.utimesSync(stamp, began, began)
}
