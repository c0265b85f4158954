/**
 * Debian's Chromium, for the browser tests: where it is, and the flags it needs on a machine whose
 * network is closed (without the background-networking ones it keeps trying to reach its vendor's
 * hosts) and that runs it as root (no sandbox).
 */
import * as fs from "node:fs"

export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
export const chromiumFound = fs.existsSync(chromiumPath)
export const chromiumSkipReason = `no Chromium at ${chromiumPath}: install it (apt-get install chromium) or set CHROMIUM_PATH`

export const chromiumArgs: ReadonlyArray<string> = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]
