import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Api } from "../Api.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { requireSiteAdmin } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { CatalogWrites } from "../Catalog/Writes.ts"
import { NodeStatus } from "../Domain/Node.ts"
import type { PublisherStatus } from "../Domain/Publisher.ts"
import { move, nodeStatusMoves, nodeVersionStatusMoves, publisherStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { Conflict, NotFound } from "../Errors.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"

/** The reserved publisher that holds nodes until their authors claim them. */
const unclaimed = "unclaimed"

export const AdminLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const writes = yield* CatalogWrites
    const publishers = yield* PublisherRepo

    const nodeJson = (nodeId: string) =>
      Effect.flatMap(nodes.findNode(nodeId), Option.match({
        onNone: () => new NotFound({ message: `No node '${nodeId}'` }),
        onSome: (node) => Effect.succeed(node.json)
      }))

    return handlers
      .handle("createUnclaimedNode", ({ payload }) =>
        Effect.gen(function*() {
          yield* requireSiteAdmin
          const created = yield* writes.createNode({ ...payload, publisher_id: unclaimed })
          if (!created) return yield* new Conflict({ message: `A node '${payload.id}' exists already` })
          // just created: its absence would be a defect, not an answer
          return jsonText(yield* Effect.orDie(nodeJson(payload.id)), 201)
        }))
      .handle("moderateNode", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* requireSiteAdmin
          const target = payload.status
          // the statuses the requested one may be reached from (itself included: no move)
          const from = target === undefined
            ? NodeStatus.literals
            : NodeStatus.literals.filter((s) => move(nodeStatusMoves, s, target) !== "refused")
          // a refused status refuses the whole request: the other fields are written with it or not at all
          if (!(yield* writes.updateNodeWhereStatus(path.nodeId, from, payload))) {
            const current = yield* nodes.findNode(path.nodeId)
            if (Option.isNone(current)) return yield* new NotFound({ message: `No node '${path.nodeId}'` })
            return yield* new Conflict({ message: `A node cannot move from ${current.value.status} to ${target}` })
          }
          return jsonText(yield* nodeJson(path.nodeId))
        }))
      .handle("moderateVersion", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* requireSiteAdmin
          const found = yield* nodes.versionState(path.nodeId, path.version)
          if (Option.isNone(found)) return yield* new NotFound({ message: `Node '${path.nodeId}' has no version '${path.version}'` })
          const version = found.value
          const target = payload.status
          if (move(nodeVersionStatusMoves, version.status, target) === "refused") {
            return yield* new Conflict({ message: `A version cannot move from ${version.status} to ${target}` })
          }
          // an active version is installable: it must have an archive to serve
          if (target === "NodeVersionStatusActive" && !version.hasArchive) {
            return yield* new Conflict({ code: "archive_missing", message: "The version has no uploaded archive to make installable" })
          }
          // the status is checked again in the statement: a concurrent move wins or loses whole
          const from = statesReaching(nodeVersionStatusMoves, target)
          if (!(yield* writes.moveVersionStatus(path.nodeId, version.version, from, target, payload.status_reason))) {
            return yield* new Conflict({ message: `The version's status changed meanwhile; it cannot move to ${target}` })
          }
          return jsonText(Option.getOrThrow(yield* nodes.versionJson(version.id)))
        }))
      .handle("moderatePublisher", ({ path, payload }) =>
        Effect.gen(function*() {
          yield* requireSiteAdmin
          const current = yield* publishers.status(path.publisherId)
          if (Option.isNone(current)) return yield* new NotFound({ message: `No publisher '${path.publisherId}'` })
          // banning it would hide every unclaimed node, and leave nothing for authors to claim
          if (path.publisherId === unclaimed && payload.status !== "PublisherStatusActive") {
            return yield* new Conflict({ message: `The reserved publisher '${unclaimed}' cannot be banned` })
          }
          const verdict = move(publisherStatusMoves, current.value as PublisherStatus, payload.status)
          if (verdict === "refused") {
            return yield* new Conflict({ message: `A publisher cannot move from ${current.value} to ${payload.status}` })
          }
          if (verdict === "allowed") yield* writes.setPublisherStatus(path.publisherId, payload.status)
          const found = yield* publishers.findJson(path.publisherId, false)
          if (Option.isNone(found)) return yield* new NotFound({ message: `No publisher '${path.publisherId}'` })
          return jsonText(found.value)
        }))
  }))
