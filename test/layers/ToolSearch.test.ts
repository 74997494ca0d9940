/**
 * The tool search index on a handful of hand-made tools: ranking order by name, description and schema property
 * names; replacing and forgetting a service's tools; the filter of reachable services.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import * as ToolIndex from "../../src/layers/toolsearch/ToolIndex.js"
import * as ToolSearchLive from "../../src/layers/toolsearch/ToolSearchLive.js"
import { ToolSearch } from "../../src/services/toolsearch/ToolSearch.js"

const tool = (name: string, description: string, properties: ReadonlyArray<string> = []): Tool => ({
  name,
  description,
  inputSchema: { type: "object", properties: Object.fromEntries(properties.map((p) => [p, { type: "string" }])) },
})

const FILES = [
  tool("read_file", "Reads a text file and returns its contents", ["path"]),
  tool("write_file", "Writes text to a file, replacing it", ["path", "content"]),
  tool("list_directory", "Lists the entries of a folder", ["path"]),
]
const WEATHER = [
  tool("get_forecast", "The weather forecast for the next days", ["city", "days"]),
  tool("currentConditions", "Current temperature, wind and rain", ["city"]),
]
const CRYPTO = [tool("sha256", "SHA-256 digest of a text, hex encoded", ["text"])]

const names = (hits: ReadonlyArray<{ readonly tool: string }>) => hits.map((h) => h.tool)

describe("tool search", () => {
  it.effect("ranks by relevance of the intent to names, descriptions and property names", () =>
    Effect.gen(function* () {
      const search = yield* ToolSearch
      yield* search.replace("peer-a", "files", FILES)
      yield* search.replace("peer-a", "weather", WEATHER)
      yield* search.replace("peer-b", "crypto", CRYPTO)
      expect(yield* search.size).toBe(6)

      expect(names(yield* search.search("I want to read a file", { limit: 2 }))).toEqual(["read_file", "write_file"])
      expect(names(yield* search.search("what's the weather forecast in Paris", { limit: 1 }))).toEqual([
        "get_forecast",
      ])
      // camelCase split, plural stemmed: "conditions" finds currentConditions first.
      expect(names(yield* search.search("current conditions", { limit: 1 }))).toEqual(["currentConditions"])
      // A property name alone: only tools taking a city.
      expect(new Set(names(yield* search.search("city", { limit: 5 })))).toEqual(
        new Set(["get_forecast", "currentConditions"]),
      )
      expect(names(yield* search.search("hash some text with sha256", { limit: 1 }))).toEqual(["sha256"])
      const scored = yield* search.search("write a file", { limit: 3 })
      expect(scored[0]?.tool).toBe("write_file")
      expect(scored.map((h) => h.score)).toEqual([...scored.map((h) => h.score)].sort((a, b) => b - a))
      expect(scored[0]?.score).toBeGreaterThan(0)
    }).pipe(Effect.provide(ToolSearchLive.layer)),
  )

  it.effect("a new listing replaces the service's tools; a forgotten service or peer is no longer found", () =>
    Effect.gen(function* () {
      const search = yield* ToolSearch
      yield* search.replace("peer-a", "files", FILES)
      yield* search.replace("peer-b", "files", FILES)
      yield* search.replace("peer-a", "files", [tool("delete_file", "Deletes a file", ["path"])])
      const hits = yield* search.search("file", { limit: 10 })
      expect(hits.filter((h) => h.peerId === "peer-a").map((h) => h.tool)).toEqual(["delete_file"])
      expect(hits.filter((h) => h.peerId === "peer-b")).toHaveLength(3)

      expect(names(yield* search.search("file", { limit: 10, keep: (peerId) => peerId === "peer-a" }))).toEqual([
        "delete_file",
      ])

      yield* search.forget("peer-b")
      expect(yield* search.size).toBe(1)
      yield* search.forget("peer-a", "files")
      expect(yield* search.search("file", { limit: 10 })).toEqual([])
    }).pipe(Effect.provide(ToolSearchLive.layer)),
  )

  it("splits names as people would and strips common endings", () => {
    expect(ToolIndex.tokenize("getWeatherForecast list_files sha256 HTTPRequest")).toEqual([
      "get",
      "Weather",
      "Forecast",
      "list",
      "files",
      "sha256",
      "HTTP",
      "Request",
    ])
    expect(
      ["files", "file", "searching", "queries", "created", "create", "class", "boxes"].map(ToolIndex.stem),
    ).toEqual(["fil", "fil", "search", "query", "creat", "creat", "class", "box"])
    expect(ToolIndex.processTerm("The")).toBeNull()
  })
})
