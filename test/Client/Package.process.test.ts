/**
 * The client as its users get it: `npm pack` of packages/client (the command of docs/client.md),
 * installed with Effect into a fresh project, the first program of docs/client.md compiled there
 * with `tsc` (strict, NodeNext) and run by plain `node` against the service, which keeps its
 * archives in an object store (s3rver on loopback), so that the download follows the registry's
 * redirect to the bucket. The tarball holds only compiled JavaScript, declarations, package.json
 * and README, and the project's runtime dependencies are the client and Effect alone.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../../src/Db/Embedded.ts"
import { makePublisher } from "../Publishing/Flow.ts"
import { startObjectStore } from "../support/ObjectStore.ts"
import { tempDir } from "../support/TempDir.ts"
import { freshDatabase, startService } from "../support/Service.ts"
import { zipOf } from "../support/Zip.ts"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const tsc = path.join(root, "node_modules/typescript7/bin/tsc")
const effectVersion: string = JSON.parse(await fs.readFile(path.join(root, "node_modules/effect/package.json"), "utf8")).version
const nodeTypesVersion: string = JSON.parse(await fs.readFile(path.join(root, "node_modules/@types/node/package.json"), "utf8")).version

/** `command args` in `cwd`: its standard output; a failure carries its standard error. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.callback<string, Error>((resume) => {
    execFile(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resume(error === null ? Effect.succeed(stdout) : Effect.fail(new Error(`${command} ${args.join(" ")}: ${error.message}\n${stdout}\n${stderr}`))))
  })

/** The code block of docs/client.md that follows `heading` (a line of the page). */
const blockAfter = (page: string, heading: string, language: string) => {
  const at = page.indexOf(`${heading}\n`)
  const block = new RegExp("^```" + language + "\n([\\s\\S]*?)\n```", "m").exec(page.slice(at))
  if (at < 0 || block === null) throw new Error(`docs/client.md has no ${language} block after "${heading}"`)
  return block[1]!
}

it.live("packed, installed in a fresh project, compiled with tsc --strict and run with node against the service", () =>
  Effect.gen(function*() {
    const project = yield* tempDir("registry-client-project-")

    // the tarball, as docs/client.md makes it
    const [packed] = JSON.parse(yield* run("npm", ["pack", "--workspace", "packages/client", "--pack-destination", project, "--json"], root)) as Array<
      { readonly filename: string; readonly files: ReadonlyArray<{ readonly path: string }> }
    >
    const files = packed!.files.map((f) => f.path).sort()
    expect(files).toContain("dist/client.js")
    expect(files).toContain("dist/client.d.ts")
    expect(files.filter((f) => !/^dist\/.+\.(js|d\.ts)$/.test(f))).toEqual(["README.md", "package.json"])
    // the bundle imports Effect and Node's built-ins, nothing else
    const bundle = yield* Effect.promise(() => fs.readFile(path.join(root, "packages/client/dist/client.js"), "utf8"))
    const imported = new Set([...bundle.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"/gm)].map((m) => m[1]!))
    expect(imported).toContain("effect")
    expect([...imported].filter((specifier) => !/^(effect(\/.*)?|node:.*)$/.test(specifier))).toEqual([])

    // a fresh ES module project: the client and Effect to run, Node's types to compile
    yield* Effect.promise(() =>
      fs.writeFile(
        path.join(project, "package.json"),
        JSON.stringify({
          name: "client-user",
          private: true,
          type: "module",
          dependencies: { "@node-registry/client": `file:./${packed!.filename}`, effect: effectVersion },
          devDependencies: { "@types/node": nodeTypesVersion }
        })
      )
    )
    yield* run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], project)
    const tree = JSON.parse(yield* run("npm", ["ls", "--omit=dev", "--all", "--json"], project)) as {
      readonly dependencies: Record<string, { readonly dependencies?: Record<string, unknown> }>
    }
    expect(Object.keys(tree.dependencies).sort()).toEqual(["@node-registry/client", "effect"])
    expect(Object.keys(tree.dependencies["@node-registry/client"]!.dependencies ?? {}).filter((name) => name !== "effect")).toEqual([])

    // the page's program, compiled with the page's tsconfig (strict, NodeNext)
    const page = yield* Effect.promise(() => fs.readFile(path.join(root, "docs/client.md"), "utf8"))
    const tsconfig = blockAfter(page, "A `tsconfig.json` that checks the example below:", "json")
    expect(JSON.parse(tsconfig).compilerOptions).toMatchObject({ strict: true, module: "NodeNext" })
    yield* Effect.promise(() => fs.writeFile(path.join(project, "tsconfig.json"), tsconfig))
    yield* Effect.promise(() => fs.writeFile(path.join(project, "main.ts"), blockAfter(page, "<!-- client-example: main.ts -->", "ts")))
    yield* run(process.execPath, [tsc, "-p", "."], project)

    // the service, its archives in a bucket, its public base URL its own address
    const store = yield* startObjectStore()
    const { url } = yield* freshDatabase
    // free now, so that the service's public base URL can name it before it listens
    const port = yield* Effect.promise(freePort)
    const service = yield* startService(url, (c) => ({
      ...c,
      port,
      publicBaseUrl: `http://127.0.0.1:${port}`,
      storage: { ...c.storage, backend: { _tag: "s3", ...store.settings } }
    }))
    const acme = yield* makePublisher(service, "acme")
    const archive = yield* Effect.promise(() => zipOf({ "image_tools/__init__.py": "NODES = {}\n", "README.md": "# Image tools\n".repeat(200) }))
    yield* Effect.promise(() => fs.writeFile(path.join(project, "image-tools.zip"), archive))

    const printed = yield* run(process.execPath, ["out/main.js", "acme", "image-tools", "image-tools.zip"], project, {
      ...process.env,
      REGISTRY_URL: service.baseUrl,
      REGISTRY_PAT: acme.pat
    })
    expect(printed.trim().split("\n")).toEqual([
      "uploaded image-tools 1.0.0",
      "listed image-tools",
      "got image-tools: Tools for images, latest 1.0.0",
      "not found: No node 'no-such-node'",
      `downloaded 1.0.0: ${archive.length} of ${archive.length} bytes`
    ])

    // what the program downloaded came through the registry's redirect to the bucket
    const redirect = yield* Effect.promise(() => service.fetch("/archives/image-tools/1.0.0", { redirect: "manual" }))
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get("location")).toMatch(new RegExp(`^${store.endpoint}/`))
  }), { timeout: 300_000 })
