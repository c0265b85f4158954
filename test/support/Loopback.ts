import type * as http from "node:http"

/** Stops a fake server at once: requests left hanging on purpose would keep close() waiting forever. */
export const closeServer = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })
