/**
 * A deterministic, realistic catalogue for development, tests and benchmarks: pure data, no I/O.
 *
 * Every node is generated from its own PRNG stream (seed, node index), so a catalogue can be
 * produced in batches of any size, in any order, and always comes out the same. Publishers are
 * few enough to be generated up front; each node picks one of them.
 */
import type { NodeStatus, NodeVersionStatus } from "../../src/Domain/Node.ts"
import { unclaimedPublisherId } from "../../src/Domain/Publisher.ts"
import { simulatedWebHost } from "../../src/Repohost/Client.ts"
import type { NodeInput, PublisherInput, VersionInput } from "./Seeder.ts"

export interface SeedOptions {
  readonly nodes: number
  readonly versionsPerNode: number
  readonly seed: number
  /** The catalogue's "now": every creation time falls in the two years before it. */
  readonly until?: Date | undefined
}

export interface SeedBatch {
  readonly nodes: ReadonlyArray<NodeInput>
  readonly versions: ReadonlyArray<VersionInput>
}


// fixed, so that the same seed gives the same rows on any day
const defaultUntil = new Date("2026-06-01T00:00:00.000Z")
const twoYears = 2 * 365 * 24 * 3600 * 1000

// ---------------------------------------------------------------------------------------------
// PRNG

/** mulberry32: a 32-bit state PRNG, plenty for test data and cheap enough for millions of rows. */
const mulberry32 = (seed: number): () => number => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Independent seeds for (seed, stream, index): neighbouring indices must not give related streams. */
const mix = (seed: number, stream: number, index: number): number => {
  let h = (seed ^ Math.imul(stream + 1, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca77)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

export class Rng {
  private readonly next: () => number
  constructor(seed: number) {
    this.next = mulberry32(seed)
  }
  /** Uniform in [0, 1). */
  float(): number {
    return this.next()
  }
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<A>(items: ReadonlyArray<A>): A {
    return items[Math.floor(this.next() * items.length)]!
  }
  /** `k` distinct items, in the order of `items`. */
  subset<A>(items: ReadonlyArray<A>, k: number): Array<A> {
    const chosen = new Set<number>()
    while (chosen.size < Math.min(k, items.length)) chosen.add(Math.floor(this.next() * items.length))
    return items.filter((_, i) => chosen.has(i))
  }
  /** Standard normal (Box-Muller). */
  normal(): number {
    return Math.sqrt(-2 * Math.log(1 - this.next())) * Math.cos(2 * Math.PI * this.next())
  }
}

/** Picks a key with probability proportional to its weight (the table is built once). */
const weighted = <K extends string>(weights: Readonly<Record<K, number>>): (rng: Rng) => K => {
  const entries = Object.entries(weights) as Array<[K, number]>
  const total = entries.reduce((sum, [, w]) => sum + w, 0)
  let acc = 0
  const bounds = entries.map(([key, w]) => [key, (acc += w) / total] as const)
  return (rng) => {
    const r = rng.float()
    for (const [key, bound] of bounds) {
      if (r < bound) return key
    }
    return bounds[bounds.length - 1]![0]
  }
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

const topics = [
  "image", "latent", "mask", "prompt", "sampler", "upscale", "video", "audio", "lora", "control",
  "segment", "depth", "face", "style", "noise", "tile", "batch", "workflow", "loader", "switch",
  "math", "text", "color", "pose", "detail", "inpaint", "outpaint", "blend", "crop", "resize",
  "animate", "frame", "motion", "clip", "vae", "embedding", "seed", "scheduler", "grid", "preview"
]
const flavours = [
  "tools", "suite", "pack", "utils", "nodes", "kit", "plus", "essentials", "extras", "lab",
  "helper", "bridge", "studio", "magic", "toolbox", "core", "pro", "fx", "flow", "works"
]
const orgWords = [
  "pixel", "neural", "latent", "quantum", "bright", "silver", "open", "deep", "swift", "lunar",
  "north", "cobalt", "amber", "crimson", "vector", "delta", "nova", "echo", "prism", "atlas",
  "forge", "labs", "works", "studio", "collective", "garden", "foundry", "systems", "ai", "dev"
]
const operatingSystems = ["Windows", "Linux", "macOS"]
const accelerators = ["CUDA", "ROCm", "Metal", "CPU", "DirectML", "XPU"]
const tagPool = [
  "image", "video", "audio", "3d", "upscaling", "inpainting", "controlnet", "animation", "utility",
  "text", "segmentation", "face", "lora", "sampling", "api", "experimental", "workflow", "math"
]
const licenses = ["MIT", "Apache-2.0", "GPL-3.0", "AGPL-3.0", "BSD-3-Clause", "MPL-2.0", "Unlicense"]
const categories = ["image", "video", "audio", "utility", "conditioning", "sampling", "loaders"]
const pythonDeps = ["numpy", "torch>=2.1", "opencv-python", "pillow", "transformers>=4.38", "onnxruntime", "scipy", "einops"]
// host-version ranges in the forms node authors write; some only admit old hosts, some only new
const hostRanges = [
  ">=0.3.0", "^1.2.0", ">=0.2 <0.4", ">=0.3.10", "~0.3.4", ">=0.3.0 <1.0.0", "0.2.x || >=0.3.5",
  "^0.3.0", ">=1.0.0-rc.1", "<0.3.0"
]

const titleCase = (words: ReadonlyArray<string>) => words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join(" ")

// ---------------------------------------------------------------------------------------------
// Publishers

const publisherCount = (nodes: number) => Math.max(2, Math.round(nodes / 20))

/** The publishers of a catalogue of `nodes` nodes (the reserved `unclaimed` one excluded). */
export const seedPublishers = (options: SeedOptions): Array<PublisherInput> => {
  const rng = new Rng(mix(options.seed, 0, 0))
  const count = publisherCount(options.nodes)
  const until = (options.until ?? defaultUntil).getTime()
  // one or two publishers are banned, never the biggest ones (index 0 and 1 host the most nodes)
  const banned = new Set([count - 1, ...(count >= 50 ? [Math.floor(count / 2)] : [])])
  const seen = new Set<string>([unclaimedPublisherId])
  const out: Array<PublisherInput> = []
  for (let i = 0; i < count; i++) {
    const first = rng.int(0, orgWords.length - 1)
    const words = [orgWords[first]!, orgWords[(first + rng.int(1, orgWords.length - 1)) % orgWords.length]!]
    let id = words.join("-")
    for (let n = 2; seen.has(id); n++) id = `${words.join("-")}-${n}`
    seen.add(id)
    out.push({
      id,
      name: titleCase(words),
      description: rng.chance(0.7) ? `${titleCase(words)} builds ${rng.pick(topics)} ${rng.pick(flavours)}.` : undefined,
      website: rng.chance(0.5) ? `https://${id}.example.com` : undefined,
      status: banned.has(i) ? "PublisherStatusBanned" : "PublisherStatusActive",
      // before any of their nodes
      created_at: new Date(until - twoYears - rng.int(1, 180) * 86_400_000)
    })
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Versions

/**
 * `m` increasing semantic versions in release order, chosen to trip lexicographic sorting:
 * minors and patches cross from 9 to 10, majors come after runs of prereleases (rc.9 < rc.10),
 * and now and then a backport lands on an older line after a newer one was released.
 */
const versionSequence = (rng: Rng, m: number): Array<string> => {
  let major = rng.chance(0.4) ? 0 : rng.int(1, 2)
  let minor = rng.chance(0.5) ? rng.int(7, 9) : rng.int(0, 4)
  let patch = rng.chance(0.3) ? rng.int(8, 9) : 0
  const lastPatch = new Map<string, number>()
  const seen = new Set<string>()
  const out: Array<string> = []
  const emit = (v: string) => {
    if (out.length < m && !seen.has(v)) {
      seen.add(v)
      out.push(v)
    }
  }
  emit(`${major}.${minor}.${patch}`)
  lastPatch.set(`${major}.${minor}`, patch)
  while (out.length < m) {
    const step = releaseStep(rng)
    if (step === "backport") {
      const line = rng.pick([...lastPatch.keys()])
      const p = lastPatch.get(line)! + 1
      lastPatch.set(line, p)
      emit(`${line}.${p}`)
      continue
    }
    if (step === "patch") {
      patch++
    } else {
      if (step === "major") {
        major++
        minor = 0
      } else {
        minor++
      }
      patch = 0
      const next = `${major}.${minor}.0`
      // prerelease runs before a new line: alpha < alpha.1 < beta < rc.1 < ... < rc.10 < release
      if (rng.chance(step === "major" ? 0.7 : 0.2)) {
        const kind = prereleaseKind(rng)
        if (kind === "alpha") emit(`${next}-alpha`)
        // a long run is published from rc.8 on (earlier ones never reached the registry)
        const [first, last] = rng.chance(0.15) ? [8, rng.int(10, 11)] : [1, rng.int(1, 3)]
        for (let r = first; r <= last; r++) emit(`${next}-${kind}.${r}`)
      }
    }
    emit(`${major}.${minor}.${patch}`)
    lastPatch.set(`${major}.${minor}`, patch)
  }
  return out
}

const releaseStep = weighted({ patch: 55, minor: 28, major: 9, backport: 8 })
const prereleaseKind = weighted({ rc: 6, beta: 3, alpha: 1 })
const anyVersionStatus = weighted<NodeVersionStatus>({
  NodeVersionStatusActive: 80,
  NodeVersionStatusPending: 7,
  NodeVersionStatusFlagged: 5,
  NodeVersionStatusDeleted: 5,
  NodeVersionStatusBanned: 3
})
const nodeStatus = weighted<NodeStatus>({ NodeStatusActive: 975, NodeStatusBanned: 10, NodeStatusDeleted: 15 })

const versionStatus = (rng: Rng, newest: boolean): NodeVersionStatus =>
  // the newest upload is often still waiting for review
  newest && rng.chance(0.25) ? "NodeVersionStatusPending" : anyVersionStatus(rng)

// ---------------------------------------------------------------------------------------------
// Nodes

/** Node `index` (0-based) of the catalogue with its versions. */
const seedNode = (options: SeedOptions, publishers: ReadonlyArray<PublisherInput>, index: number) => {
  const rng = new Rng(mix(options.seed, 1, index))
  const until = (options.until ?? defaultUntil).getTime()

  // a few publishers own most nodes: u^3 piles the picks onto the first indices
  const publisher = rng.chance(0.05) ? unclaimedPublisherId : publishers[Math.floor(publishers.length * rng.float() ** 3)]!.id
  const words = [rng.pick(topics), rng.pick(flavours)]
  const id = `${words.join("-")}-${index.toString(36)}`
  const createdAt = until - Math.floor(rng.float() * twoYears)
  // heavy tail: a log-normal with a median near 400 and a few nodes in the millions
  const downloads = rng.chance(0.03) ? 0 : Math.round(Math.exp(6 + 2.2 * rng.normal()))
  const stars = Math.round(downloads ** 0.6 * Math.exp(0.5 * rng.normal()) / 4)
  const status = nodeStatus(rng)
  const os = rng.chance(0.4) ? [] : rng.subset(operatingSystems, rng.int(1, 3))
  const accel = rng.chance(0.5) ? [] : rng.subset(accelerators, rng.int(1, 3))

  const node: NodeInput = {
    id,
    publisher_id: publisher,
    name: titleCase(words),
    description: `${titleCase(words)}: ${rng.pick(topics)} and ${rng.pick(topics)} nodes for your workflows.`,
    author: rng.chance(0.8) ? titleCase([rng.pick(orgWords), rng.pick(orgWords)]) : undefined,
    license: rng.chance(0.9) ? rng.pick(licenses) : undefined,
    icon: rng.chance(0.3) ? `https://cdn.example.com/icons/${id}.png` : undefined,
    banner_url: rng.chance(0.1) ? `https://cdn.example.com/banners/${id}.jpg` : undefined,
    category: rng.chance(0.2) ? rng.pick(categories) : undefined,
    // the simulated repository host's, so that the unclaimed ones can be claimed offline
    repository: `https://${simulatedWebHost}/${publisher}/${id}`,
    repohost_stars: stars,
    downloads,
    rating: rng.chance(0.7) ? Math.round((2.5 + 2.5 * Math.sqrt(rng.float())) * 10) / 10 : undefined,
    search_ranking: rng.chance(0.35) ? undefined : rng.int(1, 10),
    status,
    supported_os: os,
    supported_accelerators: accel,
    supported_host_version: rng.chance(0.2) ? rng.pick(hostRanges) : undefined,
    tags: rng.subset(tagPool, rng.int(0, 4)),
    tags_admin: rng.chance(0.02) ? ["dev"] : [],
    preempted_host_node_names: rng.chance(0.02) ? [`${titleCase(words).replace(/ /g, "")}Node`] : [],
    translations: rng.chance(0.05) ? { ja: { description: `${words.join(" ")} ノード` } } : undefined,
    created_at: new Date(createdAt)
  }

  const numbers = versionSequence(rng, options.versionsPerNode)
  // release times: the first at the node's creation, the rest spread until the catalogue's "now"
  const times = numbers.map((_, i) => (i === 0 ? 0 : rng.float())).sort((a, b) => a - b)
  const versions = numbers.map((version, i): VersionInput => {
    const range = rng.chance(0.35) ? rng.pick(hostRanges) : undefined
    const status = versionStatus(rng, i === numbers.length - 1)
    return {
      node_id: id,
      version,
      status,
      status_reason: status === "NodeVersionStatusFlagged" || status === "NodeVersionStatusBanned"
        ? "Flagged by the automated security scan"
        : undefined,
      changelog: rng.chance(0.6) ? `Changes in ${version}: ${rng.pick(topics)} ${rng.pick(["fixes", "speed-ups", "features"])}` : undefined,
      dependencies: rng.subset(pythonDeps, rng.int(0, 3)),
      deprecated: rng.chance(0.02),
      supported_os: os,
      supported_accelerators: accel,
      supported_host_version: range,
      tags: node.tags,
      created_at: new Date(createdAt + Math.floor(times[i]! * (until - createdAt)))
    }
  })
  return { node, versions }
}

/**
 * Nodes `from` (inclusive) to `to` (exclusive) of the catalogue with their versions.
 * `publishers` must be `seedPublishers(options)`.
 */
export const seedNodes = (
  options: SeedOptions,
  publishers: ReadonlyArray<PublisherInput>,
  from: number,
  to: number
): SeedBatch => {
  const nodes: Array<NodeInput> = []
  const versions: Array<VersionInput> = []
  for (let i = from; i < Math.min(to, options.nodes); i++) {
    const generated = seedNode(options, publishers, i)
    nodes.push(generated.node)
    for (const v of generated.versions) versions.push(v)
  }
  return { nodes, versions }
}
