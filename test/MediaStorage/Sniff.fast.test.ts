/**
 * The upload sniffer (src/MediaStorage/Sniff.ts) over the heads of test/support/MediaFixtures.ts:
 * each format is told whatever bytes follow its head and however the stream cuts it into chunks;
 * bytes with no known signature are told nothing; whatever the bytes, the answer is an image,
 * audio or video type, never one a browser would run.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { headKeeper, sniffBytes, sniffMediaType } from "../../src/MediaStorage/Sniff.ts"
import { mediaHeads } from "../support/MediaFixtures.ts"
import { forAllSync } from "../support/Property.ts"

/** `bytes` through a head keeper in pieces cut at `cuts`: the head it kept. */
const keptHead = (bytes: Uint8Array, cuts: ReadonlyArray<number>) => {
  const keeper = headKeeper()
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  let from = 0
  for (const to of [...at, bytes.length]) {
    expect(keeper.take(bytes.subarray(from, to))).toEqual(bytes.subarray(from, to))
    from = to
  }
  return keeper.head()
}

const tail = fc.uint8Array({ maxLength: 200 })
const cuts = fc.array(fc.nat({ max: 300 }), { maxLength: 12 })

describe("telling a media type from the first bytes", () => {
  for (const { format, head, type } of mediaHeads) {
    it(`${format} is ${type}, whatever follows and however it is cut`, () => {
      expect(sniffMediaType(head)).toBe(type)
      forAllSync([tail, cuts], ([rest, at]) => {
        const file = Buffer.concat([head, rest])
        const kept = keptHead(file, at)
        expect(Buffer.from(kept)).toEqual(file.subarray(0, sniffBytes))
        expect(sniffMediaType(kept)).toBe(type)
      }, { numRuns: 50 })
    })
  }

  it("says nothing of bytes without a signature, nor of a head cut short", () => {
    forAllSync([fc.uint8Array({ maxLength: 200 })], ([rest]) => {
      // a leading zero byte followed by no `ftyp` at 4 starts none of the formats
      const file = Buffer.concat([Buffer.from([0, 1, 2, 3, 0x66, 0x72, 0x65, 0x65]), rest])
      expect(sniffMediaType(file)).toBeUndefined()
    })
    expect(sniffMediaType(new Uint8Array())).toBeUndefined()
    expect(sniffMediaType(Buffer.from("RIFF\0\0\0\0AVI LIST", "latin1"))).toBeUndefined()
    expect(sniffMediaType(Buffer.from([0xff, 0xd8]))).toBeUndefined()
    expect(sniffMediaType(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'>", "latin1"))).toBeUndefined()
    expect(sniffMediaType(Buffer.from("<!DOCTYPE html><html>", "latin1"))).toBeUndefined()
  })

  it("answers only image, audio and video types, whatever the bytes", () =>
    forAllSync([fc.uint8Array({ maxLength: 80 })], ([bytes]) => {
      const type = sniffMediaType(bytes)
      if (type !== undefined) expect(type).toMatch(/^(image\/(png|jpeg|gif|webp|avif)|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+)$/)
    }, { numRuns: 2000 }))
})
