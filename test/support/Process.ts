/**
 * The service in a process of its own, as `npm start` runs it (`node dist/main.js`, compiled once
 * per test run by globalSetup.ts), for the tests of what only a process shows: start-up on existing data, signals, crashes and
 * outages. Ready when `/ready` answers 200.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../../src/Db/Embedded.ts"

/** The repository: the command's relative paths (`dist/main.js`, npm's package.json) are from here. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly port: number
  readonly baseUrl: string
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string
  /** What it wrote to stdout alone (where its log lines go). */
  readonly stdout: () => string
}

export interface SpawnOptions {
  /** Over this process's environment; an `undefined` value removes the variable. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** The command; the service itself when not given. */
  readonly command?: ReadonlyArray<string>
  /** In a process group of its own, as a terminal's job or a container's processes are. */
  readonly detached?: boolean
  readonly readyWithinMillis?: number
}

/**
 * The options node runs the service with under `npm start`, read from package.json's `start`
 * (`... && exec node <options> dist/main.js`), so that tests and benchmarks run what it runs.
 */
export const serviceNodeOptions: ReadonlyArray<string> = (() => {
  const start = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start
  const command = /exec node((?: --\S+)*) dist\/main\.js$/.exec(start)
  if (command === null) throw new Error(`package.json's start does not end in "exec node [options] dist/main.js": ${start}`)
  return command[1]!.split(" ").filter((option) => option !== "")
})()

export const serviceCommand = [process.execPath, ...serviceNodeOptions, "dist/main.js"] as const

const statusOf = (url: string) => fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0)

/** Starts the service on a free port of loopback, logging at warn; kills it if it never gets ready. */
export const spawnService = async (options: SpawnOptions = {}): Promise<ServiceProcess> => {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    // the tests' load comes from 127.0.0.1, past a minute's anonymous reads (the outage test's
    // readers); a test of the limit sets its own
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: "0"
  }
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  const [file, ...args] = options.command ?? serviceCommand
  const child = spawn(file!, args, { cwd: root, env, detached: options.detached ?? false, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  let stdout = ""
  child.stdout!.on("data", (d) => {
    output += d
    stdout += d
  })
  child.stderr!.on("data", (d) => (output += d))
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (options.readyWithinMillis ?? 90_000)
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}): ${output}`)
    if ((await statusOf(`${baseUrl}/ready`)) === 200) return { child, port, baseUrl, output: () => output, stdout: () => stdout }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  if (options.detached === true) process.kill(-child.pid!, "SIGKILL")
  else child.kill("SIGKILL")
  throw new Error(`the service did not become ready: ${output}`)
}
