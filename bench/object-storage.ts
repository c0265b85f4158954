/**
 * `npx tsx bench/object-storage.ts [--quick]`: a 100 MiB archive uploaded and downloaded through
 * the service under STORAGE=s3, beside the raw AWS SDK moving the same bytes to the same bucket,
 * measured side by side in one run.
 *
 * Three processes: s3rver (bench/s3rver.ts, loopback, temporary folder), the compiled service
 * (`dist/main.js`, its own embedded PostgreSQL in a temporary DATA_DIR, STORAGE=s3 on that
 * s3rver) and this one, which sends the requests and runs the raw SDK client.
 *
 * A warm-up round first (the first upload after start-up also loads and compiles code; it is
 * reported apart), then each round, in this order:
 * - raw `PutObject` of the zip (one request), then a raw multipart upload of it in the service's
 *   part size with as many parts in flight as the service sends;
 * - the service: a new version published over HTTP, its zip `PUT` to the signed URL, timed until
 *   the answer (the multipart upload, the zip checks by ranged GETs, the copy to the archive's
 *   key, the status's commit); the service's peak RSS growth meanwhile;
 * - raw `GetObject` of the archive's key, read to the end;
 * - the service: `GET /archives/{node}/{version}` (the 302) and the bucket's GET it points to,
 *   read to the end; beside it, the 302 alone (the median of several).
 * Throughputs are MiB/s from the first byte sent to the answer's last byte; the ratios are of the
 * medians. The raw `CopyObject` of the same bytes is timed too: the upload's copy to the key is
 * work a raw put does not do.
 *
 * RSS: VmRSS of the service sampled from /proc every 10 ms, and VmHWM after resetting it (writing
 * 5 to /proc/<pid>/clear_refs) just before the transfer; growth is from VmRSS just before.
 *
 * Also exported as `benchObjectStorage({ quick })`, which returns the Markdown section.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import type { Readable } from "node:stream"
import { Option, Redacted } from "effect"
import * as jose from "jose"
import { freePort } from "../src/Db/Embedded.ts"
import { defaultPartBytes, makeS3Client, partsInFlight } from "../src/Storage/S3Storage.ts"
import { benchedServiceOptions, stop } from "./processes.ts"
import { root, runAlone } from "./standalone.ts"
import { rawZip } from "../test/support/Zip.ts"
import { cpuSeconds, type Growth, watchingRss } from "./proc.ts"

const MiB = 1024 * 1024
const log = (line: string) => console.error(`[s3-bench] ${line}`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const targets = { vsRawSdk: 0.7, rssGrowthMiB: 64 }
/** MAX_ARCHIVE_BYTES's default, 100 MiB: the largest archive the service takes unless told otherwise. */
const archiveBytes = 100 * MiB
const bucket = "bench"
/** s3rver's built-in account: the only key it accepts. */
const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

// --- the archive ---------------------------------------------------------------------------------

/**
 * A valid zip of exactly `total` bytes: `count` stored (uncompressed) entries of random bytes, so
 * that the service's checks pass (structure, plain names, sizes) and nothing in between compresses.
 */
const storedZip = (total: number, count: number): Buffer => {
  const names = Array.from({ length: count }, (_, i) => `bench_nodes/blob-${String(i).padStart(4, "0")}.bin`)
  // each entry's local and central headers hold its name; the end record is 22 bytes
  const overhead = names.reduce((sum, name) => sum + 30 + 46 + 2 * Buffer.byteLength(name), 0) + 22
  const dataBytes = total - overhead
  const random = randomBytes(dataBytes)
  const zip = rawZip(names.map((name, i) => ({
    name,
    content: random.subarray(Math.floor((dataBytes * i) / count), Math.floor((dataBytes * (i + 1)) / count))
  })))
  if (zip.length !== total) throw new Error(`the zip has ${zip.length} bytes, not ${total}`)
  return zip
}

// --- child processes ---------------------------------------------------------------------------

const children = new Set<ChildProcess>()

