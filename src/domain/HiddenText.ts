/**
 * Text a peer wrote, as an agent may see it: without the characters a person reviewing the same text would not see.
 * A model reads every code point, a person reads glyphs, so instructions can hide in zero-width characters, bidi
 * controls (which reorder what is shown), Unicode tag characters (an invisible copy of ASCII) and variation
 * selectors. Removed: every control character but tab and line feed (a carriage return ends a line: CRLF becomes LF),
 * every format character (Unicode category Cf) and every default-ignorable code point. What stays is what a
 * reviewer sees. The decisions ("## MCP tools from peers") state where this applies and what a fingerprint covers.
 */

const HIDDEN = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu

const keep = (ch: string): string => (ch === "\t" || ch === "\n" ? ch : "")

/** `text` without hidden characters. */
export const clean = (text: string): string => text.replace(/\r\n?/g, "\n").replace(HIDDEN, keep)

/** Whether `text` holds a character `clean` removes. */
export const holdsHidden = (text: string): boolean => clean(text) !== text

/**
 * A decoded JSON value with every string, and every object key, cleaned. Where two keys become one, the later wins:
 * such a definition only ever differed by what no one could see.
 */
export const cleanJson = (value: unknown): unknown => {
  if (typeof value === "string") return clean(value)
  if (Array.isArray(value)) return value.map(cleanJson)
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(value)) out[clean(key)] = cleanJson(inner)
    return out
  }
  return value
}

/** Code points shown as `\u{...}`: how a console or a log shows text that would otherwise hide what it holds. */
export const reveal = (text: string): string =>
  text.replace(HIDDEN, (ch) => (ch === "\t" || ch === "\n" ? ch : `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`))
