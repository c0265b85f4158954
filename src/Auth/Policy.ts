/**
 * Who may do what (CONTRACT.md, "Identity and roles"): owners and admins of a publisher manage
 * it, its tokens and its nodes; members read; site admins moderate everything. The caller is the
 * request's `CurrentUser`.
 */
import { Context, Effect, Layer, Option } from "effect"
import { CurrentUser } from "../Domain/Auth.ts"
import { NotPermitted, PublisherMissing } from "../Domain/Errors.ts"
import { managerRoles, type PublisherRole } from "../Domain/Publisher.ts"
import { span, traced } from "../Tracing.ts"
import { UserRepo } from "./UserRepo.ts"

export class Policy extends Context.Service<Policy>()("Policy", {
  make: Effect.gen(function*() {
    const users = yield* UserRepo

    /** The caller, the publisher's status and the caller's role in it (none for strangers). */
    const standingIn = traced("Policy.standingIn")(function*(publisherId: string) {
      const user = yield* CurrentUser
      const standing = yield* users.standing(publisherId, user.id)
      if (Option.isNone(standing)) return yield* new PublisherMissing({ publisherId })
      return { user, ...standing.value }
    })

    /**
     * The caller holds one of `roles` in the publisher, or is a site admin when `siteAdmin` allows
     * it; otherwise NotPermitted saying what is needed.
     */
    const requireRole = traced("Policy.requireRole")(
      function*(publisherId: string, roles: ReadonlyArray<PublisherRole>, options: { readonly siteAdmin: boolean }) {
        const standing = yield* standingIn(publisherId)
        if (Option.isSome(standing.role) && roles.includes(standing.role.value)) return standing
        if (options.siteAdmin && standing.user.isSiteAdmin) return standing
        return yield* new NotPermitted({
          reason: `This needs the ${roles.join(" or ")} role in publisher '${publisherId}'${options.siteAdmin ? " or a site admin" : ""}`
        })
      }
    )

    /**
     * Managing a publisher and its nodes (changing the publisher, creating, changing and deleting
     * its nodes and versions): its owners and admins, and site admins.
     */
    const requireManager = (publisherId: string) => requireRole(publisherId, managerRoles, { siteAdmin: true })

    /**
     * Whether `requireManager` lets the caller through: the permission endpoints answer with it, so
     * what they say and what the writes do cannot disagree. An unknown publisher still fails.
     */
    const canManage = (publisherId: string) =>
      requireManager(publisherId).pipe(
        Effect.as(true),
        Effect.catchTag("NotPermitted", () => Effect.succeed(false))
      )

    const requireSiteAdmin = Effect.gen(function*() {
      const user = yield* CurrentUser
      if (!user.isSiteAdmin) return yield* new NotPermitted({ reason: "This is for site admins" })
      return user
    }).pipe(span("Policy.requireSiteAdmin"))

    return { standingIn, requireRole, requireManager, canManage, requireSiteAdmin }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Policy, Policy.make)
  static readonly layer = Policy.layerWithoutDependencies.pipe(Layer.provide(UserRepo.layer))
}
