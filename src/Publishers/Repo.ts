/**
 * SQL of publishers and their members. Like the catalogue, records leave PostgreSQL as the
 * interface's JSON (absent fields omitted).
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { PublisherPatch } from "../Catalog/Writes.ts"
import type { PublisherRole } from "../Domain/Publisher.ts"

export interface NewPublisher extends PublisherPatch {
  readonly id: string
}

export type MemberChange = "added" | "updated" | "unknown_user" | "last_owner"

export class PublisherRepo extends Context.Tag("PublisherRepo")<PublisherRepo, {
  readonly exists: (publisherId: string) => Effect.Effect<boolean>
  /** The user's role in the publisher, if a member. */
  readonly roleOf: (publisherId: string, userId: string) => Effect.Effect<Option.Option<PublisherRole>>
  readonly status: (publisherId: string) => Effect.Effect<Option.Option<string>>
  /** Creates the publisher with its creator as owner; false when the id is taken. */
  readonly create: (publisher: NewPublisher, ownerId: string) => Effect.Effect<boolean>
  /** The publisher as JSON text, with its members when asked. */
  readonly findJson: (publisherId: string, withMembers: boolean) => Effect.Effect<Option.Option<string>>
  /** The publishers the user is a member of, as a JSON array text. */
  readonly listForUser: (userId: string) => Effect.Effect<string>
  /** Adds a member or changes a member's role; the last owner cannot stop being one. */
  readonly setMember: (publisherId: string, userId: string, role: PublisherRole) => Effect.Effect<MemberChange>
  readonly memberJson: (publisherId: string, userId: string) => Effect.Effect<Option.Option<string>>
  /** Removes a member; the last owner stays. */
  readonly removeMember: (publisherId: string, userId: string) => Effect.Effect<"removed" | "not_member" | "last_owner">
}>() {}

/** A publisher row `p` as wire JSON; `members` is an SQL expression or null. */
export const publisherJson = (p: string, members: string) =>
  `json_strip_nulls(json_build_object(
    'createdAt', iso_time(${p}.created_at), 'description', ${p}.description, 'id', ${p}.id,
    'logo', ${p}.logo, 'members', ${members}, 'name', ${p}.name, 'source_code_repo', ${p}.source_code_repo,
    'status', ${p}.status, 'support', ${p}.support, 'website', ${p}.website))`

const memberJson = (m: string, u: string) =>
  `json_build_object('id', ${m}.user_id, 'role', ${m}.role,
    'user', json_build_object('email', ${u}.email, 'id', ${u}.id, 'name', ${u}.name))`

const membersOf = (p: string) =>
  `(SELECT coalesce(json_agg(${memberJson("m", "u")} ORDER BY m.created_at, m.user_id), '[]')
    FROM publisher_members m JOIN users u ON u.id = m.user_id WHERE m.publisher_id = ${p}.id)`

const isUniqueViolation = (e: SqlError.SqlError) => (e.cause as { code?: string } | undefined)?.code === "23505"

export const PublisherRepoLive = Layer.effect(
  PublisherRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Owners of the publisher other than `userId`, the publisher's row locked meanwhile. */
    const otherOwners = (publisherId: string, userId: string) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM publisher_members
        WHERE publisher_id = ${publisherId} AND role = 'owner' AND user_id <> ${userId}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0)
      )
    const lockPublisher = (publisherId: string) => sql`SELECT 1 FROM publishers WHERE id = ${publisherId} FOR UPDATE`

    const roleOf = (publisherId: string, userId: string) =>
      sql<{ role: PublisherRole }>`SELECT role FROM publisher_members
        WHERE publisher_id = ${publisherId} AND user_id = ${userId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.role))
      )

    return PublisherRepo.of({
      exists: (publisherId) =>
        sql`SELECT 1 FROM publishers WHERE id = ${publisherId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
      roleOf: (publisherId, userId) => Effect.orDie(roleOf(publisherId, userId)),
      status: (publisherId) =>
        sql<{ status: string }>`SELECT status FROM publishers WHERE id = ${publisherId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.status)),
          Effect.orDie
        ),
      create: (p, ownerId) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO publishers ${
            sql.insert({
              id: p.id,
              name: p.name ?? null,
              description: p.description ?? null,
              logo: p.logo ?? null,
              website: p.website ?? null,
              support: p.support ?? null,
              source_code_repo: p.source_code_repo ?? null
            })
          }`
          yield* sql`INSERT INTO publisher_members (publisher_id, user_id, role) VALUES (${p.id}, ${ownerId}, 'owner')`
          return true
        })).pipe(
          Effect.catchIf(isUniqueViolation, () => Effect.succeed(false)),
          Effect.orDie
        ),
      findJson: (publisherId, withMembers) =>
        sql<{ json: string }>`SELECT ${sql.literal(publisherJson("p", withMembers ? membersOf("p") : "null"))}::text AS json
          FROM publishers p WHERE p.id = ${publisherId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.json)),
          Effect.orDie
        ),
      listForUser: (userId) =>
        sql<{ json: string }>`SELECT coalesce(json_agg(${sql.literal(publisherJson("p", "null"))} ORDER BY p.id), '[]')::text AS json
          FROM publishers p JOIN publisher_members m ON m.publisher_id = p.id WHERE m.user_id = ${userId}`.pipe(
          Effect.map((rows) => rows[0]?.json ?? "[]"),
          Effect.orDie
        ),
      setMember: (publisherId, userId, role) =>
        sql.withTransaction(Effect.gen(function*() {
          const known = yield* sql`SELECT 1 FROM users WHERE id = ${userId}`
          if (known.length === 0) return "unknown_user" as const
          yield* lockPublisher(publisherId)
          const current = yield* roleOf(publisherId, userId)
          if (Option.isSome(current) && current.value === "owner" && role !== "owner") {
            if ((yield* otherOwners(publisherId, userId)) === 0) return "last_owner" as const
          }
          yield* sql`INSERT INTO publisher_members (publisher_id, user_id, role) VALUES (${publisherId}, ${userId}, ${role})
            ON CONFLICT (publisher_id, user_id) DO UPDATE SET role = excluded.role`
          return Option.isSome(current) ? "updated" as const : "added" as const
        })).pipe(Effect.orDie),
      memberJson: (publisherId, userId) =>
        sql<{ json: string }>`SELECT json_strip_nulls(${sql.literal(memberJson("m", "u"))})::text AS json
          FROM publisher_members m JOIN users u ON u.id = m.user_id
          WHERE m.publisher_id = ${publisherId} AND m.user_id = ${userId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.json)),
          Effect.orDie
        ),
      removeMember: (publisherId, userId) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* lockPublisher(publisherId)
          const current = yield* roleOf(publisherId, userId)
          if (Option.isNone(current)) return "not_member" as const
          if (current.value === "owner" && (yield* otherOwners(publisherId, userId)) === 0) return "last_owner" as const
          yield* sql`DELETE FROM publisher_members WHERE publisher_id = ${publisherId} AND user_id = ${userId}`
          return "removed" as const
        })).pipe(Effect.orDie)
    })
  })
)
