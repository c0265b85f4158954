/**
 * A node's `pyproject.toml` as a publish request: `[project]` gives the node id, the version and
 * the packaging metadata, `[tool.registry]` what only the registry knows (docs/cli.md lists the
 * keys). The request is checked with the contract's own `PublishRequest` schema before anything
 * is sent, so a bad manifest fails here, naming its key, with the usage exit code.
 */
import { Effect, FileSystem, Result, Schema, SchemaIssue } from "effect"
import * as path from "node:path"
import { parse as parseToml, TomlError } from "smol-toml"
import { NodeId } from "../Domain/Node.ts"
import { PublishRequest } from "../Publishing/Api.ts"
import { type CliFailure, usage } from "./Failure.ts"

const Strings = Schema.Array(Schema.String)

/** `[project]`: the keys read; the others (readme, requires-python, classifiers, ...) are left alone. */
const ProjectTable = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  description: Schema.optional(Schema.String),
  license: Schema.optional(Schema.Union([
    Schema.String,
    Schema.Struct({ text: Schema.String }),
    Schema.Struct({ file: Schema.String })
  ])),
  authors: Schema.optional(Schema.Array(Schema.Struct({
    name: Schema.optional(Schema.String),
    email: Schema.optional(Schema.String)
  }))),
  dependencies: Schema.optional(Strings),
  urls: Schema.optional(Schema.Record(Schema.String, Schema.String))
})

/** `[tool.registry]`: every key known, so a misspelt one is an error rather than silently ignored. */
const RegistryTable = Schema.Struct({
  publisher_id: Schema.optional(Schema.String),
  display_name: Schema.optional(Schema.String),
  icon: Schema.optional(Schema.String),
  banner: Schema.optional(Schema.String),
  tags: Schema.optional(Strings),
  includes: Schema.optional(Strings),
  supported_os: Schema.optional(Strings),
  supported_accelerators: Schema.optional(Strings),
  supported_host_version: Schema.optional(Schema.String),
  supported_host_frontend_version: Schema.optional(Schema.String)
})

const Pyproject = Schema.Struct({
  project: ProjectTable,
  tool: Schema.optional(Schema.Struct({ registry: Schema.optional(RegistryTable) }))
})

/** Where each field of the request comes from, for messages. */
const sourceOf: Readonly<Record<string, string>> = {
  "node.id": "[project] name",
  "node.name": "[tool.registry] display_name",
  "node.description": "[project] description",
  "node.author": "[project] authors",
  "node.license": "[project] license",
  "node.icon": "[tool.registry] icon",
  "node.banner_url": "[tool.registry] banner",
  "node.repository": "[project.urls]",
  "node.tags": "[tool.registry] tags",
  "node.supported_os": "[tool.registry] supported_os",
  "node.supported_accelerators": "[tool.registry] supported_accelerators",
  "node.supported_host_version": "[tool.registry] supported_host_version",
  "node.supported_host_frontend_version": "[tool.registry] supported_host_frontend_version",
  "node_version.version": "[project] version",
  "node_version.changelog": "--changelog",
  "node_version.dependencies": "[project] dependencies",
  "node_version.tags": "[tool.registry] tags",
  "node_version.supported_os": "[tool.registry] supported_os",
  "node_version.supported_accelerators": "[tool.registry] supported_accelerators",
  "node_version.supported_host_version": "[tool.registry] supported_host_version",
  "node_version.supported_host_frontend_version": "[tool.registry] supported_host_frontend_version"
}

export interface Manifest {
  readonly publisherId: string
  readonly nodeId: string
  readonly version: string
  /** Paths or globs added to the archive even when git does not track them. */
  readonly includes: ReadonlyArray<string>
  /** The publish request as sent (without the token), checked against the contract. */
  readonly request: typeof PublishRequest.Encoded
  /** The same, decoded: what the typed client takes. */
  readonly payload: typeof PublishRequest.Type
}

export interface ManifestOptions {
  /** Overrides `[tool.registry] publisher_id`. */
  readonly publisherId?: string | undefined
  readonly changelog?: string | undefined
}

const bad = (message: string) => usage("bad_manifest", message)

/** A schema failure's issues with their paths; a missing key's message is `is missing`. */
const issuesOf = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) => issue._tag === "MissingKey" ? "is missing" : SchemaIssue.defaultLeafHook(issue)
})

/** The first issue of a schema failure, as `<where>: <message>` (long values cut short). */
const firstIssue = (error: Schema.SchemaError, describe: (path: ReadonlyArray<string>) => string): string => {
  const issue = issuesOf(error.issue).issues[0]
  if (issue === undefined) return error.message
  const message = issue.message.length > 200 ? `${issue.message.slice(0, 200)}...` : issue.message
  const where = describe((issue.path ?? []).map(String))
  return message === "is missing" ? `${where} is missing` : `${where}: ${message}`
}

/** A path into the TOML document as its table and key: `[tool.registry] tags`. */
const tomlKey = (at: ReadonlyArray<string>): string => {
  const tableLength = at[0] === "tool" ? Math.min(2, at.length) : at[0] === "project" && at[1] === "urls" ? 2 : 1
  const table = `[${at.slice(0, tableLength).join(".")}]`
  const key = at.slice(tableLength).join(".")
  return key === "" ? table : `${table} ${key}`
}

/** The repository URL among `[project.urls]`, by the names packaging tools use for it. */
const repositoryOf = (urls: Readonly<Record<string, string>> | undefined): string | undefined => {
  if (urls === undefined) return undefined
  const byName = new Map(Object.entries(urls).map(([k, v]) => [k.toLowerCase().replace(/[\s_-]/g, ""), v]))
  for (const name of ["repository", "source", "sourcecode", "code", "homepage"]) {
    const url = byName.get(name)
    if (url !== undefined) return url
  }
  return undefined
}

/** A safe relative path or glob inside the node's directory. */
const checkInclude = (include: string): string | undefined =>
  include.trim() === ""
    ? "an include is empty"
    : path.isAbsolute(include) || /^[A-Za-z]:/.test(include)
    ? `include ${include} is absolute: includes are relative to the node's directory`
    : include.split(/[\\/]/).includes("..")
    ? `include ${include} leaves the node's directory`
    : undefined

/** Drops the keys whose value is undefined (the request's optional fields are absent, never undefined). */
const defined = <A extends Record<string, unknown>>(record: A): Defined<A> =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Defined<A>

type Defined<A> =
  & { [K in keyof A as undefined extends A[K] ? never : K]: A[K] }
  & { [K in keyof A as undefined extends A[K] ? K : never]?: Exclude<A[K], undefined> }

/** The manifest in a `pyproject.toml`'s text. */
export const parseManifest = (text: string, options: ManifestOptions = {}): Result.Result<Manifest, CliFailure> => {
  let toml: unknown
  try {
    toml = parseToml(text)
  } catch (e) {
    const where = e instanceof TomlError ? ` at line ${e.line}, column ${e.column}` : ""
    const message = e instanceof Error ? e.message.split("\n")[0] : String(e)
    return Result.fail(bad(`pyproject.toml is not valid TOML${where}: ${message}`))
  }
  const decoded = Schema.decodeUnknownResult(Pyproject, { onExcessProperty: "ignore" })(toml)
  if (Result.isFailure(decoded)) {
    return Result.fail(bad(`pyproject.toml: ${firstIssue(decoded.failure, tomlKey)}`))
  }
  // unknown keys of [tool.registry] are refused: a typo would otherwise be dropped without a word
  const registryRaw = (toml as { tool?: { registry?: unknown } }).tool?.registry
  const unknownKeys = typeof registryRaw === "object" && registryRaw !== null
    ? Object.keys(registryRaw).filter((k) => !(k in RegistryTable.fields))
    : []
  if (unknownKeys.length > 0) {
    return Result.fail(bad(`pyproject.toml: [tool.registry] has unknown key ${unknownKeys[0]} (known: ${Object.keys(RegistryTable.fields).join(", ")})`))
  }
  const { project, tool } = decoded.success
  const registry = tool?.registry ?? {}
  const publisherId = options.publisherId ?? registry.publisher_id
  if (publisherId === undefined || publisherId.trim() === "") {
    return Result.fail(bad("pyproject.toml: [tool.registry] publisher_id is missing (or pass --publisher)"))
  }
  const includes = registry.includes ?? []
  for (const include of includes) {
    const problem = checkInclude(include)
    if (problem !== undefined) return Result.fail(bad(`pyproject.toml: [tool.registry] includes: ${problem}`))
  }
  const license = project.license === undefined
    ? undefined
    : typeof project.license === "string"
    ? project.license
    : "text" in project.license
    ? project.license.text
    : project.license.file
  const authors = (project.authors ?? []).map((a) => a.name ?? a.email).filter((a): a is string => a !== undefined)
  const platform = defined({
    supported_os: registry.supported_os,
    supported_accelerators: registry.supported_accelerators,
    supported_host_version: registry.supported_host_version,
    supported_host_frontend_version: registry.supported_host_frontend_version,
    tags: registry.tags
  })
  const request: typeof PublishRequest.Encoded = {
    node: defined({
      id: project.name,
      name: registry.display_name,
      description: project.description,
      author: authors.length === 0 ? undefined : authors.join(", "),
      license,
      icon: registry.icon,
      banner_url: registry.banner,
      repository: repositoryOf(project.urls),
      ...platform
    }),
    node_version: defined({
      version: project.version,
      changelog: options.changelog,
      dependencies: project.dependencies,
      ...platform
    })
  }
  const checked = Schema.decodeUnknownResult(PublishRequest, { onExcessProperty: "error" })(request)
  if (Result.isFailure(checked)) {
    return Result.fail(bad(`pyproject.toml: ${firstIssue(checked.failure, (at) => sourceOf[at.join(".")] ?? at.join("."))}`))
  }
  const nodeId = Schema.decodeUnknownResult(NodeId)(project.name)
  if (Result.isFailure(nodeId)) {
    return Result.fail(bad(`pyproject.toml: ${firstIssue(nodeId.failure, () => "[project] name")}`))
  }
  return Result.succeed({ publisherId, nodeId: project.name, version: project.version, includes, request, payload: checked.success })
}

/** The manifest of the node in `dir`. */
export const readManifest = (dir: string, options: ManifestOptions = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = path.join(dir, "pyproject.toml")
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((e) =>
        e.reason._tag === "NotFound"
          ? bad(`${file} does not exist: a node is described by its pyproject.toml`)
          : bad(`cannot read ${file}: ${e.message}`)
      )
    )
    return yield* Effect.fromResult(parseManifest(text, options))
  })
