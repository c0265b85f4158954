/** Verified tokens are reused until their `exp` (or five minutes), and only the very same text. */
import { expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { reuseMillis, verifiedCapacity, verifiedTokens } from "../../src/Auth/Jwt.ts"
import { forAllSync } from "../support/Property.ts"

const claims = (sub: string) => ({ sub, email: undefined, name: undefined, admin: false })

it(
  "an entry is found exactly while now is before the token's exp and the reuse limit, and only by its own text",
  () =>
    forAllSync(
      [fc.integer({ min: 0, max: 10 * reuseMillis }), fc.integer({ min: 0, max: 10 * reuseMillis }), fc.string({ minLength: 1 })],
      ([expiresIn, later, other]) => {
        let now = 1_000_000
        const tokens = verifiedTokens(() => now)
        tokens.set("a.b.c", claims("alice"), now + expiresIn)
        expect(tokens.get(`a.b.c${other}`)).toBeUndefined()
        now += later
        const found = tokens.get("a.b.c")
        expect(found === undefined).toBe(later >= Math.min(expiresIn, reuseMillis))
        // once past its time, it stays gone
        if (found === undefined) expect(tokens.get("a.b.c")).toBeUndefined()
      }
    )
)

it("holds at most its capacity, dropping the oldest first", () => {
  const tokens = verifiedTokens(() => 0)
  for (let i = 0; i <= verifiedCapacity; i++) tokens.set(`t${i}`, claims(`u${i}`), reuseMillis)
  expect(tokens.get("t0")).toBeUndefined()
  expect(tokens.get("t1")?.sub).toBe("u1")
  expect(tokens.get(`t${verifiedCapacity}`)?.sub).toBe(`u${verifiedCapacity}`)
})
