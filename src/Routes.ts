/**
 * The declared routes, for the edge: which methods a path answers (a path known under another
 * method is a 405), and which route pattern a request matched (logs and metrics name routes, not
 * URLs, so that ids do not multiply their series).
 */
import { Api } from "./Api.ts"

interface Route {
  readonly method: string
  readonly path: string
  readonly pattern: RegExp
}

const routes: ReadonlyArray<Route> = [
  ...Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, path: endpoint.path }))
  ),
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" }
].map(({ method, path }) => ({ method, path, pattern: new RegExp(`^${path.replace(/:[^/]+/g, "[^/]+")}/?$`) }))

/** The methods declared for `path` (no query). */
export const allowedMethods = (path: string) => [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]

/**
 * The declared pattern (`/nodes/:nodeId`) that `method` and `path` (no query) match; a HEAD is
 * answered by its GET route; `undefined` for a path no route declares.
 */
export const routeOf = (method: string, path: string): string | undefined => {
  const wanted = method === "HEAD" ? "GET" : method
  return routes.find((r) => r.method === wanted && r.pattern.test(path))?.path
}
