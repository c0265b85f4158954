/**
 * `npx tsx bench/music-proxy.ts [--quick]`: the video-to-music proxy beside direct transfers,
 * measured side by side in one run.
 *
 * The service runs as a child process (`src/main.ts`, its own embedded PostgreSQL in a temporary
 * DATA_DIR) against a fake music vendor served by this process.
 *
 * (a) NDJSON relay: the vendor streams N `audio_chunk` events at full speed; events/s read
 *     through the proxy vs read from the vendor directly, after a warm-up round of each, with the
 *     CPU seconds of the service and of this process (client and vendor) from /proc.
 * (b) Upload: a 1 GiB MP4 (256 MiB with --quick), generated on the fly with its movie box last as
 *     the host application writes it (and again with it first), through the proxy to a vendor that
 *     discards it, vs the same bytes sent raw over loopback to a discarding node:http server; MB/s from the first byte sent to the end of the answer, and the service
 *     process's peak RSS growth during the upload (VmRSS sampled from /proc every 10 ms, and
 *     VmHWM reset just before: bench/proc.ts), and its CPU seconds.
 *
 * Both also run through bare relays (bench/bare-relay.ts: plain node:http, nothing of the service)
 * in the same rounds: a `pipe` relay that passes bytes on as they arrive, and a `spool` relay that
 * writes the upload to a file before sending it, as the service does with a file that is no ISO
 * media file (it checks those whole before the vendor sees any of it). They are the yardsticks:
 * what any proxy in one more process reaches on this machine, beside what the service reaches.
 *
 * Also exported as `benchMusicProxy({ quick })`, which returns the Markdown table.
 */
import { type ChildProcess, fork, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as jose from "jose"
import { freePort } from "../src/Db/Embedded.ts"
import { mp4Head, mp4MovieLast } from "../test/support/Video.ts"
import { benchedServiceOptions, stop } from "./processes.ts"
import { root, runAlone } from "./standalone.ts"
import { cpuSeconds, watchingRss } from "./proc.ts"

const MiB = 1024 * 1024
const log = (line: string) => console.error(`[music-bench] ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const targets = { relayVsDirect: 0.8, uploadVsRaw: 0.5, rssGrowthMiB: 100 }

// --- the fake vendor and the raw sink --------------------------------------------------------

/** `count` NDJSON audio_chunk events, built from one block repeated. */
const eventBlock = (count: number) => {
  const data = randomBytes(96).toString("base64")
  const lines = Array.from({ length: count }, (_, i) =>
    `${JSON.stringify({ type: "audio_chunk", data, copy_index: 0, prompt_index: 0, stream_index: i % 2, chunk_index: i })}\n`)
  return Buffer.from(lines.join(""))
}

/** Writes `body` in 64 KiB pieces, honouring backpressure. */
const writeAll = async (res: http.ServerResponse, body: Buffer) => {
  for (let at = 0; at < body.length && !res.destroyed; at += 64 * 1024) {
    if (!res.write(body.subarray(at, at + 64 * 1024))) await new Promise((r) => res.once("drain", r))
  }
}

interface Vendor {
  readonly url: string
  readonly apiKey: string
  /** Bytes of the last request body. */
  lastBodyBytes: number
  mode: "events" | "discard"
  events: Buffer
  close: () => Promise<void>
}

const startVendor = () =>
  new Promise<Vendor>((resolve) => {
    const vendor: Vendor = {
      url: "",
      apiKey: randomBytes(16).toString("hex"),
      lastBodyBytes: 0,
      mode: "events",
      events: Buffer.alloc(0),
      close: () => new Promise((r) => server.close(() => r()))
    }
    const server = http.createServer((req, res) => {
      let bytes = 0
      req.on("data", (chunk: Buffer) => (bytes += chunk.length))
      req.on("end", async () => {
        vendor.lastBodyBytes = bytes
        if (req.headers.authorization !== `Bearer ${vendor.apiKey}`) {
          res.writeHead(401).end()
          return
        }
        res.writeHead(200, { "content-type": "application/x-ndjson" })
        if (vendor.mode === "events") await writeAll(res, vendor.events)
        res.end('{"type":"complete"}\n')
      })
    })
    server.listen(0, "127.0.0.1", () => {
      ;(vendor as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      resolve(vendor)
    })
  })

/** A node:http server that reads and discards request bodies: the raw transfer's far end. */
const startSink = () =>
  new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
    const server = http.createServer((req, res) => {
      req.on("data", () => {})
      req.on("end", () => res.end("ok"))
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise((r) => server.close(() => r()))
      }))
  })

/** A bare relay (bench/bare-relay.ts) in a child process, in front of the vendor. */
const startBareRelay = async (mode: "pipe" | "spool", vendorUrl: string, folder: string) => {
  const child: ChildProcess = fork(path.join(root, "bench/bare-relay.ts"), [mode, new URL(vendorUrl).port, folder], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve(Number(m)))
    child.once("exit", (code) => reject(new Error(`the bare ${mode} relay exited with ${code}`)))
  })
  return { url: `http://127.0.0.1:${port}`, close: () => stop(child) }
}

// --- the service -------------------------------------------------------------------------------

const startService = async (env: Record<string, string>) => {
  const port = await freePort()
  const child = spawn(process.execPath, [...benchedServiceOptions, "dist/main.js"], {
    cwd: root,
    // the load comes from one address: the anonymous limit would refuse it (bench/README.md)
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0" },
    stdio: ["ignore", "inherit", "inherit"]
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while starting`)
    if (await fetch(`${base}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)) return { base, child }
    await sleep(200)
  }
  child.kill("SIGTERM")
  throw new Error("the service did not become ready within 120 s")
}

