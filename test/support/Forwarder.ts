/**
 * A TCP forwarder on a loopback port of its own: its URL is known before the service starts, so
 * it can be the service's PUBLIC_BASE_URL and the absolute URLs the service hands out open as
 * they are. Connections go to `target.port`, set once the service listens.
 */
import { Effect } from "effect"
import * as net from "node:net"

export const tcpForwarder = Effect.acquireRelease(
  Effect.callback<{
    readonly url: string
    readonly port: number
    readonly target: { port: number }
    readonly close: { readonly server: net.Server; readonly sockets: Set<net.Socket> }
  }>((resume) => {
    const target = { port: 0 }
    const sockets = new Set<net.Socket>()
    const server = net.createServer((socket) => {
      const upstream = net.connect(target.port, "127.0.0.1")
      for (const s of [socket, upstream]) {
        sockets.add(s)
        s.on("close", () => sockets.delete(s))
      }
      socket.pipe(upstream).pipe(socket)
      socket.on("error", () => upstream.destroy())
      upstream.on("error", () => socket.destroy())
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, port, target, close: { server, sockets } }))
    })
  }),
  ({ close: { server, sockets } }) =>
    Effect.callback<void>((resume) => {
      for (const s of sockets) s.destroy()
      server.close(() => resume(Effect.void))
    })
)
