/**
 * `node --import tsx bench/s3rver.ts <bucket>`: s3rver on a free loopback port with one empty
 * bucket, its objects in a temporary folder, in a process of its own, so that its CPU is neither
 * the service's nor the benchmark's. Prints one JSON line `{"endpoint": ..., "directory": ...}`
 * on stdout once it listens; on SIGTERM or SIGINT it stops and removes the folder.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import S3rver from "s3rver"

const bucket = process.argv[2] ?? "bench"
/**
 * In memory (/dev/shm) where there is one: s3rver stands for a store on other machines, and on the
 * disk of the service's PostgreSQL its writes (200 MiB per upload: the parts, the object they make,
 * its copy) delayed the upload's commit by about 110 ms, as the commit's fsync wrote them out.
 */
const parent = await fs.access("/dev/shm", fs.constants.W_OK).then(() => "/dev/shm", () => os.tmpdir())
const directory = await fs.mkdtemp(path.join(parent, "bench-s3rver-"))
const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] })
const { port } = await server.run()

const stop = async () => {
  await server.close()
  await fs.rm(directory, { recursive: true, force: true })
  process.exit(0)
}
process.once("SIGTERM", () => void stop())
process.once("SIGINT", () => void stop())

console.log(JSON.stringify({ endpoint: `http://127.0.0.1:${port}`, directory }))
