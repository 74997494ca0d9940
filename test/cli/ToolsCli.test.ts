/** `mesh-node tools fingerprint` as a separate process: the value an operator writes into the policy's tool pins. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as ToolFingerprint from "../../src/domain/ToolFingerprint.js"
import { runBin } from "../support/processes.js"

const TIMEOUT = 60_000
const dir = mkdtempSync(join(tmpdir(), "mesh-tools-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const fingerprint = (args: ReadonlyArray<string>, input?: string) =>
  runBin("mesh-node", ["tools", "fingerprint", ...args], {}, input)

const wordCount = { name: "word_count", description: "Counts words.", inputSchema: { type: "object" } }

describe("mesh-node tools fingerprint", () => {
  it(
    "prints the fingerprint a pin holds, stable across releases, like sha256sum",
    async () => {
      const file = join(dir, "tool.json")
      writeFileSync(file, JSON.stringify(wordCount))
      const result = await fingerprint([file])
      expect(result.status, result.stderr).toBe(0)
      // Fixed: a change of canonical form would unpin every tool of every mesh.
      const pinned = "sha256:d08b8cf9c9f1005ed75d87830b6060828b29590bd8531b00afbf67dacad6c5ac"
      expect(result.stdout).toBe(`${pinned}  word_count\n`)
      expect(ToolFingerprint.fingerprint(wordCount)).toBe(pinned)
    },
    TIMEOUT,
  )

  it(
    "reads a tools/list answer from stdin and prints JSON",
    async () => {
      const other = { name: "shout", inputSchema: { type: "object" } }
      const answer = { jsonrpc: "2.0", id: 1, result: { tools: [wordCount, other] } }
      const result = await fingerprint(["--json", "-"], JSON.stringify(answer))
      expect(result.status, result.stderr).toBe(0)
      expect(JSON.parse(result.stdout)).toEqual([
        { name: "word_count", fingerprint: ToolFingerprint.fingerprint(wordCount) },
        { name: "shout", fingerprint: ToolFingerprint.fingerprint(other) },
      ])
    },
    TIMEOUT,
  )

  it(
    "says what is wrong with a file that holds no tool, and exits 1",
    async () => {
      const missing = await fingerprint([join(dir, "none.json")])
      expect(missing.status).toBe(1)
      expect(missing.stderr).toBe(`mesh-node: cannot read ${join(dir, "none.json")}: ENOENT\n`)
      const notJson = await fingerprint(["-"], "name: word_count")
      expect(notJson.status).toBe(1)
      expect(notJson.stderr).toMatch(/^mesh-node: - is not JSON: /)
      const nameless = await fingerprint(["-"], JSON.stringify({ tools: [wordCount, { description: "x" }] }))
      expect(nameless.status).toBe(1)
      expect(nameless.stderr).toBe("mesh-node: -: tool 2 has no name: not a tool definition\n")
    },
    TIMEOUT,
  )
})