/** s3rver in a child process; its endpoint once it listens. */
const startS3rver = () =>
  new Promise<{ child: ChildProcess; endpoint: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/s3rver.ts", bucket], { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
    children.add(child)
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split("\n")[0]!
      if (out.includes("\n")) resolve({ child, endpoint: (JSON.parse(line) as { endpoint: string }).endpoint })
    })
    child.once("exit", (code) => reject(new Error(`s3rver exited with ${code} while starting`)))
  })

/** The compiled service on its own embedded PostgreSQL, with STORAGE=s3 on `endpoint`. */
const startService = async (endpoint: string, dataDir: string, jwtSecret: string) => {
  const port = await freePort()
  // the embedded database in DATA_DIR, whatever DATABASE_URL this shell has
  const { DATABASE_URL: _, ...inherited } = process.env
  const child = spawn(process.execPath, [...benchedServiceOptions, "dist/main.js"], {
    cwd: root,
    env: {
      ...inherited,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      // the load comes from one address: the anonymous limit would refuse it (bench/README.md)
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0",
      DATA_DIR: dataDir,
      AUTH_JWT_SECRET: jwtSecret,
      STORAGE: "s3",
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_FORCE_PATH_STYLE: "true",
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey
    },
    stdio: ["ignore", "inherit", "inherit"]
  })
  children.add(child)
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} while starting`)
    if (await fetch(`${base}/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)) return { base, pid: child.pid! }
    await sleep(200)
  }
  throw new Error("the service did not become ready within 120 s")
}

// --- memory --------------------------------------------------------------------------------------

/** CPU seconds each process spent while `work` ran: unlike throughput, they do not depend on how busy the machine is. */
const cpuDuring = async <A>(pids: Processes, work: () => Promise<A>): Promise<[A, Cpu]> => {
  const before = [await cpuSeconds(pids.service), await cpuSeconds(pids.s3rver), process.cpuUsage()] as const
  const result = await work()
  const client = process.cpuUsage(before[2])
  return [result, {
    service: (await cpuSeconds(pids.service)) - before[0],
    s3rver: (await cpuSeconds(pids.s3rver)) - before[1],
    client: (client.user + client.system) / 1e6
  }]
}

interface Processes {
  readonly service: number
  readonly s3rver: number
}

interface Cpu {
  readonly service: number
  readonly s3rver: number
  readonly client: number
}

// --- transfers -----------------------------------------------------------------------------------

const seconds = (since: number) => (performance.now() - since) / 1000

/** Reads a stream to its end, keeping nothing; its byte count. */
const drain = async (body: Readable) => {
  let bytes = 0
  for await (const chunk of body) bytes += (chunk as Buffer).length
  return bytes
}

/** One HTTP request with `body` (or none); the status, headers and the answer's bytes, drained. */
const request = (url: string, method: string, headers: Record<string, string>, body?: Buffer) =>
  new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; bytes: number }>((resolve, reject) => {
    const req = http.request(url, { method, headers: body === undefined ? headers : { ...headers, "content-length": String(body.length) } })
    req.on("response", (res) => {
      const keep: Array<Buffer> = []
      let bytes = 0
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length
        if (keep.length < 16) keep.push(chunk)
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(keep).toString(), bytes }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(body)
  })

const json = async (base: string, method: string, url: string, token: string | undefined, body: unknown) => {
  const answer = await request(`${base}${url}`, method, {
    "content-type": "application/json",
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
  }, Buffer.from(JSON.stringify(body)))
  if (answer.status >= 300) throw new Error(`${method} ${url} answered ${answer.status}: ${answer.text}`)
  return JSON.parse(answer.text) as Record<string, unknown>
}

/** A publisher through the API and a personal access token of it; `publish` answers a version's signed URL. */
const publisher = async (base: string, jwtSecret: string) => {
  const jwt = await new jose.SignJWT({}).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject("s3-bench")
    .setIssuedAt().setExpirationTime("1h").sign(new TextEncoder().encode(jwtSecret))
  await json(base, "POST", "/publishers", jwt, { id: "s3-bench", name: "S3 bench" })
  const { token } = await json(base, "POST", "/publishers/s3-bench/tokens", jwt, { name: "bench" }) as { token: string }
  return async (version: string) => {
    const published = await json(base, "POST", "/publishers/s3-bench/nodes/big-archive/versions", undefined, {
      personal_access_token: token,
      node: { name: "big-archive", description: "A 100 MiB archive" },
      node_version: { version, changelog: "bench" }
    })
    const signed = new URL(published.signedUrl as string)
    return `${base}${signed.pathname}${signed.search}`
  }
}

/** The raw multipart upload: the service's part size, at most its parts in flight, no copy of the bytes. */
const rawMultipart = async (client: S3Client, key: string, zip: Buffer) => {
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
  const count = Math.ceil(zip.length / defaultPartBytes)
  const parts: Array<{ ETag: string | undefined; PartNumber: number }> = []
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      const Body = zip.subarray(i * defaultPartBytes, Math.min(zip.length, (i + 1) * defaultPartBytes))
      const { ETag } = await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body }))
      parts[i] = { ETag, PartNumber: i + 1 }
    }
  }
  await Promise.all(Array.from({ length: partsInFlight }, worker))
  await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }))
}

