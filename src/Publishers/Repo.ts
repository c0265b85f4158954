/**
 * SQL of publishers and their members: records read with the row schemas of Catalog/Records.ts,
 * and every change to a publisher's own record through CatalogChanges (it is part of its nodes'
 * JSON, so cached pages must drop).
 */
import { SqlClient, SqlSchema } from "effect/sql"
import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { CatalogChanges } from "../Catalog/Changes.ts"
import { publisherColumns, PublisherRow } from "../Catalog/Records.ts"
import { PublisherMissing, TransitionRefused } from "../Domain/Errors.ts"
import { Publisher, PublisherMember, PublisherRole, PublisherStatus, PublisherUser } from "../Domain/Publisher.ts"
import { retryConflicts } from "../Db/Conflicts.ts"
import { nullable, orDieOnDatabase, rowsOf } from "../Db/Rows.ts"
import { traced } from "../Tracing.ts"

export class PublisherIdTaken extends Data.TaggedError("PublisherIdTaken")<{ readonly publisherId: string }> {
  override get message() {
    return `The publisher id '${this.publisherId}' is taken`
  }
}

export class UnknownUser extends Data.TaggedError("UnknownUser")<{ readonly userId: string }> {
  override get message() {
    return `No user '${this.userId}': users are recorded when they first call the API`
  }
}

export class NotAMember extends Data.TaggedError("NotAMember")<{ readonly publisherId: string; readonly userId: string }> {
  override get message() {
    return `'${this.userId}' is not a member of '${this.publisherId}'`
  }
}

/** A publisher keeps at least one owner. */
export class LastOwnerStays extends Data.TaggedError("LastOwnerStays")<{}> {
  override get message() {
    return "A publisher keeps at least one owner"
  }
}

/** Deleting a publisher waits until its nodes are deleted: nothing of theirs goes with it. */
export class PublisherNotEmpty extends Data.TaggedError("PublisherNotEmpty")<{ readonly publisherId: string; readonly nodes: number }> {
  override get message() {
    return `Publisher '${this.publisherId}' has ${this.nodes} node${this.nodes === 1 ? "" : "s"} that ${
      this.nodes === 1 ? "is" : "are"
    } not deleted: delete ${this.nodes === 1 ? "it" : "them"} first (a banned node stays until a site admin unbans it)`
  }
}

/** A page of the publisher directory: `offset` rows skipped, at most `limit` served. */
export interface DirectoryPage {
  readonly offset: number
  readonly limit: number
  readonly includeBanned: boolean
}

/** A publisher's fields its managers may change (absent: unchanged). */
export interface PublisherPatch {
  readonly name?: string | undefined
  readonly description?: string | undefined
  readonly logo?: string | undefined
  readonly website?: string | undefined
  readonly support?: string | undefined
  readonly source_code_repo?: string | undefined
}

export interface NewPublisher extends PublisherPatch {
  readonly id: string
}

/** What setting a member's role did. */
export type MemberChange = Data.TaggedEnum<{ Added: {}; Updated: {} }>
export const MemberChange = Data.taggedEnum<MemberChange>()

const MemberRow = rowsOf({
  user_id: Schema.String,
  role: PublisherRole,
  email: nullable(Schema.String),
  name: nullable(Schema.String)
}, PublisherMember, ({ user_id, role, ...user }) =>
  new PublisherMember({ id: user_id, role, user: new PublisherUser({ id: user_id, ...user }, { disableChecks: true }) }, { disableChecks: true }))

const memberColumns = "m.user_id, m.role, u.email, u.name"

