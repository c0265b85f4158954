/**
 * Who may do what (CONTRACT.md, "Identity and roles"): owners and admins of a publisher manage
 * it, its tokens and its nodes; members read; site admins moderate everything.
 */
import { Effect, Option } from "effect"
import type { PublisherRole } from "../Domain/Publisher.ts"
import { Forbidden, NotFound } from "../Errors.ts"
import { PublisherRepo } from "../Publishers/Repo.ts"
import { CurrentUser } from "./CurrentUser.ts"

export const managerRoles: ReadonlyArray<PublisherRole> = ["owner", "admin"]

/** The caller's role in an existing publisher (none for strangers); 404 for an unknown publisher. */
export const roleIn = (publisherId: string) =>
  Effect.gen(function*() {
    const publishers = yield* PublisherRepo
    const user = yield* CurrentUser
    if (!(yield* publishers.exists(publisherId))) {
      return yield* new NotFound({ message: `No publisher '${publisherId}'` })
    }
    return { user, role: yield* publishers.roleOf(publisherId, user.id) }
  })

/**
 * The caller holds one of `roles` in the publisher, or is a site admin when `siteAdmin` allows
 * it; otherwise 403 saying what is needed.
 */
export const requireRole = (
  publisherId: string,
  roles: ReadonlyArray<PublisherRole>,
  options: { readonly siteAdmin: boolean }
) =>
  Effect.gen(function*() {
    const access = yield* roleIn(publisherId)
    if (Option.isSome(access.role) && roles.includes(access.role.value)) return access
    if (options.siteAdmin && access.user.isSiteAdmin) return access
    return yield* new Forbidden({
      message: `This needs the ${roles.join(" or ")} role in publisher '${publisherId}'${options.siteAdmin ? " or a site admin" : ""}`
    })
  })

export const requireSiteAdmin = Effect.gen(function*() {
  const user = yield* CurrentUser
  if (!user.isSiteAdmin) return yield* new Forbidden({ message: "This is for site admins" })
  return user
})
