/**
 * The folders of src/ stand in tiers (docs/architecture.md, "Tiers of imports"): a module imports from its own tier
 * or below, never above, and no chain of imports among src/ modules comes back to where it started. Type-only imports
 * count: a type pulled from above is still an arrow up, and a cycle of types is still a cycle. The import graph is
 * read from the sources with a regex (relative specifiers only), so no dependency is needed to keep this true.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { describe, expect, it } from "vitest"

const SRC = join(import.meta.dirname, "..", "src")

/** Lowest first. A folder not listed fails the test, so a new folder gets a tier when it is made. */
const TIERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["gen", "platform"],
  ["domain", "crypto", "config"],
  ["p2p"],
  ["services"],
  ["http"],
  ["layers"],
  ["node"],
  ["cli", "testing", "demo", "bin"],
]

const tierOf = (module: string): number => {
  const folder = module.split("/")[0] ?? ""
  const tier = TIERS.findIndex((folders) => folders.includes(folder))
  if (tier === -1) throw new Error(`src/${folder}/ has no tier in test/Layering.test.ts`)
  return tier
}

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

/** `from "x"` (imports and re-exports, type-only or not, over several lines) and `import "x"` / `import("x")`. */
const SPECIFIER = /\bfrom\s+["']([^"']+)["']|\bimport\s*\(?\s*["']([^"']+)["']/g

/** Module path relative to src/, without extension → the src/ modules it imports. */
const graph: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
  sources(SRC).map((file) => {
    const from = relative(SRC, file).replace(/\.ts$/, "")
    const targets = [...readFileSync(file, "utf8").matchAll(SPECIFIER)]
      .map((match) => match[1] ?? match[2] ?? "")
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => normalize(join(dirname(from), specifier)).replace(/\.(js|ts)$/, ""))
      .filter((target) => !target.startsWith(".."))
    return [from, [...new Set(targets)]] as const
  }),
)

/** Every strongly connected set of more than one module (or a module importing itself), by Tarjan's algorithm. */
const cycles = (): ReadonlyArray<ReadonlyArray<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (module: string): void => {
    index.set(module, index.size)
    low.set(module, index.get(module) as number)
    stack.push(module)
    onStack.add(module)
    for (const next of graph.get(module) ?? []) {
      if (!graph.has(next)) continue
      if (!index.has(next)) {
        visit(next)
        low.set(module, Math.min(low.get(module) as number, low.get(next) as number))
      } else if (onStack.has(next)) {
        low.set(module, Math.min(low.get(module) as number, index.get(next) as number))
      }
    }
    if (low.get(module) === index.get(module)) {
      const component: Array<string> = []
      let top: string | undefined
      do {
        top = stack.pop() as string
        onStack.delete(top)
        component.push(top)
      } while (top !== module)
      if (component.length > 1 || (graph.get(module) ?? []).includes(module)) found.push(component.sort())
    }
  }
  for (const module of graph.keys()) if (!index.has(module)) visit(module)
  return found
}

describe("the import graph of src/", () => {
  it("is read from the sources", () => {
    // A regex that stopped matching would make the checks below pass on an empty graph: an import over several
    // lines, a type-only import and a plain one must all be found.
    const meshHostLive = graph.get("layers/mesh/MeshHostLive") ?? []
    expect(meshHostLive).toEqual(expect.arrayContaining(["services/mesh/MeshHost", "p2p/Trust", "p2p/Libp2pHost"]))
    expect(graph.size).toBeGreaterThan(300)
  })

  it("has no import from a folder into one of a higher tier", () => {
    const upward = [...graph].flatMap(([from, targets]) =>
      targets.filter((target) => tierOf(target) > tierOf(from)).map((target) => `src/${from} → src/${target}`),
    )
    expect(upward).toEqual([])
  })

  it("has no cycle of imports", () => {
    expect(cycles().map((component) => component.map((module) => `src/${module}`).join(" ⇄ "))).toEqual([])
  })
})
