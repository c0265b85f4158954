/**
 * The migrator cuts a migration file into statements (`@effect/sql-pg` 4 takes one per query):
 * a `;` inside a string, a quoted name, a comment or a dollar-quoted body does not end one.
 */
import { describe, expect, it } from "vitest"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { statementsOf } from "../../src/Db/Migrator.ts"

const migrationsDir = path.join(import.meta.dirname, "../../migrations")

describe("statementsOf", () => {
  it("cuts at each ; outside strings, quoted names, comments and dollar-quoted bodies", () => {
    const text = [
      "CREATE TABLE \"a;b\" (x text DEFAULT 'it''s; fine');",
      "-- a comment; not a statement",
      "/* nor; this */",
      "CREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN PERFORM 1; RETURN NEW; END $body$ LANGUAGE plpgsql;",
      "DO $$ BEGIN RAISE NOTICE 'x;y'; END $$;",
      "SELECT 1"
    ].join("\n")
    expect(statementsOf(text).map((s) => s.trim())).toEqual([
      "CREATE TABLE \"a;b\" (x text DEFAULT 'it''s; fine')",
      "-- a comment; not a statement\n/* nor; this */\nCREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN PERFORM 1; RETURN NEW; END $body$ LANGUAGE plpgsql",
      "DO $$ BEGIN RAISE NOTICE 'x;y'; END $$",
      "SELECT 1"
    ])
  })

  it("leaves out what is only blanks and comments", () => {
    expect(statementsOf("SELECT 1;\n\n-- done;\n")).toEqual(["SELECT 1"])
  })

  it("gives back every migration's text, statement by statement", () => {
    for (const file of readdirSync(migrationsDir).filter((f) => f.endsWith(".sql"))) {
      const text = readFileSync(path.join(migrationsDir, file), "utf8")
      const statements = statementsOf(text)
      expect(statements.length, file).toBeGreaterThan(0)
      // joined again, the pieces are the file up to what a trailing `;` left (blanks, comments)
      const joined = statements.join(";")
      expect(text.startsWith(joined), file).toBe(true)
      expect(text.slice(joined.length).replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, "").replace(/[;\s]/g, ""), file).toBe("")
    }
  })
})
