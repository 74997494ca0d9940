/**
 * `mesh-node run` refuses to start, with exit 2 and one line, when a place it keeps private is open to its group or
 * to others (issue 29, item 4): the data folder, the socket's folder, an API token file.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { runBin } from "../support/processes.js"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A node that would start runs until stopped: the bound is what a refusal can never need. */
const run = async (args: ReadonlyArray<string>) => {
  const result = await runBin("mesh-node", ["run", "--control-plane", "http://127.0.0.1:1", "--bind-addr", "", ...args])
  return { status: result.status, lines: result.stderr.trim().split("\n") }
}

describe("mesh-node run and its private places", () => {
  it("refuses a data folder, a socket folder or an API token file open to its group or others", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-node-"))
    dirs.push(dir)

    const data = join(dir, "data")
    mkdirSync(data)
    chmodSync(data, 0o750)
    expect(await run(["--data-dir", data])).toEqual({
      status: 2,
      lines: [`mesh-node: the data folder ${data} is open to its group or others (mode 0750): chmod go-rwx it`],
    })

    const privateData = join(dir, "private")
    const shared = join(dir, "shared")
    mkdirSync(shared)
    chmodSync(shared, 0o1777)
    expect(await run(["--data-dir", privateData, "--socket-path", join(shared, "mesh.sock")])).toEqual({
      status: 2,
      lines: [`mesh-node: the socket's folder ${shared} is open to its group or others (mode 1777): chmod go-rwx it`],
    })

    const token = join(dir, "api-token")
    writeFileSync(token, "mesh-api-0123456789abcdef0123456789abcdef\n")
    chmodSync(token, 0o644)
    expect(await run(["--data-dir", privateData, "--api-token-path", token])).toEqual({
      status: 2,
      lines: [`mesh-node: the API token file ${token} is open to its group or others (mode 0644): chmod go-rwx it`],
    })
  })
})
