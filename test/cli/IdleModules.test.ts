/**
 * What an idle member does not load: the packages a node or a router needs only for a feature it is not using are
 * loaded when that feature is first used, not with the program (docs/scale.md, "Idle weight"). Each entry point's
 * module graph is imported in a child process, as the binary would, and the modules it loaded are listed.
 */
import { execFile } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"

const root = join(import.meta.dirname, "..", "..")

/** Imports the modules given as arguments and prints every module URL loaded on the way, as JSON. */
const LIST_LOADED = `
import { registerHooks } from "node:module"
import { pathToFileURL } from "node:url"
const loaded = []
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context) } })
for (const path of process.argv.slice(1)) await import(pathToFileURL(path).href)
process.stdout.write(JSON.stringify(loaded))
`

const listed = new Map<string, Promise<ReadonlyArray<string>>>()

/** The module URLs `entry`'s graph loads, listed once per entry for all the tests. */
const loadedBy = (entry: string): Promise<ReadonlyArray<string>> => {
  const known = listed.get(entry)
  if (known !== undefined) return known
  const loading = list(entry)
  listed.set(entry, loading)
  return loading
}

const list = (entry: string): Promise<ReadonlyArray<string>> =>
  new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", LIST_LOADED, join(root, entry)],
      { cwd: root, encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => (error === null ? resolve(JSON.parse(stdout)) : reject(new Error(stderr))),
    )
  })

describe("the modules a member loads at start", () => {
  it.each(["src/cli/mesh-node.ts", "src/cli/mesh-router.ts"])(
    "%s leaves OpenTelemetry out until tracing is on",
    async (entry) => {
      const loaded = await loadedBy(entry)
      // The graph was read: the program's own modules and the packages it needs are there.
      expect(loaded.some((url) => url.includes("/node_modules/libp2p/"))).toBe(true)
      expect(loaded.filter((url) => /opentelemetry/.test(url))).toEqual([])
    },
    120_000,
  )

  // The MCP SDK and zod come with the first MCP request, peer tool call or MCP backend probe.
  it("src/cli/mesh-node.ts leaves the MCP SDK out until MCP is used", async () => {
    const loaded = await loadedBy("src/cli/mesh-node.ts")
    expect(loaded.some((url) => url.includes("/src/layers/node/MemberLive.ts"))).toBe(true)
    expect(loaded.filter((url) => /@modelcontextprotocol|\/node_modules\/zod\//.test(url))).toEqual([])
  }, 120_000)
})
