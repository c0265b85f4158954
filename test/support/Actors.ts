/**
 * The usual cast of the publisher tests: on publisher `acme` ann is the owner, adam an admin and
 * mia a member; oscar owns `other`; stan belongs to no publisher; root is a site admin.
 */
import { Effect } from "effect"
import { addMember } from "./Db.ts"
import type { Running } from "./Service.ts"

/** The user of each role. */
export const cast = {
  owner: "ann",
  admin: "adam",
  member: "mia",
  otherOwner: "oscar",
  stranger: "stan",
  siteAdmin: "root"
} as const

export type Role = keyof typeof cast

/** A token for each role named (in that order), empty until `seedActors` fills it in. */
export const tokensFor = <R extends Role>(...roles: ReadonlyArray<R>): Record<R, string> =>
  Object.fromEntries(roles.map((role) => [role, ""])) as Record<R, string>

/**
 * Gives the cast its memberships (the publishers must exist) and fills `tokens` with a token for
 * each role it has a key for; oscar joins `other` only when `tokens` has an `otherOwner` key.
 */
export const seedActors = (service: Running, tokens: { [R in Role]?: string | undefined }) =>
  Effect.gen(function*() {
    yield* addMember(service, "acme", cast.owner, "owner")
    yield* addMember(service, "acme", cast.admin, "admin")
    yield* addMember(service, "acme", cast.member, "member")
    if ("otherOwner" in tokens) yield* addMember(service, "other", cast.otherOwner, "owner")
    for (const role of Object.keys(cast) as Array<Role>) {
      if (!(role in tokens)) continue
      tokens[role] = yield* Effect.promise(() => service.token({ sub: cast[role], admin: role === "siteAdmin" }))
    }
  })
