/**
 * A relay with nothing of the service in it: the music bench's yardstick for what any proxy can
 * reach on this machine (bench/music-proxy.ts). Started as a child process,
 * `node bench/bare-relay.ts <pipe|spool> <vendor port> <spool folder>`, it sends its port to its
 * parent and relays every POST to the vendor at the same path, the vendor's answer piped back:
 * - `pipe` passes the request body on as it arrives (what a proxy that checks nothing does);
 * - `spool` writes the body to a file first, then sends the file (what a proxy that must check
 *   the whole upload before the vendor sees any of it does, as the service does).
 * Node runs it as it is (type stripping): no build, no dependency.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { pipeline } from "node:stream/promises"

const [mode, vendorPort, folder] = process.argv.slice(2)
let uploads = 0

const relay = async (req: http.IncomingMessage, res: http.ServerResponse) => {
  const headers = { ...req.headers, host: `127.0.0.1:${vendorPort}` }
  const forward = http.request({ host: "127.0.0.1", port: Number(vendorPort), method: "POST", path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers)
    answer.pipe(res)
  })
  if (mode === "pipe") return pipeline(req, forward)
  const file = path.join(folder!, `upload-${process.pid}-${uploads++}`)
  try {
    await pipeline(req, fs.createWriteStream(file, { highWaterMark: 1024 * 1024 }))
    await pipeline(fs.createReadStream(file, { highWaterMark: 1024 * 1024 }), forward)
  } finally {
    await fs.promises.rm(file, { force: true })
  }
}

const server = http.createServer((req, res) => void relay(req, res).catch(() => res.destroy()))
server.listen(0, "127.0.0.1", () => process.send!((server.address() as AddressInfo).port))
process.on("disconnect", () => process.exit(0))