interface Round {
  readonly rawPut: number
  readonly rawMultipart: number
  readonly multipartCpu: Cpu
  readonly uploadCpu: Cpu
  readonly rawCopy: number
  readonly serviceUpload: number
  readonly uploadRss: Growth
  readonly rawGet: number
  readonly serviceDownload: number
  readonly downloadRss: Growth
  /** Median milliseconds of the service's 302 alone. */
  readonly redirectMs: number
  readonly loadAverage: number
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a"

/** One round of every transfer; `publish` makes the version the service's upload goes to. */
const round = async (
  n: number,
  zip: Buffer,
  client: S3Client,
  service: { base: string; pid: number },
  pids: Processes,
  publish: (version: string) => Promise<string>
): Promise<Round> => {
  const rate = (s: number) => zip.length / MiB / s
  const loadAverage = os.loadavg()[0]!
  let t = performance.now()
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: `raw/put-${n}`, Body: zip }))
  const rawPut = rate(seconds(t))
  const [rawMultipartRate, multipartCpu] = await cpuDuring(pids, async () => {
    const started = performance.now()
    await rawMultipart(client, `raw/multipart-${n}`, zip)
    return rate(seconds(started))
  })
  t = performance.now()
  await client.send(new CopyObjectCommand({ Bucket: bucket, Key: `raw/copy-${n}`, CopySource: `${bucket}/raw/put-${n}` }))
  const rawCopy = rate(seconds(t))
  for (const key of [`raw/put-${n}`, `raw/multipart-${n}`, `raw/copy-${n}`]) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))

  const version = `1.0.${n}`
  const uploadUrl = await publish(version)
  const [[serviceUpload, uploadRss], uploadCpu] = await cpuDuring(pids, () =>
    watchingRss(service.pid, async () => {
      const started = performance.now()
      const answer = await request(uploadUrl, "PUT", { "content-type": "application/zip" }, zip)
      if (answer.status !== 200) throw new Error(`the upload answered ${answer.status}: ${answer.text}`)
      const status = (JSON.parse(answer.text) as { status?: string }).status
      if (status !== "NodeVersionStatusActive") throw new Error(`the uploaded version is ${status}, not Active: ${answer.text}`)
      return rate(seconds(started))
    }))

  const archiveUrl = `${service.base}/archives/big-archive/${version}`
  const redirect = await request(archiveUrl, "GET", {})
  const location = redirect.headers.location
  if (redirect.status !== 302 || location === undefined) throw new Error(`the download answered ${redirect.status}, not a 302`)
  const key = decodeURIComponent(new URL(location).pathname.replace(`/${bucket}/`, ""))
  t = performance.now()
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  if (await drain(got.Body as Readable) !== zip.length) throw new Error("the raw GetObject read a wrong size")
  const rawGet = rate(seconds(t))

  const [serviceDownload, downloadRss] = await watchingRss(service.pid, async () => {
    const started = performance.now()
    const first = await request(archiveUrl, "GET", {})
    const object = await request(first.headers.location!, "GET", {})
    if (object.status !== 200 || object.bytes !== zip.length) throw new Error(`the bucket answered ${object.status} with ${object.bytes} bytes`)
    return rate(seconds(started))
  })
  const redirects: Array<number> = []
  for (let i = 0; i < 20; i++) {
    const started = performance.now()
    if ((await request(archiveUrl, "GET", {})).status !== 302) throw new Error("the download is no longer a 302")
    redirects.push(performance.now() - started)
  }
  const r: Round = {
    rawPut,
    rawMultipart: rawMultipartRate,
    multipartCpu,
    uploadCpu,
    rawCopy,
    serviceUpload,
    uploadRss,
    rawGet,
    serviceDownload,
    downloadRss,
    redirectMs: median(redirects),
    loadAverage
  }
  log(
    `round ${n}: put raw ${fmt(rawPut)}, multipart raw ${fmt(rawMultipartRate)}, service ${fmt(serviceUpload)} MiB/s ` +
      `(RSS +${fmt(uploadRss.sampledMiB, 1)} / HWM +${fmt(uploadRss.hwmMiB, 1)} MiB); get raw ${fmt(rawGet)}, ` +
      `service ${fmt(serviceDownload)} MiB/s (RSS +${fmt(downloadRss.sampledMiB, 1)} MiB), 302 ${fmt(r.redirectMs, 1)} ms; ` +
      `copy ${fmt(rawCopy)} MiB/s; CPU s of the upload: service ${fmt(uploadCpu.service, 2)}, s3rver ${fmt(uploadCpu.s3rver, 2)} ` +
      `(raw multipart: s3rver ${fmt(multipartCpu.s3rver, 2)}, client ${fmt(multipartCpu.client, 2)}); load ${fmt(loadAverage, 2)}`
  )
  return r
}

