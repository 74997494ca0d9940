/**
 * Search by intent over the corpus in bench/data/tools-corpus.json (six services, 300 tools, 40 intents written for
 * this project): recall@5 (an intent counts when any of its expected tools is among the first five), the time to
 * build the index from scratch, and the heap the index holds. The index is the one the node uses (ToolIndex), fed
 * as the node feeds it: one service's listing at a time.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import * as ToolIndex from "../src/layers/toolsearch/ToolIndex.js"
import { goals } from "./lib/goals.js"
import type { Entry } from "./lib/report.js"

interface Corpus {
  readonly services: ReadonlyArray<{ readonly name: string; readonly tools: ReadonlyArray<Tool> }>
  readonly intents: ReadonlyArray<{ readonly intent: string; readonly expected: ReadonlyArray<string> }>
}

const PEER = "12D3KooWBench"
const BUILDS = 50

const build = (corpus: Corpus): ToolIndex.Index => {
  const index = ToolIndex.make()
  for (const service of corpus.services) {
    index.addAll(service.tools.map((tool) => ToolIndex.document(PEER, service.name, tool)))
  }
  return index
}

const heapUsed = () => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const corpus = JSON.parse(readFileSync(join(import.meta.dirname, "data", "tools-corpus.json"), "utf8")) as Corpus
  const tools = corpus.services.reduce((n, s) => n + s.tools.length, 0)

  const times: Array<number> = []
  for (let i = 0; i < BUILDS; i++) {
    const started = performance.now()
    build(corpus)
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  const buildMs = times[Math.floor(times.length / 2)] ?? Number.NaN

  const before = heapUsed()
  const index = build(corpus)
  const heldBytes = heapUsed() - before

  const misses: Array<string> = []
  let found = 0
  for (const { intent, expected } of corpus.intents) {
    const top = ToolIndex.search(index, intent, 5).map((hit) => `${hit.service}/${hit.tool}`)
    if (top.some((name) => expected.includes(name))) found += 1
    else misses.push(`"${intent}" → ${top.slice(0, 3).join(", ") || "nothing"}`)
  }
  const recall = found / corpus.intents.length
  const exact = globalThis.gc === undefined ? " (heap delta without --expose-gc: rough)" : ""
  return [
    {
      name: `Tool search recall@5 (${corpus.intents.length} intents, ${tools} tools, ${corpus.services.length} services)`,
      figure: recall,
      unit: "",
      baselineName: "goal",
      baseline: goals.toolSearch.recallAt5,
      ratio: recall / goals.toolSearch.recallAt5,
      goal: `>= ${goals.toolSearch.recallAt5}`,
      met: recall >= goals.toolSearch.recallAt5,
      notes: `index build p50 ${buildMs.toFixed(2)} ms (${BUILDS} builds); index heap ${(heldBytes / 1024).toFixed(0)} KiB${exact}; missed: ${misses.join("; ") || "none"}`,
    },
  ]
}
