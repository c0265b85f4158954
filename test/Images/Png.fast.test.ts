/**
 * The PNG encoder and the simulated vendor's pictures, read back by an ordinary decoder (pngjs):
 * any RGB picture decodes to its own size and pixels; each task's picture is 256x256, not of one
 * colour, the same for the same id and another for another id.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { PNG } from "pngjs"
import { simulatedImageSize } from "../../src/Domain/Media.ts"
import { crc32, encodePng } from "../../src/Images/Png.ts"
import { cachedSimulatedPngs, simulatedPng } from "../../src/Images/SimulatedImage.ts"
import { forAllSync } from "../support/Property.ts"

/** The RGB bytes of a decoded picture (pngjs answers RGBA). */
const rgbOf = (decoded: PNG) => Uint8Array.from(decoded.data.filter((_, i) => i % 4 !== 3))

const distinctColours = (decoded: PNG) => {
  const colours = new Set<number>()
  for (let i = 0; i < decoded.data.length; i += 4) colours.add(decoded.data.readUIntBE(i, 3))
  return colours.size
}

const picture = fc.record({ width: fc.integer({ min: 1, max: 40 }), height: fc.integer({ min: 1, max: 40 }) }).chain(({ height, width }) =>
  fc.uint8Array({ minLength: width * height * 3, maxLength: width * height * 3 }).map((pixels) => ({ width, height, pixels }))
)

it("crc32 is PNG's CRC (the standard check value, and a real IEND chunk's)", () => {
  expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926)
  expect(crc32(Buffer.from("IEND"))).toBe(0xae426082)
})

it("any RGB picture decodes to its own size and pixels", () => forAllSync({ image: picture }, ({ image }) => {
  const decoded = PNG.sync.read(encodePng(image))
  expect([decoded.width, decoded.height]).toEqual([image.width, image.height])
  expect(rgbOf(decoded)).toEqual(image.pixels)
  expect(decoded.data.filter((_, i) => i % 4 === 3).every((alpha) => alpha === 255)).toBe(true)
}, { numRuns: 50 }))

it("a picture of no pixels, or pixels that do not fill it, is refused", () => {
  expect(() => encodePng({ width: 0, height: 1, pixels: new Uint8Array(0) })).toThrow(RangeError)
  expect(() => encodePng({ width: 2, height: 2, pixels: new Uint8Array(11) })).toThrow(RangeError)
})

it("a task's picture: 256x256, many colours, the same bytes for its id, others for another id", () => forAllSync({
  a: fc.uuid(),
  b: fc.uuid()
}, ({ a, b }) => {
  fc.pre(a !== b)
  const png = simulatedPng(a)
  const decoded = PNG.sync.read(png)
  expect([decoded.width, decoded.height]).toEqual([simulatedImageSize, simulatedImageSize])
  expect(distinctColours(decoded)).toBeGreaterThan(100)
  expect(simulatedPng(a).equals(png)).toBe(true)
  expect(simulatedPng(b).equals(png)).toBe(false)
}, { numRuns: 10 }))

it.effect("the cache answers the bytes it drew, and still draws every other id", () =>
  Effect.sync(() => {
    const pngOf = cachedSimulatedPngs()
    const ids = Array.from({ length: 40 }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`)
    const first = pngOf(ids[0]!)
    expect(pngOf(ids[0]!)).toBe(first)
    for (const id of ids) expect(pngOf(id).equals(simulatedPng(id))).toBe(true)
  }))
