/**
 * The search index of tools on peers, over minisearch (BM25+ ranking, a mutable inverted index): one document per
 * tool of a service on a peer, with the tool's name, title, description, the names (and descriptions) of its input
 * properties and the service's name as fields. Names are split where people would split them (`get_weather`,
 * `createIssue`, `sha256`), words lose their commonest English endings so `files` finds `file`, and filler words
 * of an intent (`I want to ...`) are dropped. The index is mutable; its owner serializes changes.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import MiniSearch, { type SearchResult } from "minisearch"
import type { Hit } from "../../services/toolsearch/ToolSearch.js"

export interface Document {
  /** `<peer>/<service>/<tool>`: a tool of one service on one peer. */
  readonly id: string
  readonly peerId: string
  readonly service: string
  readonly tool: string
  readonly title: string
  readonly description: string
  readonly properties: string
}

/** Field weights: a tool's name says most about what it does, its service least. */
const BOOST = { tool: 3, title: 2, properties: 1.5, description: 1, service: 0.5 } as const

const STOP_WORDS = new Set(
  (
    "a an and are as at be by can could do for from get give how i in into is it its me my of on or our please " +
    "should some that the their them then there these this those to us using want we what when which who will " +
    "with would you your need needs let lets make"
  ).split(" "),
)

/** Splits on anything but letters and digits, and at camelCase and letter/digit boundaries. */
export const tokenize = (text: string): Array<string> =>
  text
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((token) => token.length > 0)

/**
 * A light stemmer: the commonest English endings, then a final `e`, so that `file`, `files`, `create` and `created`
 * meet; never below three letters.
 */
export const stem = (word: string): string => {
  const rules: ReadonlyArray<readonly [RegExp, string]> = [
    [/ies$/, "y"],
    [/(ss|x|ch|sh)es$/, "$1"],
    [/ing$/, ""],
    [/ed$/, ""],
    [/([^s])s$/, "$1"],
  ]
  let stemmed = word
  for (const [ending, replacement] of rules) {
    const next = stemmed.replace(ending, replacement)
    if (next !== stemmed) {
      if (next.length >= 3) stemmed = next
      break
    }
  }
  return stemmed.length > 3 && stemmed.endsWith("e") ? stemmed.slice(0, -1) : stemmed
}

export const processTerm = (term: string): string | null => {
  const lower = term.toLowerCase()
  return STOP_WORDS.has(lower) ? null : stem(lower)
}

/** Property names and their descriptions from an input schema; only the top level, bounded. */
const propertiesOf = (schema: Tool["inputSchema"] | undefined): string => {
  const properties = schema?.properties
  if (typeof properties !== "object" || properties === null) return ""
  const words: Array<string> = []
  for (const [name, value] of Object.entries(properties).slice(0, 64)) {
    words.push(name)
    const description = (value as { description?: unknown } | null)?.description
    if (typeof description === "string") words.push(description.slice(0, 256))
  }
  return words.join(" ")
}

export const documentId = (peerId: string, service: string, tool: string): string => `${peerId}/${service}/${tool}`

export const document = (peerId: string, service: string, tool: Tool): Document => ({
  id: documentId(peerId, service, tool.name),
  peerId,
  service,
  tool: tool.name,
  title: tool.title ?? "",
  description: tool.description ?? "",
  properties: propertiesOf(tool.inputSchema),
})

export type Index = MiniSearch<Document>

export const make = (): Index =>
  new MiniSearch<Document>({
    fields: ["tool", "title", "description", "properties", "service"],
    storeFields: ["peerId", "service", "tool", "description"],
    tokenize,
    processTerm,
    searchOptions: {
      boost: { ...BOOST },
      combineWith: "OR",
      // Words of four letters or more also match longer ones (`calc` → `calculate`) and a typo away.
      prefix: (term) => term.length >= 4,
      fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
    },
  })

const hitOf = (result: SearchResult): Hit => ({
  peerId: result.peerId as string,
  service: result.service as string,
  tool: result.tool as string,
  description: result.description as string,
  score: Math.round(result.score * 1000) / 1000,
})

/** The best `limit` matches of `intent`, best first, among the documents `keep` accepts. */
export const search = (
  index: Index,
  intent: string,
  limit: number,
  keep: (hit: Hit) => boolean = () => true,
): ReadonlyArray<Hit> => index.search(intent.slice(0, 1024)).map(hitOf).filter(keep).slice(0, limit)
