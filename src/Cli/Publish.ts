/**
 * `publish <dir>`: the manifest of `<dir>/pyproject.toml`, the zip of the files git tracks there
 * (see Files.ts), the publish call with a personal access token (or a publish token of trusted
 * publishing, TrustedPublishing.ts), the upload to the signed URL it
 * answers with, then the version polled until it has left Pending. An archive the checks refuse
 * is answered 422 with each failed check: they are printed, and the version stays Pending (a
 * publish of the same manifest again answers a fresh upload URL).
 */
import { Duration, Effect, Option, Result, Schedule } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as path from "node:path"
import type { RegistryClient } from "../client.ts"
import type { NodeVersion } from "../Domain/Node.ts"
import { scratchArchive, writeZip } from "./Archive.ts"
import { failed, formatReport, reportOf, usage } from "./Failure.ts"
import { archiveFiles } from "./Files.ts"
import { readManifest } from "./Manifest.ts"
import { bytes, note, print, progress, shortStatus } from "./Output.ts"
import { call, clientAt, fromEnv, target } from "./Session.ts"
import { publishTokenFromRunner, runnerRequest } from "./TrustedPublishing.ts"

/** Polls `nodeId@version` until it leaves Pending: quickly at first, then every two seconds. */
const pollSchedule = Schedule.min([Schedule.exponential("200 millis", 1.5), Schedule.spaced("2 seconds")])

const waitForChecks = (registry: RegistryClient, nodeId: string, version: string, timeout: Duration.Duration) =>
  call("get version", registry.api.catalog.getNodeVersion({ params: { nodeId, versionId: version } })).pipe(
    Effect.repeat({ schedule: pollSchedule, while: (v: NodeVersion) => v.status === "NodeVersionStatusPending" }),
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () =>
        Effect.fail(failed(
          "checks_pending",
          `${nodeId}@${version} is still pending after ${Duration.format(timeout)}: see \`registry versions ${nodeId} --status Pending\``
        ))
    })
  )

/**
 * The client of the publish call: with `--token`; else inside a GitHub Actions job that may ask
 * for identity tokens, with a publish token of trusted publishing (falling back to `REGISTRY_PAT`
 * when the exchange fails and one is set); else with `REGISTRY_PAT`; else with the login's bearer
 * token. The target is read once, for the call and for the polls.
 */
const publishClient = (flag: Option.Option<string>) =>
  Effect.gen(function*() {
    const at = yield* target
    if (Option.isSome(flag)) return yield* clientAt(at, flag.value)
    const pat = yield* fromEnv("REGISTRY_PAT")
    const runner = yield* runnerRequest
    if (Option.isSome(runner)) {
      const trusted = yield* Effect.result(publishTokenFromRunner(at, runner.value))
      if (Result.isSuccess(trusted)) {
        yield* note(trusted.success.note)
        return yield* clientAt(at, trusted.success.token)
      }
      if (Option.isNone(pat)) return yield* Effect.fail(trusted.failure)
      yield* note(`trusted publishing did not work (${formatReport(reportOf(trusted.failure))}): publishing with REGISTRY_PAT`)
    }
    if (Option.isNone(pat) && Option.isNone(at.token)) {
      return yield* usage(
        "no_token",
        "no token: pass --token <personal access token>, set REGISTRY_PAT, log in, or publish from a GitHub Actions job with `id-token: write` and a trusted publisher"
      )
    }
    return yield* clientAt(at, Option.getOrUndefined(pat))
  })

export const publish = Command.make(
  "publish",
  {
    dir: Argument.Directory("dir", { mustExist: true }).pipe(Argument.withDefault(".")),
    token: Flag.String("token").pipe(
      Flag.withDescription(
        "The publisher's personal access token (default: trusted publishing inside GitHub Actions, else $REGISTRY_PAT, else the login's token)"
      ),
      Flag.optional
    ),
    publisher: Flag.String("publisher").pipe(
      Flag.withDescription("Publisher id, instead of [tool.registry] publisher_id"),
      Flag.optional
    ),
    changelog: Flag.String("changelog").pipe(Flag.withDescription("What changed in this version"), Flag.optional),
    timeout: Flag.Int("timeout").pipe(
      Flag.withDescription("Seconds to wait for the registry's checks (0: do not wait)"),
      Flag.withDefault(300)
    ),
    dryRun: Flag.Boolean("dry-run").pipe(
      Flag.withoutNegation,
      Flag.withDescription("Print the files and the request; publish nothing"),
      Flag.withDefault(false)
    )
  },
  ({ dir, token, publisher, changelog, timeout, dryRun }) =>
    Effect.scoped(Effect.gen(function*() {
      const root = path.resolve(dir)
      const manifest = yield* readManifest(root, {
        publisherId: Option.getOrUndefined(publisher),
        changelog: Option.getOrUndefined(changelog)
      })
      const { files, skipped } = yield* archiveFiles(root, manifest.includes)
      for (const s of skipped) yield* note(`note: ${s.path} is left out: ${s.reason}`)
      if (files.length === 0) return yield* usage("no_files", `no files to publish in ${root}: are they committed to git?`)
      const label = `${manifest.publisherId}/${manifest.nodeId}@${manifest.version}`
      if (dryRun) {
        yield* print(label)
        yield* print(JSON.stringify(manifest.request, null, 2))
        for (const file of files) yield* print(file)
        return
      }
      const registry = yield* publishClient(token)
      const archive = yield* scratchArchive("registry-publish-", `${manifest.nodeId}-${manifest.version}.zip`)
      const size = yield* writeZip(root, files, archive)
      yield* note(`publishing ${label}: ${files.length} files, ${bytes(size)}`)

      const published = yield* call("publish", registry.publish(manifest.publisherId, manifest.nodeId, manifest.request))
      const bar = yield* progress("uploading")
      yield* registry.uploadArchive(published.signedUrl, archive, { onProgress: bar.onProgress }).pipe(
        Effect.ensuring(bar.done),
        Effect.catchTag("ArchiveRejected", (rejected) =>
          Effect.gen(function*() {
            for (const check of rejected.details ?? []) yield* print(`Failed check ${check.check}: ${check.message}`)
            return yield* failed(
              "archive_rejected",
              `${label} was refused by the registry's checks and is still Pending: fix the archive and publish again`
            )
          }))
      )
      if (timeout <= 0) return yield* print(shortStatus(published.node_version.status))
      const checked = yield* waitForChecks(registry, manifest.nodeId, manifest.version, Duration.seconds(timeout))
      const reason = checked.status_reason ?? "no reason given"
      switch (checked.status) {
        case "NodeVersionStatusActive":
          return yield* print("Active")
        case "NodeVersionStatusFlagged":
          yield* print(`Flagged: ${reason}`)
          return yield* failed("version_flagged", `${label} was flagged by the registry's checks: ${reason}`)
        default:
          yield* print(`${shortStatus(checked.status)}: ${reason}`)
          return yield* failed("version_not_active", `${label} is ${shortStatus(checked.status)}: ${reason}`)
      }
    }))
).pipe(Command.withDescription(
  "Publish the node in <dir> (default .): its pyproject.toml, and a zip of its git-tracked files minus .registryignore"
))
