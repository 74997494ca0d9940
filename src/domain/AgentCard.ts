/**
 * An A2A agent card fetched through the proxy (`.well-known/agent-card.json`): its interface URLs point at the
 * agent's own address, which the caller cannot reach, so they are rewritten to the proxy path of the service as the
 * caller sees it. Only the URL fields change; everything else in the card is passed on as the agent wrote it.
 */

/** The paths under which an agent publishes its card (the current name and the one before it). */
export const CARD_PATHS: ReadonlySet<string> = new Set(["/.well-known/agent-card.json", "/.well-known/agent.json"])

/** Cards are small; a larger answer is passed on untouched rather than buffered. */
export const MAX_CARD_BYTES = 1024 * 1024

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * One interface URL on the proxy: the part of its path below `target_url`'s path is kept (an agent serving JSON-RPC
 * at `<target>/rpc` is reached at `<proxy>/rpc`); a URL elsewhere becomes the proxy path itself.
 */
export const rewriteUrl = (url: string, targetUrl: string, publicBase: string): string => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return publicBase
  }
  const targetPath = new URL(targetUrl).pathname.replace(/\/$/, "")
  const path = parsed.pathname
  const below = path === targetPath || path.startsWith(`${targetPath}/`) ? path.slice(targetPath.length) : ""
  return `${publicBase}${below === "/" ? "" : below}${parsed.search}`
}

const rewriteInterfaces = (value: unknown, targetUrl: string, publicBase: string): unknown =>
  Array.isArray(value)
    ? value.map((entry) =>
        isObject(entry) && typeof entry.url === "string"
          ? { ...entry, url: rewriteUrl(entry.url, targetUrl, publicBase) }
          : entry,
      )
    : value

/** The card with `url`, `additionalInterfaces[].url` and `supportedInterfaces[].url` on the proxy; other JSON as is. */
export const rewrite = (card: unknown, targetUrl: string, publicBase: string): unknown => {
  if (!isObject(card)) return card
  const out: Json = { ...card }
  if (typeof card.url === "string") out.url = rewriteUrl(card.url, targetUrl, publicBase)
  if ("additionalInterfaces" in card) {
    out.additionalInterfaces = rewriteInterfaces(card.additionalInterfaces, targetUrl, publicBase)
  }
  if ("supportedInterfaces" in card) {
    out.supportedInterfaces = rewriteInterfaces(card.supportedInterfaces, targetUrl, publicBase)
  }
  return out
}
