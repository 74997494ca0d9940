/**
 * A policy file as the operator wrote it (YAML, or JSON, which YAML reads too), kept with the position of every
 * value, so that a refusal naming a protojson path (`bindings[0].members[1]`) can point at its line and column.
 */
import { readFile } from "node:fs/promises"
import { Effect } from "effect"
import { type Document, isMap, isSeq, LineCounter, type Node, parseDocument } from "yaml"
import { AdminApiError } from "../AdminClient.js"

export interface PolicyFile {
  readonly path: string
  /** The document as a plain value, sent as protojson. */
  readonly value: unknown
  /** `file:line:column` of the value at a protojson path, or of the deepest part of it the file holds. */
  readonly locate: (path: string) => string
}

/** `allowed_services` is also accepted as `allowedServices` (protojson takes both). */
const spellings = (key: string): ReadonlyArray<string> => [
  key,
  key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
]

/** `bindings[0].members[1]` → ["bindings", 0, "members", 1] */
const steps = (path: string): ReadonlyArray<string | number> =>
  [...path.matchAll(/([A-Za-z_]+)|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? m[1] : Number(m[2])))

const nodeAt = (doc: Document, path: string): Node | undefined => {
  let node = doc.contents as Node | null
  let found: Node | undefined = node ?? undefined
  for (const step of steps(path)) {
    if (typeof step === "number" && isSeq(node)) node = (node.items[step] as Node | undefined) ?? null
    else if (typeof step === "string" && isMap(node)) {
      const names = spellings(step)
      const pair = node.items.find((p) => names.includes(String((p.key as { value?: unknown } | null)?.value)))
      node = (pair?.value as Node | undefined) ?? null
    } else node = null
    if (node === null) break
    found = node
  }
  return found
}

export const read = (path: string): Effect.Effect<PolicyFile, AdminApiError> =>
  Effect.gen(function* () {
    const text = yield* Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (cause) =>
        new AdminApiError({ message: `cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}` }),
    })
    const lines = new LineCounter()
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false })
    const where = (offset: number) => {
      const { line, col } = lines.linePos(offset)
      return `${path}:${line}:${col}`
    }
    const [syntax] = doc.errors
    if (syntax !== undefined) {
      return yield* new AdminApiError({
        message: `${where(syntax.pos[0])}: not YAML or JSON: ${syntax.message.split("\n")[0]}`,
      })
    }
    if (!isMap(doc.contents)) {
      return yield* new AdminApiError({ message: `${path}: a policy is a map with roles and bindings` })
    }
    return {
      path,
      value: doc.toJS(),
      locate: (at) => where(nodeAt(doc, at)?.range?.[0] ?? 0),
    }
  })
