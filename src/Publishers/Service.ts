/**
 * Publishers and their members: anyone may read a publisher (its members are shown to members and
 * site admins only); its owners and admins change it; its owners manage members; site admins
 * alone change its status.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import { Policy } from "../Auth/Policy.ts"
import { NodeRepo } from "../Catalog/Repo.ts"
import { CurrentUser, type User, Viewer } from "../Domain/Auth.ts"
import { IdMismatch, NotPermitted, NotPublishersNode, PublisherMissing } from "../Domain/Errors.ts"
import {
  EditPermission,
  PublisherAvailability,
  type PublisherRole,
  type PublisherStatus,
  reservedPublisherIds,
  unclaimedPublisherId
} from "../Domain/Publisher.ts"
import { publisherStatusMoves, statesReaching } from "../Domain/Transitions.ts"
import { type DirectoryPage, type NewPublisher, type PublisherPatch, PublisherRepo } from "./Repo.ts"
import { traced } from "../Tracing.ts"

export class PublisherIdIsReserved extends Data.TaggedError("PublisherIdIsReserved")<{ readonly publisherId: string }> {
  override get message() {
    return `The publisher id '${this.publisherId}' is reserved`
  }
}

/** Banning the reserved publisher would hide every unclaimed node, and leave nothing for authors to claim. */
export class UnclaimedStaysActive extends Data.TaggedError("UnclaimedStaysActive")<{}> {
  override get message() {
    return `The reserved publisher '${unclaimedPublisherId}' cannot be banned`
  }
}

/** The reserved publisher holds every unclaimed node: it is the registry's, not anyone's to delete. */
export class UnclaimedStays extends Data.TaggedError("UnclaimedStays")<{}> {
  override get message() {
    return `The reserved publisher '${unclaimedPublisherId}' cannot be deleted`
  }
}

/** A publisher as its managers send it back: read-only fields may come along and are ignored. */
export interface PublisherInput extends PublisherPatch {
  readonly id?: string | undefined
  readonly status?: PublisherStatus | undefined
}

