/**
 * `install <node>[@version]`: the install call names the version, its download URL and its
 * archive's SHA-256; the archive is downloaded to a temporary file, hashed as it is written, its
 * length checked against the Content-Length the service declared and its digest against the one
 * the registry published (a mismatch is refused: nothing is unpacked), then unpacked safely
 * (Unzip.ts) into `<dir>/<node>`.
 */
import { Effect, FileSystem, Result, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { createHash } from "node:crypto"
import * as path from "node:path"
import { scratchArchive } from "./Archive.ts"
import { serverFault, usage } from "./Failure.ts"
import { bytes as formatBytes, note, print } from "./Output.ts"
import { call, client } from "./Session.ts"
import { defaultLimits, extractZip } from "./Unzip.ts"

/** `node` or `node@1.2.0`. */
const parseNodeSpec = (spec: string): Result.Result<{ readonly nodeId: string; readonly version: string | undefined }, string> => {
  const at = spec.indexOf("@")
  if (at === -1) return spec === "" ? Result.fail("no node named") : Result.succeed({ nodeId: spec, version: undefined })
  const nodeId = spec.slice(0, at)
  const version = spec.slice(at + 1)
  if (nodeId === "" || version === "") return Result.fail(`${spec} is not <node> or <node>@<version>`)
  return Result.succeed({ nodeId, version })
}

export const install = Command.make(
  "install",
  {
    spec: Argument.String("node[@version]"),
    dir: Flag.Directory("dir").pipe(
      Flag.withDescription("Where to install: the node goes into <dir>/<node> (default: the current directory)"),
      Flag.withDefault(".")
    ),
    force: Flag.Boolean("force").pipe(
      Flag.withoutNegation,
      Flag.withDescription("Replace an existing <dir>/<node>"),
      Flag.withDefault(false)
    ),
    maxBytes: Flag.Int("max-bytes").pipe(
      Flag.withDescription("Refuse archives that unpack to more bytes than this"),
      Flag.withDefault(defaultLimits.maxBytes)
    ),
    maxEntries: Flag.Int("max-entries").pipe(
      Flag.withDescription("Refuse archives with more entries than this"),
      Flag.withDefault(defaultLimits.maxEntries)
    )
  },
  ({ spec, dir, force, maxBytes, maxEntries }) =>
    Effect.scoped(Effect.gen(function*() {
      const parsed = parseNodeSpec(spec)
      if (Result.isFailure(parsed)) return yield* usage("usage", parsed.failure)
      const { nodeId, version } = parsed.success
      const registry = yield* client
      const chosen = yield* call(
        "install",
        registry.api.catalog.installNode({ params: { nodeId }, query: version === undefined ? {} : { version } })
      )
      if (chosen.downloadUrl === undefined) {
        return yield* serverFault("no_download_url", `the registry named ${nodeId}@${chosen.version} without a download URL`)
      }
      const fs = yield* FileSystem.FileSystem
      const archive = yield* scratchArchive("registry-install-", "archive.zip")
      const download = yield* call("download", registry.download(chosen.downloadUrl))
      let received = 0
      const hash = createHash("sha256")
      yield* download.bytes.pipe(
        Stream.tap((chunk) =>
          Effect.sync(() => {
            received += chunk.length
            hash.update(chunk)
          })
        ),
        Stream.run(fs.sink(archive))
      )
      if (download.size === undefined) {
        yield* note(`note: the download declared no length; ${formatBytes(received)} received`)
      } else if (received !== download.size) {
        return yield* serverFault(
          "size_mismatch",
          `the download of ${nodeId}@${chosen.version} is ${received} bytes, but the service declared ${download.size}`
        )
      }
      const digest = hash.digest("hex")
      if (chosen.sha256 === undefined) {
        yield* note(`note: the registry published no digest of ${nodeId}@${chosen.version}; its archive is not verified`)
      } else if (digest !== chosen.sha256) {
        return yield* serverFault(
          "digest_mismatch",
          `the archive downloaded for ${nodeId}@${chosen.version} has SHA-256 ${digest}, but the registry published ${chosen.sha256}; nothing was installed`
        )
      }
      const target = path.join(path.resolve(dir), nodeId)
      const unpacked = yield* extractZip(archive, target, { replace: force, limits: { maxBytes, maxEntries } })
      yield* print(`Installed ${nodeId}@${chosen.version} into ${unpacked.target} (${unpacked.files} files, ${formatBytes(unpacked.bytes)})`)
    }))
).pipe(Command.withDescription("Download a node's version (default: the newest installable) and unpack it safely into <dir>/<node>"))
