/**
 * The simulated vendor's result: a PNG drawn from the task id (a diagonal gradient in two hues
 * and a mirrored 5x5 pattern, like an identicon), so that each task shows its own picture and the
 * same task always the same one.
 */
import { simulatedImageSize } from "../Domain/Media.ts"
import { encodePng, type RgbImage } from "./Png.ts"

/** Pictures kept by a cache, the most recently drawn last. */
const cacheCapacity = 32

/** `hsl(hue, saturation, lightness)` (degrees, fractions) as 0–255 RGB. */
const hsl = (hue: number, saturation: number, lightness: number): readonly [number, number, number] => {
  const a = saturation * Math.min(lightness, 1 - lightness)
  const channel = (n: number) => {
    const k = (n + hue / 30) % 12
    return Math.round(255 * (lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))))
  }
  return [channel(0), channel(8), channel(4)]
}

/** Whether cell (row, column) of the mirrored 5x5 pattern is drawn: one hex digit of the id each. */
const patternOf = (digits: string) => (row: number, column: number) =>
  parseInt(digits[row * 3 + Math.min(column, 4 - column)] ?? "0", 16) % 2 === 1

const draw = (taskId: string): RgbImage => {
  const digits = taskId.replace(/[^0-9a-f]/gi, "")
  const hue = parseInt(digits.slice(0, 6) || "0", 16) % 360
  const [from, to] = [hsl(hue, 0.7, 0.6), hsl((hue + 140) % 360, 0.7, 0.4)]
  const ink = hsl((hue + 200) % 360, 0.5, 0.92)
  const drawn = patternOf(digits.slice(6))
  const size = simulatedImageSize
  const cell = size / 8 // the pattern is 5 cells wide, centred with a margin of 1.5 cells
  const pixels = new Uint8Array(size * size * 3)
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const row = Math.floor(y / cell - 1.5)
      const column = Math.floor(x / cell - 1.5)
      const inPattern = row >= 0 && row < 5 && column >= 0 && column < 5 && drawn(row, column)
      const t = (x + y) / (2 * (size - 1))
      const offset = (y * size + x) * 3
      for (let c = 0; c < 3; c++) pixels[offset + c] = inPattern ? ink[c]! : Math.round(from[c]! + (to[c]! - from[c]!) * t)
    }
  }
  return { width: size, height: size, pixels }
}

/** The PNG of a task: the same bytes for the same id. */
export const simulatedPng = (taskId: string): Buffer => encodePng(draw(taskId))

/**
 * `simulatedPng` with a small cache of its own: a client polling and then downloading asks for
 * the same picture a few times in a row, and drawing one costs milliseconds of CPU.
 */
export const cachedSimulatedPngs = () => {
  const cache = new Map<string, Buffer>()
  return (taskId: string): Buffer => {
    const cached = cache.get(taskId)
    if (cached !== undefined) return cached
    const png = simulatedPng(taskId)
    if (cache.size >= cacheCapacity) cache.delete(cache.keys().next().value!)
    cache.set(taskId, png)
    return png
  }
}