export class Publishers extends Context.Service<Publishers>()("Publishers", {
  make: Effect.gen(function*() {
    const repo = yield* PublisherRepo
    const nodes = yield* NodeRepo
    const policy = yield* Policy
    const ownersOnly = (publisherId: string) => policy.requireRole(publisherId, ["owner"], { siteAdmin: false })

    /** The publisher as stored, with or without its members. */
    const stored = (publisherId: string, withMembers: boolean) =>
      Effect.flatMap(
        repo.find(publisherId, withMembers),
        Option.match({ onNone: () => Effect.fail(new PublisherMissing({ publisherId })), onSome: Effect.succeed })
      )

    /** The publisher, with its members for members and site admins. */
    const publisherFor = (publisherId: string, viewer: Option.Option<User>) =>
      Effect.gen(function*() {
        const showMembers = Option.isSome(viewer) &&
          (viewer.value.isSiteAdmin || Option.isSome(yield* repo.roleOf(publisherId, viewer.value.id)))
        return yield* stored(publisherId, showMembers)
      })

    /** Moves the publisher's status: site admins only, and the reserved publisher stays active. */
    const moveStatus = traced("Publishers.moveStatus")(function*(publisherId: string, status: PublisherStatus) {
      const user = yield* CurrentUser
      if (!user.isSiteAdmin) return yield* new NotPermitted({ reason: "Only site admins may change a publisher's status" })
      if (publisherId === unclaimedPublisherId && status !== "PublisherStatusActive") return yield* new UnclaimedStaysActive()
      yield* repo.moveStatus(publisherId, statesReaching(publisherStatusMoves, status), status)
    })

    return {
      get: traced("Publishers.get")(function*(publisherId: string) {
        return yield* publisherFor(publisherId, yield* Viewer)
      }),

      /** Creates a publisher; the caller becomes its owner. */
      create: traced("Publishers.create")(function*(publisher: NewPublisher) {
        const user = yield* CurrentUser
        if (reservedPublisherIds.has(publisher.id)) return yield* new PublisherIdIsReserved({ publisherId: publisher.id })
        yield* repo.create(publisher, user.id)
        // the caller is its owner now: the members are theirs to see
        return yield* stored(publisher.id, true).pipe(Effect.orDie)
      }),

      update: traced("Publishers.update")(function*(publisherId: string, input: PublisherInput) {
        yield* policy.requireManager(publisherId)
        if (input.id !== undefined && input.id !== publisherId) return yield* new IdMismatch({ field: "id", expected: publisherId })
        if (input.status !== undefined) yield* moveStatus(publisherId, input.status)
        const { name, description, logo, website, support, source_code_repo } = input
        yield* repo.update(publisherId, { name, description, logo, website, support, source_code_repo })
        // an owner, an admin or a site admin: one who sees the members
        return yield* stored(publisherId, true)
      }),

      /** Site moderation: ban or unban. */
      moderate: traced("Publishers.moderate")(function*(publisherId: string, status: PublisherStatus) {
        yield* policy.requireSiteAdmin
        yield* moveStatus(publisherId, status)
        return yield* publisherFor(publisherId, Option.none())
      }),

      /** The caller's publishers. */
      mine: traced("Publishers.mine")(function*() {
        return yield* repo.listForUser((yield* CurrentUser).id)
      }),

      /** Whether a well-formed id may be taken: not reserved, and held by no publisher, deleted ones included. */
      validate: traced("Publishers.validate")(function*(publisherId: string) {
        const isAvailable = !reservedPublisherIds.has(publisherId) && !(yield* repo.isTaken(publisherId))
        return new PublisherAvailability({ isAvailable })
      }),

      /** A page of the directory; banned publishers are listed to site admins only. */
      list: traced("Publishers.list")(function*(page: Omit<DirectoryPage, "includeBanned">) {
        const viewer = yield* Viewer
        return yield* repo.list({ ...page, includeBanned: Option.exists(viewer, (user) => user.isSiteAdmin) })
      }),

      /** Deletes the publisher softly (owners and site admins), once it has no node left that is not deleted. */
      delete: traced("Publishers.delete")(function*(publisherId: string) {
        yield* policy.requireRole(publisherId, ["owner"], { siteAdmin: true })
        if (publisherId === unclaimedPublisherId) return yield* new UnclaimedStays()
        yield* repo.softDelete(publisherId)
      }),

      /** Whether the caller may change the publisher: the policy of its writes, asked rather than enforced. */
      permission: traced("Publishers.permission")(function*(publisherId: string) {
        return new EditPermission({ canEdit: yield* policy.canManage(publisherId) })
      }),

      /** Whether the caller may change the publisher's node; the node must be the publisher's and not deleted, as for its writes. */
      nodePermission: traced("Publishers.nodePermission")(function*(publisherId: string, nodeId: string) {
        const canEdit = yield* policy.canManage(publisherId)
        const state = yield* nodes.nodeState(nodeId)
        const owned = Option.exists(state, (node) => node.publisherId === publisherId && node.status !== "NodeStatusDeleted")
        if (!owned) return yield* new NotPublishersNode({ publisherId, nodeId })
        return new EditPermission({ canEdit })
      }),

      /** Adds a member (owners only), or changes a member's role; answers the member and whether it is new. */
      setMember: traced("Publishers.setMember")(function*(publisherId: string, userId: string, role: PublisherRole) {
        yield* ownersOnly(publisherId)
        const change = yield* repo.setMember(publisherId, userId, role)
        const member = yield* Effect.orDie(Effect.flatMap(repo.member(publisherId, userId), (found) => Effect.fromOption(found)))
        return { member, change }
      }),

      removeMember: traced("Publishers.removeMember")(function*(publisherId: string, userId: string) {
        yield* ownersOnly(publisherId)
        yield* repo.removeMember(publisherId, userId)
      })
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(Publishers, Publishers.make)
  static readonly layer = Publishers.layerWithoutDependencies.pipe(Layer.provide([PublisherRepo.layer, NodeRepo.layer, Policy.layer]))
}