const section = (warmUp: Round, rounds: ReadonlyArray<Round>, quick: boolean) => {
  const of = (f: (r: Round) => number) => median(rounds.map(f))
  // memory the first upload keeps (the part buffers the next one reuses) counts too: every round's worst
  const everyRound = [warmUp, ...rounds]
  const worst = (f: (r: Round) => Growth) => Math.max(...everyRound.map((r) => Math.max(f(r).sampledMiB, Number.isNaN(f(r).hwmMiB) ? 0 : f(r).hwmMiB)))
  const upload = of((r) => r.serviceUpload)
  const download = of((r) => r.serviceDownload)
  const ratioRow = (what: string, service: number, raw: number, target = true) => {
    const ratio = service / raw
    const verdict = target ? `>= ${targets.vsRawSdk}: ${ratio >= targets.vsRawSdk ? "met" : "**missed**"}` : "reference (below)"
    return `| ${what} | ${fmt(service)} MiB/s | ${fmt(raw)} MiB/s | ${fmt(ratio, 2)} | ${verdict} |`
  }
  const rssRow = (what: string, f: (r: Round) => Growth) => {
    const w = worst(f)
    return `| service peak RSS growth, ${what} (VmRSS sampled / VmHWM, worst round, the warm-up's included) | ` +
      `${fmt(Math.max(...everyRound.map((r) => f(r).sampledMiB)), 1)} / ${fmt(Math.max(...everyRound.map((r) => f(r).hwmMiB)), 1)} MiB | – | – | ` +
      `<= ${targets.rssGrowthMiB} MiB: ${w <= targets.rssGrowthMiB ? "met" : "**missed**"} |`
  }
  return [
    `## Object storage (${quick ? "quick" : "full"} run, ${new Date().toISOString()}, ${os.cpus().length} cores shared by s3rver, the service and the client)`,
    "",
    `A ${fmt(archiveBytes / MiB)} MiB zip (stored entries of random bytes) to s3rver on loopback, in its own process; ` +
    `medians of ${rounds.length} round${rounds.length === 1 ? "" : "s"} after a warm-up round, each measuring every row side by side. ` +
    `Parts of ${fmt(defaultPartBytes / MiB)} MiB, ${partsInFlight} in flight. ` +
    `1-minute load average at each round's start: ${rounds.map((r) => fmt(r.loadAverage, 2)).join(", ")}.`,
    "",
    "| measurement | service | raw SDK | ratio | target |",
    "|---|---:|---:|---:|---|",
    ratioRow("upload (PUT to the signed URL, until the 200) vs a multipart upload of the same parts", upload, of((r) => r.rawMultipart)),
    ratioRow("upload vs one `PutObject`", upload, of((r) => r.rawPut), false),
    ratioRow("download (302, then the bucket's GET) vs `GetObject`", download, of((r) => r.rawGet)),
    rssRow("upload", (r) => r.uploadRss),
    rssRow("download", (r) => r.downloadRss),
    "",
    "The upload is a multipart upload, streamed in parts, so the raw SDK's multipart upload of the same parts is " +
    "what it is measured against. One `PutObject` of the whole archive (held in memory) is a reference: on s3rver, " +
    "`CompleteMultipartUpload` writes the whole object again, so the raw multipart upload itself reaches " +
    `${fmt(of((r) => r.rawMultipart) / of((r) => r.rawPut), 2)}x of it.`,
    "",
    "CPU seconds of each process during the transfer (medians; they do not depend on how busy the machine is):",
    "",
    "| transfer | service | s3rver | client (this process) |",
    "|---|---:|---:|---:|",
    `| raw multipart upload | – | ${fmt(of((r) => r.multipartCpu.s3rver), 2)} | ${fmt(of((r) => r.multipartCpu.client), 2)} |`,
    `| upload through the service | ${fmt(of((r) => r.uploadCpu.service), 2)} | ${fmt(of((r) => r.uploadCpu.s3rver), 2)} | ${fmt(of((r) => r.uploadCpu.client), 2)} |`,
    "",
    `The service alone, in a download: its 302 takes ${fmt(of((r) => r.redirectMs), 1)} ms (median of 20 a round); the bytes come from the bucket. ` +
    `The upload also copies the object to its key (crash consistency): a raw \`CopyObject\` of the same bytes ran at ` +
    `${fmt(of((r) => r.rawCopy))} MiB/s, so the copy alone takes ${fmt((archiveBytes / MiB / of((r) => r.rawCopy)) * 1000)} ms ` +
    `of the upload's ${fmt((archiveBytes / MiB / upload) * 1000)} ms. ` +
    `The warm-up round, the first upload after start-up: ${fmt(warmUp.serviceUpload)} MiB/s, RSS growth ` +
    `${fmt(warmUp.uploadRss.sampledMiB, 1)} MiB sampled / ${fmt(warmUp.uploadRss.hwmMiB, 1)} MiB VmHWM (not in the medians; ` +
    "its part buffers stay for the uploads after it)."
  ].join("\n")
}

