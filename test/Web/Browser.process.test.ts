/**
 * A real browser against the service (headless Chromium, Debian's package at /usr/bin/chromium):
 * - a page served from another origin (a second loopback server) calls the API with `fetch`, a
 *   bearer token and a JSON body, as the registry's web front-end does (registry-web: axios on
 *   `NEXT_PUBLIC_BACKEND_URL`, src/api/mutator/axios-instance.ts, with `Authorization: Bearer`
 *   from an interceptor in pages/_app.tsx and no credentials mode): the browser preflights
 *   the request, sends it, and lets the page read the answer and its exposed ETag; the same page
 *   served from an origin CORS_ORIGINS does not list is refused by the browser and nothing is
 *   written.
 * `/docs` under its content security policy is checked in test/Web/DocsPage.process.test.ts, on
 * the page load that serves its other checks.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { closeServer } from "../support/Loopback.ts"
import { chromiumArgs, chromiumFound, chromiumPath, chromiumSkipReason } from "../support/Chromium.ts"
import { Service } from "../support/Service.ts"

const skipReason = `${chromiumSkipReason}: browser tests skipped`
if (!chromiumFound) console.warn(skipReason)

/** The front-end's page: it calls the API the way a web client does, bearer token and JSON body. */
const frontEnd = `<!doctype html>
<html><head><meta charset="utf-8"><title>front-end</title></head>
<body><script>
async function callApi(api, token, method, path, body) {
  try {
    const response = await fetch(api + path, {
      method,
      headers: { authorization: "Bearer " + token, ...(body == null ? {} : { "content-type": "application/json" }) },
      body: body == null ? undefined : JSON.stringify(body)
    })
    return { status: response.status, body: await response.json(), etag: response.headers.get("etag") }
  } catch (e) {
    return { failed: String(e) }
  }
}
</script></body></html>`

/** A loopback server of the front-end page: an origin of its own. */
const pageServer = Effect.acquireRelease(
  Effect.callback<http.Server>((resume) => {
    const server = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      response.end(frontEnd)
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.promise(() => closeServer(server))
)

const originOf = (server: http.Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`

/** Two front-end origins, the first of them allowed by the service's CORS_ORIGINS. */
class FrontEnds extends Context.Service<FrontEnds, { readonly allowed: string; readonly refused: string }>()("test/FrontEnds") {}

const TestLayers = Layer.unwrap(Effect.gen(function*() {
  const allowed = originOf(yield* pageServer)
  const refused = originOf(yield* pageServer)
  return Layer.mergeAll(
    Service.layer((c) => ({ ...c, corsOrigins: new Set([allowed]) })),
    Layer.succeed(FrontEnds, { allowed, refused }),
    BrowserLive
  )
}))

const launch = Effect.acquireRelease(
  Effect.promise(async () => {
    const userDataDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "chromium-profile-"))
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: chromiumPath,
      headless: true,
      args: [...chromiumArgs]
    })
    return { context, userDataDir }
  }),
  ({ context, userDataDir }) =>
    Effect.promise(async () => {
      await context.close()
      await fs.promises.rm(userDataDir, { recursive: true, force: true })
    })
)

interface Called {
  readonly status?: number
  readonly body?: Record<string, unknown>
  readonly etag?: string | null
  readonly failed?: string
}

/** Calls the API from the page, through the page's own `callApi`. */
const callFrom = (page: Page, api: string, token: string, method: string, path: string, body?: unknown) =>
  Effect.promise(() => page.evaluate(`callApi(${JSON.stringify([api, token, method, path, body]).slice(1, -1)})`) as Promise<Called>)

/** What the console and the page reported. */
const watch = (page: Page) => {
  const messages: Array<string> = []
  page.on("console", (message) => messages.push(`${message.type()}: ${message.text()}`))
  page.on("pageerror", (error) => messages.push(`pageerror: ${String(error)}`))
  return { messages }
}

/** One Chromium for the file (a launch costs about a second of CPU), or none where it is missing. */
class Browser extends Context.Service<Browser, { readonly context: BrowserContext | undefined }>()("test/Browser") {}

const BrowserLive = Layer.effect(Browser, chromiumFound ? Effect.map(launch, ({ context }) => ({ context })) : Effect.succeed({ context: undefined }))

/** A page of its own for a test, closed with it. */
const openPage = Effect.gen(function*() {
  const { context } = yield* Browser
  if (context === undefined) return yield* Effect.die(new Error(skipReason))
  return yield* Effect.acquireRelease(Effect.promise(() => context.newPage()), (page) => Effect.promise(() => page.close()))
})

layer(TestLayers, { excludeTestServices: true })("in Chromium", (it) => {
  it.effect.skipIf(!chromiumFound && process.env.CI === undefined)(
    chromiumFound ? "a page on an allowed origin creates a publisher with fetch and a bearer token, and reads an exposed ETag" : skipReason,
    () =>
      Effect.gen(function*() {
        const service = yield* Service
        const { allowed } = yield* FrontEnds
        const token = yield* Effect.promise(() => service.token({ sub: "front-end-user" }))
        const page = yield* openPage
        const seen = watch(page)
        yield* Effect.promise(() => page.goto(`${allowed}/`))
        const created = yield* callFrom(page, service.baseUrl, token, "POST", "/publishers", { id: "from-browser", name: "From a browser" })
        expect(created.failed).toBeUndefined()
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ id: "from-browser", name: "From a browser" })
        // an error is readable too: the page sees the ErrorResponse, not an opaque failure
        const conflict = yield* callFrom(page, service.baseUrl, token, "POST", "/publishers", { id: "from-browser", name: "Again" })
        expect(conflict.status).toBe(409)
        expect(conflict.body).toMatchObject({ error: expect.any(String), message: expect.any(String) })
        // and an exposed header: an ETag (weak: Chromium takes the document compressed)
        const docs = yield* callFrom(page, service.baseUrl, token, "GET", "/openapi.json")
        expect(docs.status).toBe(200)
        expect(docs.etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/)
        expect(seen.messages.filter((line) => /CORS|blocked/i.test(line))).toEqual([])
      }),
    60_000
  )

  it.effect.skipIf(!chromiumFound && process.env.CI === undefined)(
    chromiumFound ? "the same page on an origin CORS_ORIGINS does not list is refused by the browser, and nothing is written" : skipReason,
    () =>
      Effect.gen(function*() {
        const service = yield* Service
        const { refused } = yield* FrontEnds
        const token = yield* Effect.promise(() => service.token({ sub: "front-end-user" }))
        const page = yield* openPage
        const seen = watch(page)
        yield* Effect.promise(() => page.goto(`${refused}/`))
        const attempt = yield* callFrom(page, service.baseUrl, token, "POST", "/publishers", { id: "not-from-here", name: "No" })
        expect(attempt.status).toBeUndefined()
        expect(attempt.failed).toMatch(/TypeError: Failed to fetch/)
        expect(seen.messages.some((line) => /CORS policy/.test(line))).toBe(true)
        // its preflight refused, the POST itself never reached the service
        const stored = yield* Effect.promise(() => service.fetch("/publishers/not-from-here"))
        expect(stored.status).toBe(404)
        // a read is refused as well: with a token it too asks first, and gets no CORS headers
        const read = yield* callFrom(page, service.baseUrl, token, "GET", "/openapi.json")
        expect(read.failed).toMatch(/TypeError: Failed to fetch/)
      }),
    60_000
  )
})
