/**
 * HTTP/1.1 by hand over a loopback socket, for the requests `fetch` refuses to send (bytes a URL
 * may not hold, header values outside Latin-1, oversized request lines). Check the answers with
 * `Http.ts` (`parseJson`, `expectErrorBody`).
 */
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"

export interface RawResponse {
  readonly status: number
  /** Header names lower-cased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** Reassembles a `Transfer-Encoding: chunked` body. */
const dechunk = (raw: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  let at = 0
  for (;;) {
    const lineEnd = raw.indexOf("\r\n", at)
    if (lineEnd < 0) break
    const size = parseInt(raw.subarray(at, lineEnd).toString("latin1").split(";")[0]!.trim(), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
  return Buffer.concat(parts)
}

const parseResponse = (raw: Buffer): RawResponse => {
  const headEnd = raw.indexOf("\r\n\r\n")
  if (headEnd < 0) throw new Error(`no complete response head in ${JSON.stringify(raw.toString("latin1").slice(0, 200))}`)
  const [statusLine = "", ...headerLines] = raw.subarray(0, headEnd).toString("latin1").split("\r\n")
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
  if (!match) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`)
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const colon = line.indexOf(":")
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  let body = raw.subarray(headEnd + 4)
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) body = dechunk(body)
  else if (headers["content-length"] !== undefined) body = body.subarray(0, Number(headers["content-length"]))
  return { status: Number(match[1]), headers, body: body.toString("utf8") }
}

/**
 * Connects, lets `talk` write to the socket, and reads the answer until the server closes the
 * connection (or `timeoutMillis` passes: a rejection).
 */
const exchange = (baseUrl: string, talk: (socket: net.Socket) => void, timeoutMillis: number): Promise<RawResponse> => {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    const socket = net.connect({ host: hostname, port: Number(port) })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete answer within ${timeoutMillis} ms`))
    }, timeoutMillis)
    const finish = () => {
      clearTimeout(timer)
      try {
        resolve(parseResponse(Buffer.concat(chunks)))
      } catch (e) {
        reject(e)
      }
    }
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("end", finish)
    // the server may close while we still write (an oversized request): what it answered counts
    socket.on("error", (e) => chunks.length > 0 ? finish() : (clearTimeout(timer), reject(e)))
    socket.on("connect", () => talk(socket))
  })
}

/**
 * Writes `request` (the whole request, bytes as given) to the service and reads the answer until
 * the server closes the connection: send `Connection: close`, or a request the server refuses.
 */
export const rawRequestPromise = (baseUrl: string, request: Buffer | string, timeoutMillis = 10_000): Promise<RawResponse> =>
  exchange(baseUrl, (socket) => socket.write(typeof request === "string" ? Buffer.from(request, "latin1") : request), timeoutMillis)

/**
 * A slow client: writes `head` at once, then each of `pieces` `everyMillis` apart, and reads the
 * answer as `rawRequestPromise` does.
 */
export const slowRequestPromise = (
  baseUrl: string,
  head: string,
  pieces: ReadonlyArray<Buffer | string>,
  everyMillis: number,
  timeoutMillis = 30_000
): Promise<RawResponse> =>
  exchange(baseUrl, (socket) => {
    socket.write(Buffer.from(head, "latin1"))
    let next = 0
    const timer = setInterval(() => {
      const piece = pieces[next++]
      if (piece === undefined || socket.destroyed) return clearInterval(timer)
      socket.write(typeof piece === "string" ? Buffer.from(piece, "latin1") : piece)
    }, everyMillis)
    socket.on("close", () => clearInterval(timer))
  }, timeoutMillis)

/**
 * How long the server takes to close a connection on which `talk` writes (it may write nothing):
 * the milliseconds from connecting to the close, or a rejection after `timeoutMillis`.
 */
export const closedAfterPromise = (baseUrl: string, talk: (socket: net.Socket) => void, timeoutMillis = 30_000): Promise<number> => {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = net.connect({ host: hostname, port: Number(port) })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`still open after ${timeoutMillis} ms`))
    }, timeoutMillis)
    socket.on("data", () => {})
    socket.on("error", () => {})
    socket.on("close", () => {
      clearTimeout(timer)
      resolve(Date.now() - started)
    })
    socket.on("connect", () => talk(socket))
  })
}

export const rawRequest = (baseUrl: string, request: Buffer | string) =>
  Effect.promise(() => rawRequestPromise(baseUrl, request))

/** `GET <target>` with the given extra header lines (raw bytes), closing the connection after. */
export const rawGet = (baseUrl: string, target: Buffer | string, headerLines: ReadonlyArray<Buffer | string> = []) => {
  const bytes = (b: Buffer | string) => typeof b === "string" ? Buffer.from(b, "latin1") : b
  return rawRequest(
    baseUrl,
    Buffer.concat([
      Buffer.from("GET "),
      bytes(target),
      Buffer.from(" HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
      ...headerLines.flatMap((line) => [bytes(line), Buffer.from("\r\n")]),
      Buffer.from("Connection: close\r\n\r\n")
    ])
  )
}


/** An answer as it was sent: its body's bytes not decoded. */
export interface AnswerAsSent {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly bytes: Buffer
}

/**
 * One request whose answer is read as sent (Content-Encoding, ranges): `fetch` would decode the
 * body and send its own Accept-Encoding.
 */
export const requestAsSent = (service: { readonly baseUrl: string }, path: string, headers: Record<string, string> = {}, method = "GET") =>
  Effect.promise(() =>
    new Promise<AnswerAsSent>((resolve, reject) => {
      const request = http.request(`${service.baseUrl}${path}`, { method, headers }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes: Buffer.concat(chunks) }))
        response.on("error", reject)
      })
      request.on("error", reject)
      request.end()
    })
  )