export class PublisherRepo extends Context.Service<PublisherRepo>()("PublisherRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { change, changeOne, refreshListed } = yield* CatalogChanges

    const findStatus = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ status: PublisherStatus }),
      execute: (id) => sql`SELECT status FROM publishers WHERE id = ${id} AND deleted_at IS NULL`
    })

    const findRole = SqlSchema.findOneOption({
      Request: Schema.Struct({ publisherId: Schema.String, userId: Schema.String }),
      Result: Schema.Struct({ role: PublisherRole }),
      execute: ({ publisherId, userId }) =>
        sql`SELECT role FROM publisher_members WHERE publisher_id = ${publisherId} AND user_id = ${userId}`
    })

    const findPublisher = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: PublisherRow,
      execute: (id) => sql`SELECT ${sql.literal(publisherColumns("p"))} FROM publishers p WHERE p.id = ${id} AND p.deleted_at IS NULL`
    })

    const findMembers = SqlSchema.findAll({
      Request: Schema.String,
      Result: MemberRow,
      execute: (id) =>
        sql`SELECT ${sql.literal(memberColumns)} FROM publisher_members m JOIN users u ON u.id = m.user_id
            WHERE m.publisher_id = ${id} ORDER BY m.created_at, m.user_id`
    })

    const findMember = SqlSchema.findOneOption({
      Request: Schema.Struct({ publisherId: Schema.String, userId: Schema.String }),
      Result: MemberRow,
      execute: ({ publisherId, userId }) =>
        sql`SELECT ${sql.literal(memberColumns)} FROM publisher_members m JOIN users u ON u.id = m.user_id
            WHERE m.publisher_id = ${publisherId} AND m.user_id = ${userId}`
    })

    const findPage = SqlSchema.findAll({
      Request: Schema.Struct({ offset: Schema.Number, limit: Schema.Number, includeBanned: Schema.Boolean }),
      Result: PublisherRow,
      execute: ({ includeBanned, limit, offset }) =>
        sql`SELECT ${sql.literal(publisherColumns("p"))} FROM publishers p
            WHERE p.deleted_at IS NULL ${includeBanned ? sql`` : sql`AND p.status = 'PublisherStatusActive'`}
            ORDER BY p.id LIMIT ${limit} OFFSET ${offset}`
    })

    const findForUser = SqlSchema.findAll({
      Request: Schema.String,
      Result: PublisherRow,
      execute: (userId) =>
        sql`SELECT ${sql.literal(publisherColumns("p"))} FROM publishers p
            JOIN publisher_members m ON m.publisher_id = p.id WHERE m.user_id = ${userId} AND p.deleted_at IS NULL ORDER BY p.id`
    })

    /** Owners of the publisher other than `userId` (the publisher's row locked by the caller). */
    const otherOwners = (publisherId: string, userId: string) =>
      Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM publisher_members
          WHERE publisher_id = ${publisherId} AND role = 'owner' AND user_id <> ${userId}`,
        (rows) => rows[0]?.n ?? 0
      )
    const lockPublisher = (publisherId: string) => sql`SELECT 1 FROM publishers WHERE id = ${publisherId} FOR UPDATE`
    const roleOf = (publisherId: string, userId: string) =>
      Effect.map(findRole({ publisherId, userId }), Option.map((r) => r.role))

    return {
      /** The publisher's status; `None` when there is no such publisher. */
      status: traced("PublisherRepo.status")(function*(publisherId: string) {
        return Option.map(yield* Effect.orDie(findStatus(publisherId)), (r) => r.status)
      }),

      /** The user's role in the publisher, if a member. */
      roleOf: traced("PublisherRepo.roleOf")(function*(publisherId: string, userId: string) {
        return yield* Effect.orDie(roleOf(publisherId, userId))
      }),

      /** The publisher, with its members when asked. */
      find: traced("PublisherRepo.find")(function*(publisherId: string, withMembers: boolean) {
        const found = yield* Effect.orDie(findPublisher(publisherId))
        if (Option.isNone(found) || !withMembers) return found
        const members = yield* Effect.orDie(findMembers(publisherId))
        return Option.some(new Publisher({ ...found.value, members }, { disableChecks: true }))
      }),

      /** Whether a publisher, deleted or not, holds the id. */
      isTaken: traced("PublisherRepo.isTaken")(function*(publisherId: string) {
        const rows = yield* sql`SELECT 1 FROM publishers WHERE id = ${publisherId}`.pipe(Effect.orDie)
        return rows.length > 0
      }),

      /** A page of the publishers that are not deleted, by id. */
      list: traced("PublisherRepo.list")(function*(page: DirectoryPage) {
        return yield* Effect.orDie(findPage(page))
      }),

      /** The publishers the user is a member of, by id. */
      listForUser: traced("PublisherRepo.listForUser")(function*(userId: string) {
        return yield* Effect.orDie(findForUser(userId))
      }),

      member: traced("PublisherRepo.member")(function*(publisherId: string, userId: string) {
        return yield* Effect.orDie(findMember({ publisherId, userId }))
      }),

      /** Creates the publisher with its creator as owner. */
      create: traced("PublisherRepo.create")(function*(publisher: NewPublisher, ownerId: string) {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO publishers ${
            sql.insert({
              id: publisher.id,
              name: publisher.name ?? null,
              description: publisher.description ?? null,
              logo: publisher.logo ?? null,
              website: publisher.website ?? null,
              support: publisher.support ?? null,
              source_code_repo: publisher.source_code_repo ?? null
            })
          }`
          yield* sql`INSERT INTO publisher_members (publisher_id, user_id, role) VALUES (${publisher.id}, ${ownerId}, 'owner')`
        })).pipe(
          Effect.catchTag("SqlError", (e) =>
            e.reason._tag === "UniqueViolation" ? Effect.fail(new PublisherIdTaken({ publisherId: publisher.id })) : Effect.die(e))
        )
      }),

      /** Adds a member or changes a member's role; the last owner cannot stop being one. */
      setMember: traced("PublisherRepo.setMember")(function*(publisherId: string, userId: string, role: PublisherRole) {
        return yield* retryConflicts(sql.withTransaction(Effect.gen(function*() {
          const known = yield* sql`SELECT 1 FROM users WHERE id = ${userId}`
          if (known.length === 0) return yield* new UnknownUser({ userId })
          yield* lockPublisher(publisherId)
          const current = yield* roleOf(publisherId, userId)
          if (Option.contains(current, "owner") && role !== "owner" && (yield* otherOwners(publisherId, userId)) === 0) {
            return yield* new LastOwnerStays()
          }
          yield* sql`INSERT INTO publisher_members (publisher_id, user_id, role) VALUES (${publisherId}, ${userId}, ${role})
            ON CONFLICT (publisher_id, user_id) DO UPDATE SET role = excluded.role`
          return Option.isSome(current) ? MemberChange.Updated() : MemberChange.Added()
        }))).pipe(orDieOnDatabase)
      }),

      /** Removes a member; the last owner stays. */
      removeMember: traced("PublisherRepo.removeMember")(function*(publisherId: string, userId: string) {
        yield* retryConflicts(sql.withTransaction(Effect.gen(function*() {
          yield* lockPublisher(publisherId)
          const current = yield* roleOf(publisherId, userId)
          if (Option.isNone(current)) return yield* new NotAMember({ publisherId, userId })
          if (current.value === "owner" && (yield* otherOwners(publisherId, userId)) === 0) return yield* new LastOwnerStays()
          yield* sql`DELETE FROM publisher_members WHERE publisher_id = ${publisherId} AND user_id = ${userId}`
        }))).pipe(orDieOnDatabase)
      }),

      /**
       * Deletes the publisher softly, when none of its nodes is left undeleted, and revokes its
       * tokens. Its row, members, tokens and deleted nodes stay. The row lock, and the lock the
       * nodes' trigger (migration 0009) takes on it, order a concurrent node write before or after
       * the count: no node is left under a deleted publisher.
       */
      softDelete: traced("PublisherRepo.softDelete")(function*(publisherId: string) {
        yield* change(Effect.gen(function*() {
          const found = yield* sql`SELECT 1 FROM publishers WHERE id = ${publisherId} AND deleted_at IS NULL FOR UPDATE`
          if (found.length === 0) return yield* new PublisherMissing({ publisherId })
          const [left] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM nodes
            WHERE publisher_id = ${publisherId} AND status <> 'NodeStatusDeleted'`
          if ((left?.n ?? 0) > 0) return yield* new PublisherNotEmpty({ publisherId, nodes: left!.n })
          yield* sql`UPDATE publishers SET deleted_at = now() WHERE id = ${publisherId}`
          yield* sql`UPDATE personal_access_tokens SET revoked_at = now() WHERE publisher_id = ${publisherId} AND revoked_at IS NULL`
        }))
      }),

      /**
       * Changes the publisher's own fields: one row. Its nodes' JSON shows them, yet they are not
       * rewritten: the change's notification drops every instance's cached pages, and the
       * publisher's `updated_at` makes its nodes count as updated for `GET /nodes?timestamp=`.
       */
      update: traced("PublisherRepo.update")(function*(publisherId: string, patch: PublisherPatch) {
        const columns = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))
        if (Object.keys(columns).length === 0) return
        yield* changeOne(sql`UPDATE publishers SET ${sql.update(columns)}, updated_at = now() WHERE id = ${publisherId}`)
      }),

      /**
       * Moves the publisher to `to` when its status is one of `from` (`to` itself: nothing to do),
       * checked and written in one statement.
       */
      moveStatus: traced("PublisherRepo.moveStatus")(
        function*(publisherId: string, from: ReadonlyArray<PublisherStatus>, to: PublisherStatus) {
          return yield* change(Effect.gen(function*() {
            const [row] = yield* sql<{ status: PublisherStatus; moved: boolean }>`
              WITH current AS (SELECT status FROM publishers WHERE id = ${publisherId} AND deleted_at IS NULL FOR UPDATE),
              moved AS (UPDATE publishers p SET status = ${to}, updated_at = now() FROM current
                        WHERE p.id = ${publisherId} AND current.status <> ${to}
                          AND current.status = ANY(${from as Array<string>}) RETURNING p.id)
              SELECT current.status, EXISTS (SELECT 1 FROM moved) AS moved FROM current`
            if (row === undefined) return yield* new PublisherMissing({ publisherId })
            // its own updated_at moved with it (CatalogChanges.touchPublishers): now its nodes' listing
            if (row.moved) yield* refreshListed(sql`n.publisher_id = ${publisherId}`)
            else if (row.status !== to) return yield* new TransitionRefused({ record: "A publisher", from: row.status, to })
          }))
        }
      )
    }
  })
}) {
  static readonly layerWithoutDependencies = Layer.effect(PublisherRepo, PublisherRepo.make)
  static readonly layer = PublisherRepo.layerWithoutDependencies.pipe(Layer.provide(CatalogChanges.layer))
}
