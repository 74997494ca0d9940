/**
 * A real browser for the console's end-to-end tests: Debian's chromium (CI installs it with apt) driven by
 * playwright-core, which never downloads a browser of its own. The flags keep chromium from calling home, which the
 * machines' closed network would refuse anyway.
 */
import { existsSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium, type Page } from "playwright-core"

export const CHROMIUM = process.env.MESH_CHROMIUM ?? "/usr/bin/chromium"

/** Screenshots of each page, for people to look at; git-ignored. */
export const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-output", "console")

export const launch = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the console tests need chromium at ${CHROMIUM}: apt-get install -y chromium (CI does)`)
  }
  // playwright gives each launch a fresh profile directory of its own.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  })
}

export interface Watched {
  /** Every URL the page asked for, in order. */
  readonly requests: Array<string>
  /** Uncaught exceptions and console errors other than failed API calls (a 4xx the test caused on purpose). */
  readonly errors: Array<string>
}

export const watch = (page: Page): Watched => {
  const watched: Watched = { requests: [], errors: [] }
  page.on("request", (request) => watched.requests.push(request.url()))
  page.on("pageerror", (error) => watched.errors.push(`page error: ${error.message}`))
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      watched.errors.push(`console: ${message.text()}`)
    }
  })
  return watched
}

export const screenshot = async (page: Page, folder: string, name: string): Promise<void> => {
  await mkdir(join(SCREENSHOTS, folder), { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, folder, `${name}.png`), fullPage: false })
}
