/**
 * `install <node>[@version]`: the install call names the version and its download URL; the
 * archive is downloaded to a temporary file, its length checked against the Content-Length the
 * service declared, and unpacked safely (Unzip.ts) into `<dir>/<node>`.
 */
import { Args, Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Effect, Either, Stream } from "effect"
import * as path from "node:path"
import { scratchArchive } from "./Archive.ts"
import { serverFault, usage } from "./Failure.ts"
import { bytes as formatBytes, note, print } from "./Output.ts"
import { call, client } from "./Session.ts"
import { defaultLimits, extractZip } from "./Unzip.ts"

/** `node` or `node@1.2.0`. */
const parseNodeSpec = (spec: string): Either.Either<{ readonly nodeId: string; readonly version: string | undefined }, string> => {
  const at = spec.indexOf("@")
  if (at === -1) return spec === "" ? Either.left("no node named") : Either.right({ nodeId: spec, version: undefined })
  const nodeId = spec.slice(0, at)
  const version = spec.slice(at + 1)
  if (nodeId === "" || version === "") return Either.left(`${spec} is not <node> or <node>@<version>`)
  return Either.right({ nodeId, version })
}

export const install = Command.make(
  "install",
  {
    spec: Args.text({ name: "node[@version]" }),
    dir: Options.directory("dir").pipe(
      Options.withDescription("Where to install: the node goes into <dir>/<node> (default: the current directory)"),
      Options.withDefault(".")
    ),
    force: Options.boolean("force").pipe(Options.withDescription("Replace an existing <dir>/<node>")),
    maxBytes: Options.integer("max-bytes").pipe(
      Options.withDescription("Refuse archives that unpack to more bytes than this"),
      Options.withDefault(defaultLimits.maxBytes)
    ),
    maxEntries: Options.integer("max-entries").pipe(
      Options.withDescription("Refuse archives with more entries than this"),
      Options.withDefault(defaultLimits.maxEntries)
    )
  },
  ({ spec, dir, force, maxBytes, maxEntries }) =>
    Effect.scoped(Effect.gen(function*() {
      const parsed = parseNodeSpec(spec)
      if (Either.isLeft(parsed)) return yield* usage("usage", parsed.left)
      const { nodeId, version } = parsed.right
      const registry = yield* client
      const chosen = yield* call(
        "install",
        registry.api.catalog.installNode({ path: { nodeId }, urlParams: version === undefined ? {} : { version } })
      )
      if (chosen.downloadUrl === undefined) {
        return yield* serverFault("no_download_url", `the registry named ${nodeId}@${chosen.version} without a download URL`)
      }
      const fs = yield* FileSystem.FileSystem
      const archive = yield* scratchArchive("registry-install-", "archive.zip")
      const download = yield* call("download", registry.download(chosen.downloadUrl))
      let received = 0
      yield* download.bytes.pipe(
        Stream.tap((chunk) => Effect.sync(() => void (received += chunk.length))),
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
      const target = path.join(path.resolve(dir), nodeId)
      const unpacked = yield* extractZip(archive, target, { replace: force, limits: { maxBytes, maxEntries } })
      yield* print(`Installed ${nodeId}@${chosen.version} into ${unpacked.target} (${unpacked.files} files, ${formatBytes(unpacked.bytes)})`)
    }))
).pipe(Command.withDescription("Download a node's version (default: the newest installable) and unpack it safely into <dir>/<node>"))
