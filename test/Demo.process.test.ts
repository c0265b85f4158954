/**
 * `npm run demo` as a newcomer runs it: the script as a child process with its own data folder
 * (embedded PostgreSQL), a seeded catalogue, a printed token that the service accepts, printed
 * commands that work as copied into a shell (a token of another user, a claim of an unclaimed
 * node through the simulated repository host), a clean stop on SIGTERM, and a second start that
 * reuses the catalogue.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../src/Db/Embedded.ts"
import { decodeNodeList } from "./support/Catalogue.ts"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

interface Demo {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly base: string
  readonly token: string
}

/** Starts the demo and waits for its banner; the settings that would change it are left out. */
const startDemo = async (dataDir: string): Promise<Demo> => {
  const port = await freePort()
  const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir }
  for (const name of ["DATABASE_URL", "AUTH_JWT_SECRET", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE", "VENDOR_MODE", "PUBLIC_BASE_URL"]) {
    delete env[name]
  }
  // the bundle `npm run demo` runs, which the run's global set-up built
  const child = spawn(process.execPath, ["dist/demo.js"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
  let out = ""
  let err = ""
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
  const token = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no token within 150 s:\n${out}\n${err}`)), 150_000)
    const check = () => {
      const m = /^export TOKEN=(\S+)$/m.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1]!)
      }
    }
    child.stdout.on("data", check)
    child.on("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`the demo exited with ${code}:\n${out}\n${err}`))
    })
  })
  return { child, stdout: () => out, base: `http://127.0.0.1:${port}`, token }
}

/** SIGTERM, then the exit code (the demo stops its database before it exits). */
const stopDemo = (demo: Demo) =>
  new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      demo.child.kill("SIGKILL")
      reject(new Error("the demo did not stop within 60 s of SIGTERM"))
    }, 60_000)
    demo.child.on("exit", (code) => {
      clearTimeout(timer)
      resolve(code)
    })
    demo.child.kill("SIGTERM")
  })

/** The settings a newcomer's shell does not have: a printed command must carry what it needs. */
const demoSettings = ["DATA_DIR", "DATABASE_URL", "AUTH_JWT_SECRET", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE", "VENDOR_MODE", "REPOHOST_MODE"]

/** Runs a printed command line as pasted into bash in the project, with TOKEN exported; its stdout. */
const pasted = (line: string, token: string) =>
  new Promise<string>((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...process.env, TOKEN: token }
    for (const name of demoSettings) delete env[name]
    const child = spawn("bash", ["-c", `set -o pipefail; ${line}`], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    child.on("error", reject)
    child.on("exit", (code) => code === 0 ? resolve(out) : reject(new Error(`${line}\nexited with ${code}:\n${out}\n${err}`)))
  })

/** The indented command lines printed under the banner line that starts with `heading`. */
const printedUnder = (stdout: string, heading: string) => {
  const lines = stdout.split("\n")
  const start = lines.findIndex((line) => line.startsWith(heading))
  expect(start, `no "${heading}" in:\n${stdout}`).toBeGreaterThanOrEqual(0)
  const block = lines.slice(start + 1)
  const end = block.findIndex((line) => !line.startsWith("  "))
  return block.slice(0, end === -1 ? undefined : end).map((line) => line.trim())
}

const getJson = async (url: string, token?: string) => {
  const response = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
  return { status: response.status, body: await response.json() as unknown }
}

describe("npm run demo", () => {
  it("seeds on first start, prints a working token, stops on SIGTERM, and reuses its catalogue", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "registry-demo-"))
    try {
      let claimedId = ""
      const first = await startDemo(dataDir)
      try {
        expect(first.stdout()).toContain("Catalogue: 300 nodes, seeded just now")
        expect(first.stdout()).toContain("/docs")
        expect(first.stdout()).toContain("/nodes/search?search=")

        const nodes = await getJson(`${first.base}/nodes?limit=5`)
        expect(nodes.status).toBe(200)
        const page = decodeNodeList(nodes.body)
        expect(page.nodes.length).toBe(5)
        expect(page.total).toBeGreaterThan(250)

        const search = decodeNodeList((await getJson(`${first.base}/nodes/search?search=image`)).body)
        expect(search.total).toBeGreaterThan(0)

        // an authenticated endpoint takes the printed token, and refuses the request without it
        const mine = await getJson(`${first.base}/users/publishers`, first.token)
        expect(mine).toEqual({ status: 200, body: [] })
        expect((await getJson(`${first.base}/users/publishers`)).status).toBe(401)

        // the token command it prints signs with the demo's key (its DATA_DIR), not ./data's
        const [tokenCommand] = printedUnder(first.stdout(), "Tokens of other users")
        expect(tokenCommand).toMatch(/^DATA_DIR=\S+ npm run -s token -- --sub alice /)
        const alice = (await pasted(`${tokenCommand} | tail -n 1`, first.token)).trim()
        expect(await getJson(`${first.base}/users/publishers`, alice)).toEqual({ status: 200, body: [] })

        // the claim it prints: a publisher, then a seeded unclaimed node claimed for it
        const [createPublisher, claimNode] = printedUnder(first.stdout(), "Claim an unclaimed node")
        expect(JSON.parse(await pasted(createPublisher!, first.token))).toMatchObject({ id: "demo-tools" })
        const claimed = JSON.parse(await pasted(claimNode!, first.token)) as { node: { id: string } }
        expect(claimed).toMatchObject({ node: { publisher: { id: "demo-tools" } } })
        claimedId = claimed.node.id
        const node = await getJson(`${first.base}/nodes/${claimedId}`)
        expect(node.body).toMatchObject({ publisher: { id: "demo-tools" } })
      } finally {
        expect(await stopDemo(first)).toBe(0)
      }
      // the embedded database was stopped with the service
      await expect(fs.access(path.join(dataDir, "pg.owner"))).rejects.toThrow()

      const second = await startDemo(dataDir)
      try {
        expect(second.stdout()).toMatch(/Catalogue: 300 nodes\n/)
        expect((await getJson(`${second.base}/users/publishers`, second.token)).status).toBe(200)
        // the node claimed is offered no more
        expect(printedUnder(second.stdout(), "Claim an unclaimed node")[1]).not.toContain(`/nodes/${claimedId}/`)
      } finally {
        expect(await stopDemo(second)).toBe(0)
      }
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true })
    }
  }, 400_000)
})
