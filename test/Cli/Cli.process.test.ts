/**
 * The CLI against the real service: login, publishers, tokens, publishing a git repository through
 * upload to Active (and a flagged one), installing it, the read commands with and without `--json`,
 * and the one-line failures with their exit codes. The instance answers in the clients' words too
 * (ANSWER_ALIASES=true, issue 26).
 *
 * Most runs call the CLI's own entry (`run` of src/Cli/Commands.ts, what main.ts runs) in this
 * process, with its environment and output streams given to it. A few are the CLI as users run it,
 * a child process of the bundle dist/cli.js or of the installed launcher that runs it: a login, a
 * publish, a failure that ends the process with its exit code, and the launcher's search and help.
 *
 * The service hands out absolute URLs (signed upload URLs, download URLs) under its
 * PUBLIC_BASE_URL. A test instance listens on a port chosen when it starts, so it is reached
 * through a TCP forwarder whose port is known first and given as its PUBLIC_BASE_URL.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import { run } from "../../src/Cli/Commands.ts"
import { Streams } from "../../src/Cli/Output.ts"
import { query } from "../support/Db.ts"
import { send } from "../support/Http.ts"
import { githubClaims, OidcIssuer, type OidcIssuerShape } from "../support/OidcIssuer.ts"
import { tcpForwarder } from "../support/Forwarder.ts"
import { type Running, Service, serviceOnFreshDatabase } from "../support/Service.ts"

const repoRoot = path.resolve(import.meta.dirname, "../..")
/** Bundled by the test run's global set-up (test/support/globalSetup.ts runs scripts/build.mjs). */
const bundle = path.join(repoRoot, "dist/cli.js")
const launcher = path.join(repoRoot, "bin/registry.mjs")

/** Largest archive the test instance takes: entries may uncompress to 20 times this before they are flagged. */
const maxArchiveBytes = 20_000

/** The audience the test instance's trusted publishing asks identity tokens for. */
const audience = "cli-test-registry"

const ServiceBehindForwarder = Layer.effect(
  Service,
  Effect.gen(function*() {
    const proxy = yield* tcpForwarder
    const issuer = yield* OidcIssuer
    const base = proxy.url
    // answering in the clients' words too (ANSWER_ALIASES=true): the CLI must read such answers as
    // well as the interface's alone, which every other run of it here (the README, the docs) meets
    const running = yield* serviceOnFreshDatabase((c) => ({
      ...c,
      publicBaseUrl: base,
      storage: { ...c.storage, maxArchiveBytes },
      aliases: { ...c.aliases, inAnswers: true },
      trustedPublishing: { ...c.trustedPublishing, issuers: [issuer.url], audience }
    }))
    proxy.target.port = Number(new URL(running.baseUrl).port)
    return { ...running, baseUrl: base } satisfies Running
  })
).pipe(Layer.provideMerge(OidcIssuer.layer))

/**
 * A GitHub Actions runner's identity-token endpoint, as a job granted `id-token: write` reaches it:
 * GET with the request token as bearer and `&audience=`; answers `{"value": <jwt>}` of the loopback
 * issuer for `runner.repository`'s workflow publish.yml.
 */
const runner = { url: "", requestToken: "runner-request-token", repository: "", audiences: [] as Array<string> }

