/**
 * The console's built files (`npm run build` writes them to `dist/console/`: `index.html` and `assets/`), read once
 * into memory at the first request for them, and the headers every console answer carries. The Content-Security-Policy
 * allows nothing but this control plane's own scripts, styles, images and API, no inline code, no framing, no form
 * submissions (the console's forms are handled by its script; a form submitted without it must not put a token in a
 * URL), and Trusted Types with no policy, so no script can write HTML from strings.
 */
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Option } from "effect"

export interface ConsoleFiles {
  readonly page: Uint8Array
  /** By file name, as `/console/assets/<name>`. */
  readonly assets: ReadonlyMap<string, Uint8Array>
}

/** `dist/console/` of this checkout or installation, from `src/http/console/` and `dist/http/console/` alike. */
export const DIRECTORY = fileURLToPath(new URL("../../../dist/console/", import.meta.url))

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ")

/** Headers of every console answer: the page, its files. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  // The sign-in code arrives in the page's URL: no other site may see it in a Referer.
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
}

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
}

export const contentTypeOf = (name: string): string | undefined => TYPES[name.slice(name.lastIndexOf("."))]

/** Names carrying a content hash (`console-4F2KQ7ZD.js`) never change: browsers may keep them. */
export const isImmutable = (name: string): boolean => /-[A-Z0-9]{8}\.[a-z]+$/.test(name)

/** The files in `directory`, or none when the console was not built there. */
export const load = (directory: string = DIRECTORY): Effect.Effect<Option.Option<ConsoleFiles>> =>
  Effect.tryPromise(async () => {
    const page = await readFile(join(directory, "index.html"))
    const assets = new Map<string, Uint8Array>()
    for (const name of await readdir(join(directory, "assets"))) {
      if (contentTypeOf(name) !== undefined) assets.set(name, await readFile(join(directory, "assets", name)))
    }
    return { page, assets }
  }).pipe(
    Effect.map(Option.some),
    Effect.catchAll(() =>
      Effect.as(
        Effect.logInfo("the console is not built: /console answers 404 (npm run build builds it)"),
        Option.none(),
      ),
    ),
  )
