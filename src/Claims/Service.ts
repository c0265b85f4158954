/**
 * Claiming an unclaimed node (CONTRACT.md, "Operation rules"): a manager of the publisher proves,
 * with a token of the repository host, that they administer the node's repository; the node then
 * moves from the reserved publisher `unclaimed` to theirs, once.
 *
 * Checks run cheapest first: the caller's role, the node (exists, unclaimed, a repository we can
 * name), then the host. The host is asked before the move and the move is conditional, so a claim
 * that lost a race after asking still ends in AlreadyClaimed.
 */
import { Context, Data, Effect, Layer, Option, type Redacted } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { NodeMissing } from "../Domain/Errors.ts"
import { managerRoles, unclaimedPublisherId } from "../Domain/Publisher.ts"
import { parseRepositoryUrl, Repohost } from "../Repohost/Client.ts"
import { AlreadyClaimed, ClaimRepo } from "./Repo.ts"
import { traced } from "../Tracing.ts"

/** The node's record names no repository on the host this registry asks: a state that cannot be claimed. */
export class RepositoryUnrecognised extends Data.TaggedError("RepositoryUnrecognised")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

export class NotRepositoryAdmin extends Data.TaggedError("NotRepositoryAdmin")<{
  readonly login: string
  readonly owner: string
  readonly repo: string
}> {
  override get message() {
    return `The repository host user '${this.login}' does not administer ${this.owner}/${this.repo}`
  }
}

export class Claims extends Context.Service<Claims>()("Claims", {
  make: Effect.gen(function*() {
    const nodes = yield* NodeRepo
    const claims = yield* ClaimRepo
    const repohost = yield* Repohost
    const policy = yield* Policy

    return {
      claim: traced("Claims.claim")(function*(publisherId: string, nodeId: string, vcsToken: Redacted.Redacted) {
        yield* policy.requireRole(publisherId, managerRoles, { siteAdmin: false })
        const node = yield* nodes.nodeState(nodeId)
        if (Option.isNone(node) || node.value.status === "NodeStatusDeleted") return yield* new NodeMissing({ nodeId })
        if (node.value.publisherId !== unclaimedPublisherId) return yield* new AlreadyClaimed({ nodeId })
        const repository = Option.flatMap(node.value.repository, parseRepositoryUrl)
        if (Option.isNone(repository)) {
          return yield* new RepositoryUnrecognised({
            reason: `Node '${nodeId}' has no repository URL of the form https://<host>/<owner>/<repo>, so its ownership cannot be checked`
          })
        }
        const { host, owner, repo } = repository.value
        if (host !== repohost.webHost) {
          return yield* new RepositoryUnrecognised({
            reason: `Node '${nodeId}' lives on ${host}, not on ${repohost.webHost}, the repository host this registry asks`
          })
        }
        const login = yield* repohost.login(vcsToken)
        if (!(yield* repohost.administers(vcsToken, repository.value))) {
          return yield* new NotRepositoryAdmin({ login, owner, repo })
        }
        yield* claims.claim(nodeId, publisherId)
        yield* Effect.logInfo(`node ${nodeId} claimed by publisher ${publisherId} (repository host user ${login})`)
        const claimed = yield* Effect.orDie(Effect.flatMap(nodes.findNode(nodeId), Effect.fromOption(() => new NodeMissing({ nodeId }))))
        return { message: `Node ${nodeId} claimed by ${publisherId}`, node: claimed }
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Claims, Claims.make)
  static readonly layer = Claims.layerWithoutDependencies.pipe(Layer.provide([NodeRepo.layer, ClaimRepo.layer, Repohost.layer, Policy.layer]))
}