const fakeRunner = (issuer: OidcIssuerShape) =>
  Effect.acquireRelease(
    Effect.callback<http.Server>((resume) => {
      const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://runner")
        if (req.headers.authorization !== `Bearer ${runner.requestToken}` || url.searchParams.get("api-version") !== "2.0") {
          res.writeHead(401).end()
          return
        }
        const aud = url.searchParams.get("audience") ?? ""
        runner.audiences.push(aud)
        void issuer.sign(githubClaims(aud, { repository: runner.repository })).then((value) =>
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ count: 1, value }))
        )
      })
      server.listen(0, "127.0.0.1", () => {
        runner.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/token?api-version=2.0`
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  )

/** Each process started loads Effect: seconds each on a busy machine. */
const slow = 300_000

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The state the steps share: the scratch directory, the saved login, tokens. */
const state = { scratch: "", config: "", pat: "", tokenId: "", node: "" }

afterAll(() => (state.scratch === "" ? undefined : fs.rm(state.scratch, { recursive: true, force: true })))

/**
 * The CLI's entry in this process, as main.ts runs it: its environment only REGISTRY_CONFIG and
 * `env`, its stdout and stderr collected (neither a terminal, as in a child process with pipes).
 */
const inProcess = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.suspend(() => {
    let stdout = ""
    let stderr = ""
    const streams = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } }
    const environment = ConfigProvider.fromEnv({ env: { REGISTRY_CONFIG: state.config, ...env } })
    return run([process.execPath, bundle, ...args]).pipe(
      Effect.provideService(Streams, streams),
      Effect.provideService(ConfigProvider.ConfigProvider, environment),
      Effect.provide(Layer.merge(NodeServices.layer, NodeHttpClient.layerNodeHttp)),
      Effect.map((code): Ran => ({ code, stdout, stderr }))
    )
  })

/** The CLI in a child process: the bundle dist/cli.js, or the launcher bin/registry.mjs as installed. */
const spawned = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>, via: "node" | "bin") =>
  Effect.promise(() =>
    new Promise<Ran>((resolve, reject) => {
      const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("REGISTRY_")))
      const command = via === "node" ? [process.execPath, bundle] : [launcher]
      const child = spawn(command[0]!, [...command.slice(1), ...args], {
        cwd: repoRoot,
        env: { ...inherited, REGISTRY_CONFIG: state.config, ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
      child.on("error", reject)
      child.on("close", (code) => resolve({ code, stdout, stderr }))
    })
  )

/** Runs the CLI with `args`, its config file in the scratch directory and no REGISTRY_* from outside. */
const cli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}, via: "in-process" | "node" | "bin" = "in-process") =>
  via === "in-process" ? inProcess(args, env) : spawned(args, env, via)

/** A run that must succeed: its stdout. */
const ok = (ran: Ran, what: string) => {
  expect(ran.stderr, `${what}: stderr`).not.toMatch(/^error:/m)
  expect(ran.code, `${what}: exit code (stderr: ${ran.stderr})`).toBe(0)
  return ran.stdout
}

/**
 * A run that must fail with `exitCode` and the one line `error: <errorCode>: ...` on stderr: all
 * of stderr, or with `notes` (publish tells what it is doing) its last line and its only error.
 */
const fails = (ran: Ran, exitCode: number, errorCode: string, options: { readonly notes?: boolean } = {}) => {
  const lines = ran.stderr.split("\n").slice(0, -1)
  const line = new RegExp(`^error: ${errorCode}: \\S.*$`)
  if (options.notes === true) {
    expect(lines.at(-1), `stderr: ${ran.stderr}`).toMatch(line)
    expect(lines.filter((l) => l.startsWith("error:")), ran.stderr).toHaveLength(1)
  } else {
    expect(lines, `stdout: ${ran.stdout}`).toHaveLength(1)
    expect(lines[0], `stdout: ${ran.stdout}`).toMatch(line)
  }
  expect(ran.code, ran.stderr).toBe(exitCode)
  return lines.at(-1)!
}

const git = (dir: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd: dir, encoding: "utf8" })

/** A git repository holding a node; `files` written and committed, then `untracked` written beside them. */
const nodeRepository = (name: string, files: Readonly<Record<string, string>>, untracked: Readonly<Record<string, string>> = {}) =>
  Effect.promise(async () => {
    const dir = path.join(state.scratch, name)
    const write = async (entries: Readonly<Record<string, string>>) => {
      for (const [file, content] of Object.entries(entries)) {
        await fs.mkdir(path.dirname(path.join(dir, file)), { recursive: true })
        await fs.writeFile(path.join(dir, file), content)
      }
    }
    await write(files)
    git(dir, "init", "-q")
    git(dir, "add", ".")
    git(dir, "commit", "-q", "-m", "node")
    await write(untracked)
    return dir
  })

const pyproject = (name: string, version: string, extra = "", description = "Tools for images, from the CLI") => `
[project]
name = "${name}"
version = "${version}"
description = "${description}"
license = { file = "LICENSE" }
dependencies = ["pillow"]

[project.urls]
Repository = "https://example.com/acme/${name}"

[tool.registry]
publisher_id = "acme"
tags = ["tools"]
${extra}
`

/** Every file under `dir`, relative, with its content. */
const tree = (dir: string) =>
  Effect.promise(async () => {
    const out: Record<string, string> = {}
    for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue
      const full = path.join(entry.parentPath, entry.name)
      out[path.relative(dir, full).split(path.sep).join("/")] = await fs.readFile(full, "utf8")
    }
    return out
  })

layer(ServiceBehindForwarder, { excludeTestServices: true, timeout: 120_000 })("the CLI against the service", (it) => {
  it.effect("login saves the URL and token in a 0600 file in a 0700 directory", () =>
    Effect.gen(function*() {
      const service = yield* Service
      state.scratch = yield* Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "registry-cli-")))
      state.config = path.join(state.scratch, "conf", "registry", "config.json")
      const jwt = yield* Effect.promise(() => service.token({ sub: "alice", email: "alice@example.com", name: "Alice" }))
      // as users run it: the file and directory modes are those a real process sets
      const out = ok(yield* cli(["login", "--url", service.baseUrl, "--token", jwt], {}, "node"), "login")
      expect(out).toContain(`Logged in to ${service.baseUrl}`)
      const stat = yield* Effect.promise(() => fs.stat(state.config))
      expect(stat.mode & 0o777).toBe(0o600)
      expect((yield* Effect.promise(() => fs.stat(path.dirname(state.config)))).mode & 0o777).toBe(0o700)
      expect(JSON.parse(yield* Effect.promise(() => fs.readFile(state.config, "utf8")))).toEqual({ url: service.baseUrl, token: jwt })
      // bad usage: one line, exit 2
      fails(yield* cli(["login", "--url", "not a url", "--token", "x"]), 2, "bad_url")
      fails(yield* cli(["login", "--token", "x"]), 2, "usage")
    }), slow)

  it.effect("publisher create and show; a taken id is a conflict, an unknown one not found", () =>
    Effect.gen(function*() {
      expect(ok(yield* cli(["publisher", "create", "--id", "acme", "--name", "Acme", "--website", "https://acme.example"]), "create"))
        .toBe("Created publisher acme\n")
      fails(yield* cli(["publisher", "create", "--id", "acme"]), 5, "publisher_exists")
      const shown = ok(yield* cli(["publisher", "show", "acme"]), "show")
      expect(shown).toMatch(/^id\s+acme$/m)
      expect(shown).toMatch(/^status\s+Active$/m)
      expect(shown).toMatch(/^alice\s+owner\s+Alice\s+alice@example\.com$/m)
      const json = JSON.parse(ok(yield* cli(["publisher", "show", "acme", "--json"]), "show --json"))
      expect(json).toMatchObject({ id: "acme", name: "Acme", website: "https://acme.example", status: "PublisherStatusActive" })
      expect(json.members).toEqual([{ id: "alice", role: "owner", user: { id: "alice", email: "alice@example.com", name: "Alice" } }])
      expect(typeof json.createdAt).toBe("string")
      fails(yield* cli(["publisher", "show", "nobody"]), 4, "not_found")
    }), slow)

  it.effect("token create, list, revoke", () =>
    Effect.gen(function*() {
      const created = yield* cli(["token", "create", "acme", "--name", "ci", "--description", "the CI"])
      state.pat = ok(created, "token create").trim()
      expect(state.pat).toMatch(/^\S{20,}$/)
      expect(created.stderr).toContain("only time the token is shown")
      const extra = JSON.parse(ok(yield* cli(["token", "create", "acme", "--name", "spare", "--json"]), "token create --json"))
      expect(Object.keys(extra)).toEqual(["token"])
      const listed = JSON.parse(ok(yield* cli(["token", "list", "acme", "--json"]), "token list --json")) as Array<{ id: string; name: string; token: string }>
      expect(listed.map((t) => t.name).sort()).toEqual(["ci", "spare"])
      expect(listed.every((t) => !t.token.includes(state.pat))).toBe(true)
      const spare = listed.find((t) => t.name === "spare")!
      expect(ok(yield* cli(["token", "revoke", "acme", spare.id]), "revoke")).toBe(`Revoked token ${spare.id}\n`)
      const table = ok(yield* cli(["token", "list", "acme"]), "token list")
      expect(table.split("\n")[0]).toMatch(/^ID\s+NAME\s+TOKEN\s+CREATED\s+LAST USED\s+DESCRIPTION$/)
      expect(table).toMatch(/\sci\s.*the CI$/m)
      expect(table).not.toContain("spare")
      fails(yield* cli(["token", "revoke", "acme", "00000000-0000-4000-8000-000000000000"]), 4, "not_found")
    }), slow)

  it.effect("publish a git repository: tracked files minus .registryignore plus includes, uploaded, checked, Active", () =>
    Effect.gen(function*() {
      state.node = yield* nodeRepository("image-tools", {
        "pyproject.toml": pyproject("image-tools", "1.0.0", `includes = ["models/*.json"]`),
        "LICENSE": "MIT\n",
        "image_tools/__init__.py": "NODES = {}\n",
        "image_tools/nodes.py": "def run(): pass\n",
        "tests/test_nodes.py": "def test(): pass\n",
        ".registryignore": "# tests stay home\ntests/\n",
        ".gitignore": "models/\n"
      }, { "models/config.json": "{\"size\": 1}\n", "models/weights.bin": "not included", "notes.txt": "untracked" })
      // as users run it, its stderr a pipe
      const ran = yield* cli(["publish", state.node, "--changelog", "First release"], { REGISTRY_PAT: state.pat }, "node")
      expect(ok(ran, "publish")).toBe("Active\n")
      expect(ran.stderr).toMatch(/^publishing acme\/image-tools@1\.0\.0: 7 files, [\d.]+ \w+$/m)
      // stderr is not a terminal here: one line once the upload is done, no bar
      expect(ran.stderr).toMatch(/^uploading: [\d.]+ \w+ sent$/m)
      expect(ran.stderr).not.toContain("\r")
      // the same version again: a conflict
      fails(yield* cli(["publish", state.node, "--token", state.pat]), 5, "version_exists", { notes: true })
      // a wrong token: authentication
      yield* Effect.promise(() => fs.writeFile(path.join(state.node, "pyproject.toml"), pyproject("image-tools", "1.0.1")))
      fails(yield* cli(["publish", state.node, "--token", "not-a-token"]), 3, "invalid_token", { notes: true })
      // a bad manifest: usage, before anything is sent
      yield* Effect.promise(() => fs.writeFile(path.join(state.node, "pyproject.toml"), pyproject("image-tools", "one")))
      const bad = fails(yield* cli(["publish", state.node, "--token", state.pat]), 2, "bad_manifest")
      expect(bad).toContain("[project] version: expected a semantic version")
      fails(yield* cli(["publish", state.scratch, "--token", state.pat]), 2, "bad_manifest")
      // what it would send, without sending it
      yield* Effect.promise(() => fs.writeFile(path.join(state.node, "pyproject.toml"), pyproject("image-tools", "1.0.0", `includes = ["models/*.json"]`)))
      const dry = ok(yield* cli(["publish", state.node, "--dry-run"]), "dry run").split("\n")
      expect(dry[0]).toBe("acme/image-tools@1.0.0")
      expect(dry.slice(dry.indexOf("}") + 1)).toEqual([
        ".gitignore",
        ".registryignore",
        "LICENSE",
        "image_tools/__init__.py",
        "image_tools/nodes.py",
        "models/config.json",
        "pyproject.toml",
        ""
      ])
    }), slow)

  it.effect("an archive the checks refuse: each failed check printed, exit 1", () =>
    Effect.gen(function*() {
      // compresses far below the size limit, uncompresses far beyond twenty times it
      const dir = yield* nodeRepository("bomb", {
        "pyproject.toml": pyproject("bomb", "0.1.0", "", "A compressed surprise"),
        "zeros.txt": "0".repeat(maxArchiveBytes * 25)
      })
      const ran = yield* cli(["publish", dir], { REGISTRY_PAT: state.pat })
      expect(ran.stdout).toMatch(/^Failed check uncompressed_size: the entries uncompress to more than \d+ bytes\n$/)
      fails(ran, 1, "archive_rejected", { notes: true })
    }), slow)

  it.effect("install: the files published, safely unpacked; unknown nodes and versions are not found", () =>
    Effect.gen(function*() {
      const into = path.join(state.scratch, "installed")
      const out = ok(yield* cli(["install", "image-tools", "--dir", into]), "install")
      expect(out).toMatch(/^Installed image-tools@1\.0\.0 into .*installed\/image-tools \(7 files, .*\)\n$/)
      expect(yield* tree(path.join(into, "image-tools"))).toEqual({
        ".gitignore": "models/\n",
        ".registryignore": "# tests stay home\ntests/\n",
        "LICENSE": "MIT\n",
        "image_tools/__init__.py": "NODES = {}\n",
        "image_tools/nodes.py": "def run(): pass\n",
        "models/config.json": "{\"size\": 1}\n",
        "pyproject.toml": pyproject("image-tools", "1.0.0", `includes = ["models/*.json"]`)
      })
      // an existing install is kept unless --force
      fails(yield* cli(["install", "image-tools@1.0.0", "--dir", into]), 2, "target_exists")
      ok(yield* cli(["install", "image-tools@1.0.0", "--dir", into, "--force"]), "install --force")
      expect(yield* Effect.promise(() => fs.readdir(into))).toEqual(["image-tools"])
      fails(yield* cli(["install", "no-such-node", "--dir", into]), 4, "not_found")
      fails(yield* cli(["install", "image-tools@9.9.9", "--dir", into]), 4, "no_installable_version")
      fails(yield* cli(["install", "image-tools@", "--dir", into]), 2, "usage")
    }), slow)

  it.effect("install: an archive that is not the one the registry published is refused, and nothing is unpacked", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const into = path.join(state.scratch, "tampered")
      // the stored archive changed behind the registry's back: same length, one byte other
      const [row] = yield* query<{ id: string }>(service, "SELECT id::text FROM node_versions WHERE node_id = 'image-tools' AND version = '1.0.0'")
      const stored = path.join(service.config.storage.dir, `${row!.id}.zip`)
      const original = yield* Effect.promise(() => fs.readFile(stored))
      const tampered = Buffer.from(original)
      tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 0xff
      yield* Effect.promise(() => fs.writeFile(stored, tampered))
      const line = fails(yield* cli(["install", "image-tools@1.0.0", "--dir", into]), 6, "digest_mismatch")
      expect(line).toContain(createHash("sha256").update(original).digest("hex"))
      expect(yield* Effect.promise(() => fs.readdir(into).catch(() => []))).toEqual([])
      yield* Effect.promise(() => fs.writeFile(stored, original))
      ok(yield* cli(["install", "image-tools@1.0.0", "--dir", into]), "install of the archive as published")
    }), slow)

  it.effect("search, versions and nodes: tables, and the service's JSON with --json", () =>
    Effect.gen(function*() {
      const found = ok(yield* cli(["search", "image"]), "search")
      expect(found).toMatch(/^ID\s+VERSION\s+PUBLISHER\s+DOWNLOADS\s+DESCRIPTION$/m)
      expect(found).toMatch(/^image-tools\s+1\.0\.0\s+acme\s+\d+\s+Tools for images, from the CLI$/m)
      expect(found).toContain("page 1 of 1 (1 node)")
      const foundJson = JSON.parse(ok(yield* cli(["search", "image", "--json"]), "search --json"))
      expect(foundJson).toMatchObject({ page: 1, total: 1, nodes: [{ id: "image-tools", latest_version: { version: "1.0.0" } }] })

      const versions = ok(yield* cli(["versions", "image-tools"]), "versions")
      expect(versions).toMatch(/^1\.0\.0\s+Active\s+\d{4}-\d\d-\d\d\s+First release$/m)
      const versionsJson = JSON.parse(ok(yield* cli(["versions", "image-tools", "--json"]), "versions --json"))
      expect(versionsJson).toMatchObject([{ version: "1.0.0", status: "NodeVersionStatusActive", node_id: "image-tools", dependencies: ["pillow"] }])
      // the archive the checks refused left its version Pending
      const pending = JSON.parse(ok(yield* cli(["versions", "bomb", "--status", "Pending", "--json"]), "versions --status"))
      expect(pending).toMatchObject([{ version: "0.1.0", status: "NodeVersionStatusPending" }])

      const mine = ok(yield* cli(["nodes", "--publisher", "acme"]), "nodes --publisher")
      expect(mine).toMatch(/^image-tools\s+1\.0\.0\s+acme/m)
      // the bundle, as users run it, prints the same tables, plain on a pipe
      for (const args of [["search", "image"], ["versions", "image-tools"], ["nodes", "--publisher", "acme"]]) {
        const bundled = ok(yield* cli(args, {}, "node"), `bundled ${args.join(" ")}`)
        expect(bundled, args.join(" ")).toBe(ok(yield* cli(args), args.join(" ")))
        expect(bundled, args.join(" ")).not.toContain("\x1b")
      }
      const mineJson = JSON.parse(ok(yield* cli(["nodes", "--publisher", "acme", "--json"]), "nodes --publisher --json"))
      expect(mineJson.map((n: { id: string }) => n.id).sort()).toEqual(["bomb", "image-tools"])
      const all = JSON.parse(ok(yield* cli(["nodes", "--json"]), "nodes --json"))
      expect(all.nodes.map((n: { id: string }) => n.id)).toContain("image-tools")
    }), slow)

  it.effect("failures: a bad token (3), a closed port (7), an unknown command (2); the installed launcher runs", () =>
    Effect.gen(function*() {
      fails(yield* cli(["publisher", "create", "--id", "other"], { REGISTRY_TOKEN: "garbage" }), 3, "unauthorized")
      const closed = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const server = net.createServer().listen(0, "127.0.0.1", () => {
            const { port } = server.address() as net.AddressInfo
            server.close(() => resolve(port))
          })
        })
      )
      // the exit code of a failure, as the process ends with it
      const refused = fails(yield* cli(["search", "image"], { REGISTRY_URL: `http://127.0.0.1:${closed}` }, "node"), 7, "network_error")
      expect(refused).toContain("ECONNREFUSED")
      fails(yield* cli(["frobnicate"]), 2, "usage")
      fails(yield* cli(["search"]), 2, "usage")
      const viaBin = yield* cli(["search", "image", "--json"], {}, "bin")
      expect(JSON.parse(ok(viaBin, "bin/registry.mjs")).total).toBe(1)
      // piped: plain; FORCE_COLOR styles it unless NO_COLOR is set too (empty: unset, whatever this process has)
      const help = ok(yield* cli(["--help"], { FORCE_COLOR: "", NO_COLOR: "" }, "bin"), "--help")
      expect(help).toContain("EXIT CODES")
      expect(help).not.toContain("\x1b")
      const forced = ok(yield* cli(["--help"], { FORCE_COLOR: "1", NO_COLOR: "" }, "bin"), "FORCE_COLOR=1 --help")
      expect(forced).toContain("\x1b[")
      expect(forced.replace(/\x1b\[[0-9;]*m/g, "")).toBe(help)
      expect(ok(yield* cli(["--help"], { FORCE_COLOR: "1", NO_COLOR: "1" }, "bin"), "NO_COLOR=1 --help")).toBe(help)
    }), slow)

  it.effect("publish from a GitHub Actions job by trusted publishing; REGISTRY_PAT when the exchange is refused", () =>
    Effect.gen(function*() {
      const service = yield* Service
      yield* fakeRunner(yield* OidcIssuer)
      const alice = yield* Effect.promise(() => service.token({ sub: "alice" }))
      const registered = yield* send(service, "POST", "/publishers/acme/nodes/trusted-tools/trusted-publishers", {
        token: alice,
        body: { issuer: (yield* OidcIssuer).url, repository_owner: "acme-org", repository_name: "trusted-tools", workflow: "publish.yml" }
      })
      expect(registered.status, registered.text).toBe(201)
      const job = { ACTIONS_ID_TOKEN_REQUEST_URL: runner.url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: runner.requestToken }

      runner.repository = "acme-org/trusted-tools"
      const dir = yield* nodeRepository("trusted-tools", { "pyproject.toml": pyproject("trusted-tools", "1.0.0"), "LICENSE": "MIT\n" })
      const ran = yield* cli(["publish", dir, "--timeout", "0"], job)
      expect(ok(ran, "trusted publish")).toBe("Pending\n")
      expect(ran.stderr).toMatch(/^trusted publishing: this job may publish acme\/trusted-tools until \S+Z$/m)
      expect(runner.audiences).toEqual([audience])
      const [row] = yield* query<{ provenance: { method: string; repository: string } }>(
        service,
        "SELECT provenance FROM node_versions WHERE node_id = 'trusted-tools' AND version = '1.0.0'"
      )
      expect(row!.provenance).toMatchObject({ method: "trusted_publishing", repository: "acme-org/trusted-tools", workflow: ".github/workflows/publish.yml" })

      // a job of a repository no trusted publisher names: refused, then the personal access token
      runner.repository = "acme-org/elsewhere"
      yield* Effect.promise(() => fs.writeFile(path.join(dir, "pyproject.toml"), pyproject("trusted-tools", "1.0.1")))
      const refused = yield* cli(["publish", dir, "--timeout", "0"], job)
      fails(refused, 3, "identity_token_refused", { notes: true })
      expect(refused.stderr).not.toMatch(/eyJ/)
      const fellBack = yield* cli(["publish", dir, "--timeout", "0"], { ...job, REGISTRY_PAT: state.pat })
      expect(ok(fellBack, "fallback")).toBe("Pending\n")
      expect(fellBack.stderr).toMatch(/^trusted publishing did not work \(error: identity_token_refused: .*repository.*\): publishing with REGISTRY_PAT$/m)
    }), slow)
})
