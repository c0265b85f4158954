/**
 * `/docs` in headless Chromium with the network closed: the reference draws from its embedded
 * script under the page's content security policy, and its "Test Request" reaches the host the
 * page was opened on. In the process tier: Chromium is a process of its own, and the page costs
 * seconds of its CPU to draw. The document itself is checked in test/Docs.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chromium, type Page } from "playwright-core"
import { ListNodesParams } from "../../src/Catalog/Api.ts"
import { chromiumArgs, chromiumFound, chromiumPath, chromiumSkipReason } from "../support/Chromium.ts"
import { getOpenApi } from "../support/Http.ts"
import { Service } from "../support/Service.ts"

type Json = Record<string, any>

const inCi = Boolean(process.env.CI)
const browserSkipReason = chromiumSkipReason
if (!chromiumFound) {
  console.warn(inCi ? `CI: ${browserSkipReason} - the browser test fails` : `skipping the /docs browser test: ${browserSkipReason}`)
}

/** Headless Chromium for the scope: a test that needs it fails in CI without it (.ci/run installs it). */
const launchedBrowser = Effect.gen(function*() {
  if (!chromiumFound) return yield* Effect.die(new Error(`CI is set and ${browserSkipReason}; .ci/run must install it`))
  return yield* Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath: chromiumPath, args: [...chromiumArgs] })),
    (b) => Effect.promise(() => b.close())
  )
})

/** The title of a browser test, saying why where it cannot run. */
const browserTitle = (title: string) => chromiumFound ? title : `${title} (${inCi ? "fails in CI" : "skipped"}: ${browserSkipReason})`

/** The network closed to `page`: only `origin` answers; what else it asked for goes to `refused`. */
const closedNetwork = (page: Page, origin: string, refused: Array<string> = []) =>
  Effect.promise(() =>
    page.route("**/*", (route) => {
      const url = route.request().url()
      if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue()
      refused.push(url)
      return route.abort("internetdisconnected")
    })
  )

/** How long the reference may take to show something. */
const visible = { state: "visible", timeout: 30_000 } as const

