import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { managerRoles, requireRole, requireSiteAdmin } from "../Auth/Policy.ts"
import { Conflict, Forbidden, nodeBanned, NotFound } from "../Errors.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"
import { HostNodeRepo, quoteSome, type VersionLocation } from "./Repo.ts"

const noSuchVersion = (nodeId: string, version: string) =>
  new NotFound({ message: `Node '${nodeId}' has no version '${version}'` })

/** The version's id, or 404 for an unknown or deleted node or version. */
const versionOf = (nodeId: string, version: string, at: Option.Option<VersionLocation>) =>
  Option.match(Option.flatMap(at, (l) => l.versionId), {
    onNone: () => Effect.fail(noSuchVersion(nodeId, version)),
    onSome: Effect.succeed
  })

/** Names that occur more than once, each once. */
const repeatedNames = (names: ReadonlyArray<string>): Array<string> => {
  const seen = new Set<string>()
  const repeated = new Set<string>()
  for (const name of names) (seen.has(name) ? repeated : seen).add(name)
  return [...repeated]
}

export const PublicHostNodesLive = HttpApiBuilder.group(Api, "publicHostNodes", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* HostNodeRepo
    return handlers.handle("listHostNodes", ({ path }) =>
      Effect.gen(function*() {
        const at = yield* repo.locate(path.nodeId, path.version)
        // as for the version itself: a banned node (or publisher) is 403, whatever the version
        if (Option.isSome(at) && at.value.banned) {
          return yield* nodeBanned(path.nodeId)
        }
        return jsonText(yield* repo.list(yield* versionOf(path.nodeId, path.version, at)))
      }))
  }))

export const HostNodesLive = HttpApiBuilder.group(Api, "hostNodes", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* HostNodeRepo
    const publishers = yield* PublisherRepo
    return handlers
      .handle("createHostNodes", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* requireSiteAdmin
          const versionId = yield* versionOf(path.nodeId, path.version, yield* repo.locate(path.nodeId, path.version))
          const repeated = repeatedNames(payload.map((r) => r.host_node_name))
          if (repeated.length > 0) {
            return yield* new Conflict({
              message: `The body names ${quoteSome(repeated)} more than once`
            })
          }
          return jsonText(yield* repo.create(versionId, payload), 201)
        }))
      .handle("updateHostNode", ({ path, payload }) =>
        Effect.gen(function*() {
          const at = yield* repo.locate(path.nodeId, path.version)
          if (Option.isNone(at)) return yield* noSuchVersion(path.nodeId, path.version)
          const { user } = yield* requireRole(at.value.publisherId, managerRoles, { siteAdmin: true }).pipe(
            Effect.provideService(PublisherRepo, publishers)
          )
          if (payload.policy !== undefined && !user.isSiteAdmin) {
            return yield* new Forbidden({ message: "Only site admins may change a host-node's policy" })
          }
          const versionId = yield* versionOf(path.nodeId, path.version, at)
          return jsonText(yield* repo.update(versionId, path.hostNodeName, payload))
        }))
  }))
