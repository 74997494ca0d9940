/**
 * The members' bundles (scripts/bundle.ts), what `npm run build` makes of mesh-node and mesh-router: each bundled
 * program starts, and the packages an idle member leaves out of its start (test/cli/IdleModules.test.ts) stay in
 * chunks of their own, loaded on first use, instead of being bundled into the start.
 */
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import type { Metafile } from "esbuild"
import { bundle } from "../../scripts/bundle.js"

const root = join(import.meta.dirname, "..", "..")

/** The inputs of every output a program's output imports statically (at start), transitively. */
const loadedAtStart = (metafile: Metafile, program: string): ReadonlyArray<string> => {
  const outputs = metafile.outputs
  const entry = Object.keys(outputs).find((path) => path.endsWith(`/${program}.js`))
  const seen = new Set<string>()
  const queue = entry === undefined ? [] : [entry]
  for (let path = queue.pop(); path !== undefined; path = queue.pop()) {
    if (seen.has(path)) continue
    seen.add(path)
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind === "import-statement" && imported.path in outputs) queue.push(imported.path)
    }
  }
  return [...seen].flatMap((path) => Object.keys(outputs[path]?.inputs ?? {}))
}

const run = (path: string, args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [path, ...args],
      { cwd: root, encoding: "utf8", timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }),
    )
  })

/** The end of what a program wrote: an error's message, without the minified line Node prints above it. */
const lastLines = (text: string) => text.trim().split("\n").slice(-3).join("\n")

describe("the members' bundles", () => {
  it("bundle programs that start, with OpenTelemetry and MCP in chunks loaded on first use", async () => {
    // Inside the project, as dist/bin is: the packages left out of the bundle are found in node_modules.
    mkdirSync(join(root, "dist"), { recursive: true })
    const dir = mkdtempSync(join(root, "dist", ".bundle-test-"))
    try {
      const metafile = await bundle(dir)
      for (const program of ["mesh-node", "mesh-router"]) {
        const inputs = loadedAtStart(metafile, program)
        expect(inputs.some((input) => input.includes("node_modules/libp2p/"))).toBe(true)
        expect(inputs.filter((input) => /opentelemetry|@modelcontextprotocol|node_modules\/zod\//.test(input))).toEqual(
          [],
        )
      }
      // The whole bundle is loaded (with biscuit's wasm) before the command line is read.
      const router = await run(join(dir, "mesh-router.js"), ["--version"])
      expect(lastLines(router.stderr)).toBe("")
      expect(router.code).toBe(0)
      const node = await run(join(dir, "mesh-node.js"), ["join", "--help"])
      expect(lastLines(node.stderr)).toBe("")
      expect(node.code).toBe(0)
      expect(node.stdout).toContain("mesh-node join")
      // The chunks loaded on first use load too (their packages' `require`s of Node's modules among them).
      const chunks = Object.keys(metafile.outputs).filter((path) => /\/chunks\/[^/]+\.js$/.test(path))
      const imported = await run("--input-type=module", [
        "-e",
        `for (const path of ${JSON.stringify(chunks.map((path) => join(root, path)))}) await import(path)`,
      ])
      expect(lastLines(imported.stderr)).toBe("")
      expect(imported.code).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