/** The Markdown section of the report; dist/ must be built (bench/run.ts builds it first). */
export const benchObjectStorage = async (options: { readonly quick: boolean }): Promise<string> => {
  const rounds = options.quick ? 1 : 3
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "s3-bench-"))
  // run as root, the embedded PostgreSQL runs as its own user, which must pass through this folder
  await fs.chmod(dataDir, 0o711)
  let client: S3Client | undefined
  try {
    const s3rver = await startS3rver()
    log(`s3rver on ${s3rver.endpoint} (pid ${s3rver.child.pid})`)
    // the raw SDK's client, set up as the service's (S3Storage.makeS3Client)
    client = makeS3Client({
      endpoint: Option.some(s3rver.endpoint),
      bucket,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: Option.some({ accessKeyId: credentials.accessKeyId, secretAccessKey: Redacted.make(credentials.secretAccessKey) }),
      publicBaseUrl: Option.none()
    })
    const jwtSecret = randomBytes(32).toString("hex")
    const service = await startService(s3rver.endpoint, path.join(dataDir, "service"), jwtSecret)
    log(`service on ${service.base} (pid ${service.pid}); building the ${fmt(archiveBytes / MiB)} MiB zip`)
    const zip = storedZip(archiveBytes, 100)
    const publish = await publisher(service.base, jwtSecret)
    const measured: Array<Round> = []
    const pids = { service: service.pid, s3rver: s3rver.child.pid! }
    // the first upload after start-up also loads and compiles the code it runs: a round of its own
    const warmUp = await round(0, zip, client, service, pids, publish)
    for (let n = 1; n <= rounds; n++) measured.push(await round(n, zip, client, service, pids, publish))
    return section(warmUp, measured, options.quick)
  } finally {
    client?.destroy()
    await Promise.all([...children].map(stop))
    await fs.rm(dataDir, { recursive: true, force: true })
  }
}

runAlone(import.meta.url, benchObjectStorage)
