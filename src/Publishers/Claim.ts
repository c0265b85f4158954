/**
 * Claiming an unclaimed node (CONTRACT.md, "Operation rules"): a manager of the publisher proves,
 * with a token of the repository host, that they administer the node's repository; the node then
 * moves from the reserved publisher `unclaimed` to theirs, once.
 *
 * Checks run cheapest first: the caller's role, the node (exists, unclaimed, a repository we can
 * name), then the host. The host is asked before the move and the move is conditional, so a claim
 * that lost a race after asking still ends in 409.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { Api } from "../Api.ts"
import { jsonText } from "../Domain/JsonText.ts"
import { managerRoles, requireRole } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { CatalogWrites } from "../Catalog/Writes.ts"
import { Conflict, Forbidden, NotFound, RateLimited, ServiceUnavailable } from "../Errors.ts"
import { AppConfig } from "../Config.ts"
import { parseRepositoryUrl, Repohost, type RepohostError } from "../Repohost/Client.ts"

export const unclaimedPublisher = "unclaimed"

/** When the host rate-limits without saying for how long. */
const defaultRetryAfterSeconds = 60

const alreadyClaimed = (nodeId: string) =>
  new Conflict({ code: "node_already_claimed", message: `Node '${nodeId}' has already been claimed` })

export const ClaimsLive = HttpApiBuilder.group(Api, "claims", (handlers) =>
  Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const writes = yield* CatalogWrites
    const repohost = yield* Repohost
    const { webHost } = (yield* AppConfig).repohost

    /** The host's failures as the interface's answers. */
    const askHost = <A>(effect: Effect.Effect<A, RepohostError>) =>
      effect.pipe(Effect.catchTags({
        RepohostInvalidToken: () =>
          new Forbidden({ code: "invalid_vcs_token", message: "The repository host refused VCS_TOKEN" }),
        RepohostRateLimited: (e) =>
          new RateLimited({
            code: "rate_limited",
            message: "The repository host is rate-limiting requests; try again later",
            retryAfter: e.retryAfterSeconds ?? defaultRetryAfterSeconds
          }),
        RepohostUnavailable: () =>
          new ServiceUnavailable({ message: "The repository host is unavailable; try again later" })
      }))

    return handlers.handle("claimMyNode", ({ path: { nodeId, publisherId }, payload }) =>
      Effect.gen(function*() {
        yield* requireRole(publisherId, managerRoles, { siteAdmin: false })
        const node = yield* nodes.findNode(nodeId)
        if (Option.isNone(node) || node.value.status === "NodeStatusDeleted") {
          return yield* new NotFound({ message: `No node '${nodeId}'` })
        }
        if (node.value.publisherId !== unclaimedPublisher) return yield* alreadyClaimed(nodeId)
        const repository = Option.flatMap(Option.fromNullable(node.value.repository), parseRepositoryUrl)
        if (Option.isNone(repository)) {
          // the node's record, not the request, is at fault: a state that cannot be claimed
          return yield* new Conflict({
            code: "repository_not_recognised",
            message: `Node '${nodeId}' has no repository URL of the form https://<host>/<owner>/<repo>, so its ownership cannot be checked`
          })
        }
        if (repository.value.host !== webHost) {
          return yield* new Conflict({
            code: "repository_not_recognised",
            message: `Node '${nodeId}' lives on ${repository.value.host}, not on ${webHost}, the repository host this registry asks`
          })
        }
        const token = Redacted.make(payload.VCS_TOKEN)
        const { owner, repo } = repository.value
        const login = yield* askHost(repohost.login(token))
        if (!(yield* askHost(repohost.administers(token, repository.value)))) {
          return yield* new Forbidden({
            code: "repository_not_owned",
            message: `The repository host user '${login}' does not administer ${owner}/${repo}`
          })
        }
        if (!(yield* writes.claimNode(nodeId, publisherId))) return yield* alreadyClaimed(nodeId)
        yield* Effect.logInfo(`node ${nodeId} claimed by publisher ${publisherId} (repository host user ${login})`)
        const claimed = yield* nodes.findNode(nodeId)
        if (Option.isNone(claimed)) return yield* new NotFound({ message: `No node '${nodeId}'` })
        return jsonText(`{"message":${JSON.stringify(`Node ${nodeId} claimed by ${publisherId}`)},"node":${claimed.value.json}}`)
      }))
  }))