// --- measurements -------------------------------------------------------------------------------

/** Reads an NDJSON answer, counting event lines; seconds from the request to the last byte. */
const readEvents = async (url: string, init: RequestInit) => {
  const started = performance.now()
  const response = await fetch(url, init)
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  let lines = 0
  let blank = true
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    for (const byte of chunk) {
      if (byte === 0x0a) {
        if (!blank) lines++
        blank = true
      } else blank = false
    }
  }
  return { lines, seconds: (performance.now() - started) / 1000 }
}

/**
 * Sends `head`, `size` bytes made on the fly (one 1 MiB buffer again and again) and `tail` as one
 * request body; resolves with the seconds until the answer's end and its status.
 */
const upload = (url: string, headers: Record<string, string>, head: Buffer, size: number, tail: Buffer) =>
  new Promise<{ seconds: number; status: number }>((resolve, reject) => {
    const block = Buffer.alloc(MiB, 0x5a)
    const started = performance.now()
    const request = http.request(url, { method: "POST", headers: { ...headers, "content-length": String(head.length + size + tail.length) } })
    request.on("response", (response) => {
      response.resume()
      response.on("end", () => resolve({ seconds: (performance.now() - started) / 1000, status: response.statusCode ?? 0 }))
    })
    request.on("error", reject)
    let sent = 0
    request.write(head)
    const pump = () => {
      while (sent < size) {
        const piece = block.subarray(0, Math.min(MiB, size - sent))
        sent += piece.length
        if (!request.write(piece)) return void request.once("drain", pump)
      }
      request.end(tail)
    }
    pump()
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

export const benchMusicProxy = async (options: { quick: boolean }): Promise<string> => {
  const eventCount = options.quick ? 50_000 : 300_000
  const uploadBytes = options.quick ? 256 * MiB : 1024 * MiB
  const rounds = options.quick ? 1 : 3
  const secret = randomBytes(32).toString("hex")
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "music-bench-"))
  // run as root, the embedded PostgreSQL runs as its own user, which must pass through this folder
  await fs.chmod(dataDir, 0o711)
  const vendor = await startVendor()
  const sink = await startSink()
  const barePipe = await startBareRelay("pipe", vendor.url, dataDir)
  const bareSpool = await startBareRelay("spool", vendor.url, dataDir)
  let service: Awaited<ReturnType<typeof startService>> | undefined
  try {
    log(`starting the service (embedded PostgreSQL in ${dataDir})`)
    service = await startService({
      DATA_DIR: path.join(dataDir, "service"),
      AUTH_JWT_SECRET: secret,
      MUSICVENDOR_BASE_URL: vendor.url,
      MUSICVENDOR_API_KEY: vendor.apiKey,
      VENDOR_TIMEOUT_SECONDS: "120"
    })
    const token = await new jose.SignJWT({}).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject("bench")
      .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(secret))
    const pid = service.child.pid!
    const vendorAuth = { authorization: `Bearer ${vendor.apiKey}` }
    const serviceAuth = { authorization: `Bearer ${token}` }

    // (a) the NDJSON relay: direct, through the bare pipe relay, through the service
    vendor.mode = "events"
    vendor.events = eventBlock(eventCount)
    const form = new URLSearchParams({ video: "https://videos.example/v.mp4" })
    const relayRates = { direct: [] as Array<number>, bare: [] as Array<number>, proxy: [] as Array<number> }
    /** The service's CPU seconds per proxied relay, and this process's (client and vendor) per direct and proxied one. */
    const relayCpu = { service: [] as Array<number>, benchDirect: [] as Array<number>, benchProxied: [] as Array<number> }
    const ownCpu = () => {
      const { user, system } = process.cpuUsage()
      return (user + system) / 1e6
    }
    const generateVia = (base: string, headers: Record<string, string>) =>
      readEvents(`${base}/v2m/generate`, { method: "POST", headers, body: form })
    // round 0 warms up (the service's first relay also compiles its code) and is only logged
    for (let round = 0; round <= rounds; round++) {
      const ownBefore = ownCpu()
      const d = await generateVia(vendor.url, vendorAuth)
      const ownBetween = ownCpu()
      const b = await generateVia(barePipe.url, vendorAuth)
      const ownAfterBare = ownCpu()
      const serviceBefore = await cpuSeconds(pid)
      const p = await generateVia(`${service.base}/proxy/musicvendor`, serviceAuth)
      const serviceCpu = (await cpuSeconds(pid)) - serviceBefore
      if (p.lines !== eventCount + 1) throw new Error(`the proxy relayed ${p.lines} events of ${eventCount + 1}`)
      const rate = (r: { lines: number; seconds: number }) => r.lines / r.seconds
      log(
        `relay ${round === 0 ? "warm-up" : `round ${round}`}: direct ${fmt(rate(d))} events/s, bare relay ${fmt(rate(b))}, ` +
          `proxy ${fmt(rate(p))}, service ${fmt(serviceCpu, 2)} CPU s`
      )
      if (round === 0) continue
      relayCpu.service.push(serviceCpu)
      relayCpu.benchDirect.push(ownBetween - ownBefore)
      relayCpu.benchProxied.push(ownCpu() - ownAfterBare)
      relayRates.direct.push(rate(d))
      relayRates.bare.push(rate(b))
      relayRates.proxy.push(rate(p))
    }

    // (b) the upload: raw, through the bare relays, through the service, round after round
    vendor.mode = "discard"
    const boundary = "music-bench-boundary"
    const mediaBytes = uploadBytes - mp4Head(60, 0).length
    const partHead = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="0.video"; filename="bench.mp4"\r\ncontent-type: video/mp4\r\n\r\n`)
    const formTail = Buffer.from(`\r\n--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nbench\r\n--${boundary}--\r\n`)
    // the movie box after the media, as the host application's uploads have it (test/support/Video.ts)
    const movieLast = mp4MovieLast(60, mediaBytes)
    const head = Buffer.concat([partHead, movieLast.head])
    const tail = Buffer.concat([movieLast.tail, formTail])
    // the movie box first (`faststart`), as files prepared for the web have it
    const movieFirst = { head: Buffer.concat([partHead, mp4Head(60, mediaBytes)]), tail: formTail }
    const formType = { "content-type": `multipart/form-data; boundary=${boundary}` }
    const uploadRates = {
      raw: [] as Array<number>,
      pipe: [] as Array<number>,
      spool: [] as Array<number>,
      proxy: [] as Array<number>,
      proxyMovieFirst: [] as Array<number>
    }
    const uploadCpu: Array<number> = []
    let growth = 0
    let hwmGrowth = Number.NaN
    let rssBefore = 0
    let forwarded = 0
    const mbps = (seconds: number) => uploadBytes / 1e6 / seconds
    const viaBare = async (url: string) => {
      const sent = await upload(`${url}/v2m/generate`, { ...vendorAuth, ...formType }, head, mediaBytes, tail)
      if (sent.status !== 200) throw new Error(`the bare relay's upload answered ${sent.status}`)
      return mbps(sent.seconds)
    }
    for (let round = 1; round <= rounds; round++) {
      const raw = mbps((await upload(`${sink.url}/`, { "content-type": "application/octet-stream" }, Buffer.alloc(0), uploadBytes, Buffer.alloc(0))).seconds)
      const pipe = await viaBare(barePipe.url)
      const spool = await viaBare(bareSpool.url)
      const cpuBefore = await cpuSeconds(pid)
      const [proxied, rss] = await watchingRss(pid, () =>
        upload(`${service!.base}/proxy/musicvendor/v2m/generate`, { ...serviceAuth, ...formType }, head, mediaBytes, tail))
      uploadCpu.push((await cpuSeconds(pid)) - cpuBefore)
      if (proxied.status !== 200) throw new Error(`the proxied upload answered ${proxied.status}`)
      forwarded = vendor.lastBodyBytes
      const first = await upload(`${service.base}/proxy/musicvendor/v2m/generate`, { ...serviceAuth, ...formType }, movieFirst.head, mediaBytes, movieFirst.tail)
      if (first.status !== 200) throw new Error(`the proxied upload (movie box first) answered ${first.status}`)
      growth = Math.max(growth, rss.sampledMiB)
      // NaN when the peak could not be reset: then only the sampled growth counts
      hwmGrowth = Number.isNaN(hwmGrowth) ? rss.hwmMiB : Math.max(hwmGrowth, rss.hwmMiB)
      rssBefore = rss.beforeMiB
      log(
        `upload round ${round}: raw ${fmt(raw)} MB/s, bare pipe ${fmt(pipe)}, bare spool ${fmt(spool)}, ` +
          `proxy ${fmt(mbps(proxied.seconds))}, movie box first ${fmt(mbps(first.seconds))}; the vendor received ${forwarded} bytes`
      )
      uploadRates.raw.push(raw)
      uploadRates.pipe.push(pipe)
      uploadRates.spool.push(spool)
      uploadRates.proxy.push(mbps(proxied.seconds))
      uploadRates.proxyMovieFirst.push(mbps(first.seconds))
    }

    const relayRatio = median(relayRates.proxy) / median(relayRates.direct)
    const rawRate = median(uploadRates.raw)
    const uploadRatio = median(uploadRates.proxy) / rawRate
    const met = (ok: boolean) => (ok ? "met" : "MISSED")
    const ratio = (rate: number, of: number) => fmt(rate / of, 2)
    return [
      `## Music proxy (${options.quick ? "quick" : "full"} run, ${new Date().toISOString()}, ${os.cpus().length} cores shared by client, service, relays and fake vendor)`,
      "",
      `Medians of ${rounds} round${rounds === 1 ? "" : "s"}, each measuring every row one after the other. The bare relays (bench/bare-relay.ts) ` +
        "are plain node:http in a process of their own: what any proxy reaches here.",
      "",
      "| measurement | rate | ratio to direct / raw | target |",
      "|---|---:|---:|---|",
      `| NDJSON relay of ${fmt(eventCount)} events: read from the vendor directly | ${fmt(median(relayRates.direct))} events/s | 1.00 | – |`,
      `| … through a bare pipe relay | ${fmt(median(relayRates.bare))} events/s | ${ratio(median(relayRates.bare), median(relayRates.direct))} | – |`,
      `| … through the service | ${fmt(median(relayRates.proxy))} events/s | ${fmt(relayRatio, 2)} | >= ${targets.relayVsDirect}: ${met(relayRatio >= targets.relayVsDirect)} |`,
      `| upload of ${fmt(uploadBytes / MiB)} MiB: raw loopback to a discarding server | ${fmt(rawRate)} MB/s | 1.00 | – |`,
      `| … through a bare pipe relay (checks nothing) | ${fmt(median(uploadRates.pipe))} MB/s | ${ratio(median(uploadRates.pipe), rawRate)} | – |`,
      `| … through a bare spool relay (file, then send) | ${fmt(median(uploadRates.spool))} MB/s | ${ratio(median(uploadRates.spool), rawRate)} | – |`,
      `| … through the service, an MP4 with its movie box last (forwarded as it arrives, checked on the way) | ${fmt(median(uploadRates.proxy))} MB/s | ${fmt(uploadRatio, 2)} | >= ${targets.uploadVsRaw}: ${met(uploadRatio >= targets.uploadVsRaw)} |`,
      `| … through the service, the movie box first | ${fmt(median(uploadRates.proxyMovieFirst))} MB/s | ${ratio(median(uploadRates.proxyMovieFirst), rawRate)} | – |`,
      `| service peak RSS growth during an upload (VmRSS sampled / VmHWM), largest | ${fmt(growth, 1)} MiB / ${fmt(hwmGrowth, 1)} MiB | – | <= ${targets.rssGrowthMiB} MiB: ${met(Math.max(growth, Number.isNaN(hwmGrowth) ? 0 : hwmGrowth) <= targets.rssGrowthMiB)} |`,
      "",
      `The vendor received ${fmt(forwarded)} bytes for the ${fmt(uploadBytes)}-byte file (the form adds framing). ` +
        `RSS before the last upload: ${fmt(rssBefore)} MiB.`,
      "",
      `CPU seconds (from /proc; they do not depend on how busy the machine is), medians: the service per relay ${fmt(median(relayCpu.service), 2)} ` +
        `(${fmt(median(relayCpu.service) * 1e6 / (eventCount + 1), 2)} µs an event); the bench process (client and fake vendor) per direct read ` +
        `${fmt(median(relayCpu.benchDirect), 2)}, per read through the service ${fmt(median(relayCpu.benchProxied), 2)}; ` +
        `the service per upload ${fmt(median(uploadCpu), 2)} (${fmt(median(uploadCpu) * 1000 / (uploadBytes / MiB / 1024), 0)} ms a GiB).`
    ].join("\n")
  } finally {
    if (service) await stop(service.child)
    await barePipe.close()
    await bareSpool.close()
    await vendor.close()
    await sink.close()
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

runAlone(import.meta.url, benchMusicProxy)