layer(Service.layer(), { excludeTestServices: true })("the /docs page", (it) => {
  // One test, two page loads: the reference costs seconds of CPU to draw, so the page opened at
  // 127.0.0.1 serves the render checks, the content security policy checks and Test Request there,
  // and a second one Test Request at localhost.
  it.effect.skipIf(!chromiumFound && !inCi)(
    browserTitle(
      "GET /docs renders the API reference in headless Chromium with the network closed, under its content security policy " +
        "(nothing in the console, nothing refused but an eval probe), and Test Request answers 200 whether the page was opened at 127.0.0.1 or at localhost"
    ),
    () =>
      Effect.gen(function*() {
        const browser = yield* launchedBrowser
        const service = yield* Service
        const { spec } = yield* getOpenApi(service)
        // /openapi.json names the public URL for tools elsewhere, which is neither of the hosts below
        expect(spec.servers).toEqual([{ url: service.config.publicBaseUrl, description: expect.any(String) }])
        expect(service.config.publicBaseUrl).toBe("http://127.0.0.1")
        expect(new URL(service.baseUrl).hostname).toBe("127.0.0.1")
        const port = new URL(service.baseUrl).port
        for (const host of ["127.0.0.1", "localhost"]) {
          const origin = `http://${host}:${port}`
          const page = yield* Effect.promise(() => browser.newPage())
          const blocked: Array<string> = []
          const pageErrors: Array<string> = []
          page.on("pageerror", (e) => pageErrors.push(String(e)))
          const messages: Array<string> = []
          page.on("console", (message) => messages.push(`${message.type()}: ${message.text()}`))
          page.on("pageerror", (error) => messages.push(`pageerror: ${String(error)}`))
          // every violation of the content security policy the page meets, reported or not to the console
          yield* Effect.promise(() =>
            page.addInitScript({
              content: `window.violations = []; document.addEventListener("securitypolicyviolation", (e) =>
                window.violations.push(e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber))`
            })
          )
          // the network is closed: only the page's own origin answers; what reached /nodes, and from where
          yield* closedNetwork(page, origin, blocked)
          const sent: Array<{ readonly url: string; readonly status: number }> = []
          page.on("response", (r) => {
            if (new URL(r.url()).pathname === "/nodes") sent.push({ url: r.url(), status: r.status() })
          })
          // the reference's heading is what tells it has drawn, not the load event
          const response = yield* Effect.promise(() => page.goto(`${origin}/docs`, { waitUntil: "commit" }))
          expect(response?.status()).toBe(200)
          expect(response?.headers()["content-security-policy"]).toMatch(/script-src 'sha256-/)
          const listAll = page.getByRole("region", { name: "List all nodes (paginated)" })
          if (host === "127.0.0.1") {
            // the reference is rendered by the embedded script: its title and the first operation's section appear
            yield* Effect.promise(() => page.getByRole("heading", { level: 1, name: spec.info.title }).waitFor(visible))
            yield* Effect.promise(() => listAll.getByRole("heading", { name: "List all nodes (paginated)" }).waitFor(visible))
            // the operation's section lists its query parameters and its error responses
            const section = (yield* Effect.promise(() => listAll.innerText())).replace(/\u200b/g, "")
            for (const parameter of Object.keys(ListNodesParams.fields)) expect(section).toContain(parameter)
            expect(section).toContain("400")
            // with the document's own words for them, and no words of the schema library's
            for (const parameter of spec.paths["/nodes"].get.parameters) expect(section).toContain(parameter.description.replaceAll("`", ""))
            expect(section).not.toMatch(/character\(s\)|maxLength\(|a number between/)
            // the listing takes an optional token (include_banned is for site admins): its example request offers it
            expect(spec.paths["/nodes"].get.security).toContainEqual({})
            expect(section).toContain("Authorization: Bearer")
            const sidebar = page.getByRole("navigation").first()
            // an authenticated operation offers bearer authentication in its example request, a part
            // of the page drawn on demand, highlighted code (it is in the first group: reached before
            // the others are open, it draws less on the way)
            yield* Effect.promise(() => sidebar.getByRole("button", { name: /^Open Group/ }).first().click())
            yield* Effect.promise(() => sidebar.getByText("List all nodes of a publisher", { exact: true }).first().click())
            const ofPublisher = page.getByRole("region", { name: "List all nodes of a publisher" })
            yield* Effect.promise(() => ofPublisher.getByText("Authorization: Bearer", { exact: false }).first().waitFor(visible))
          } else {
            yield* Effect.promise(() => listAll.getByRole("heading", { name: "List all nodes (paginated)" }).waitFor(visible))
          }
          // Test Request: the reference's request client names the page's host as the server, and sends there
          yield* Effect.promise(() => listAll.getByRole("button", { name: /Test Request/ }).first().click())
          const client = page.getByRole("dialog").first()
          yield* Effect.promise(() => client.getByRole("button", { name: /^Send/ }).first().waitFor(visible))
          expect(yield* Effect.promise(() => client.getByRole("button", { name: /^Server:/ }).first().innerText())).toContain(origin)
          yield* Effect.promise(() => client.getByRole("button", { name: /^Send/ }).first().click())
          yield* Effect.promise(() => client.getByText("200 OK").first().waitFor(visible))
          expect(sent.length, host).toBeGreaterThan(0)
          for (const answer of sent) {
            expect(answer.url.startsWith(`${origin}/nodes?`), answer.url).toBe(true)
            expect(answer.status, answer.url).toBe(200)
          }
          if (host === "127.0.0.1") {
            // the request client closed, the sidebar is read whole; opening every group redraws the
            // reference at length, so it comes after the clicks that wait on the page
            yield* Effect.promise(() => page.keyboard.press("Escape"))
            const sidebar = page.getByRole("navigation").first()
            // every group opened in the sidebar, every operation's summary is on screen
            for (let i = 0; i < 50; i++) {
              const closed = sidebar.getByRole("button", { name: /^Open Group/ })
              if ((yield* Effect.promise(() => closed.count())) === 0) break
              // all at once: the reference redraws once for the lot, not once a click (a click each took ~1.5 s of CPU)
              yield* Effect.promise(() => closed.evaluateAll((buttons) => buttons.forEach((b) => (b as unknown as { click(): void }).click())))
            }
            // the reference breaks long words with zero-width spaces: read past them
            const menu = (yield* Effect.promise(() => sidebar.innerText())).replace(/\u200b/g, "")
            for (const [path, item] of Object.entries<Json>(spec.paths)) {
              for (const operation of Object.values<Json>(item)) {
                expect(menu, `the summary of ${path}`).toContain(operation.summary)
              }
            }
            const text = yield* Effect.promise(() => page.locator("body").innerText())
            expect(text).toContain("List all nodes of a publisher")
            // late reports of the policy have a moment to arrive
            yield* Effect.promise(() => page.waitForTimeout(1000))
            const violations = yield* Effect.promise(() => page.evaluate("window.violations") as Promise<Array<string>>)
            // one report is expected: the bundle's schema library probes for eval (`new Function("")` in a
            // try) and, refused, parses without it; the policy grants no JavaScript eval on purpose
            expect(violations.filter((v) => !/^script-src eval /.test(v))).toEqual([])
            expect(violations.length).toBeLessThanOrEqual(1)
            expect(messages.filter((line) => /Content Security Policy|Refused to/i.test(line))).toEqual([])
            expect(pageErrors).toEqual([])
            // anything the page tried to fetch from elsewhere (fonts, say) was refused and it rendered all the same
            if (blocked.length > 0) console.info(`/docs asked for external resources (refused): ${blocked.join(", ")}`)
          }
          yield* Effect.promise(() => page.close())
        }
      }),
    90_000
  )
})
