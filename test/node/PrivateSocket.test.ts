/**
 * The node's Unix socket (issue 29, item 4): created 0600 under a umask of its own, never chmod-ed after a window in
 * which another user could connect, and only in a folder this user owns and nobody else may enter.
 */
import { chmodSync, mkdirSync, statSync } from "node:fs"
import { Server } from "node:net"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Harness from "../../src/testing/ControlPlaneHarness.js"
import * as NodeHarness from "../../src/testing/NodeHarness.js"

/** The mode each Unix socket has the instant `listen` returns (its bind is synchronous), under the umask of 000. */
const socketModesUnderOpenUmask = Effect.acquireRelease(
  Effect.sync(() => {
    const modes: Array<number> = []
    const original = Server.prototype.listen
    const umask = process.umask(0)
    Server.prototype.listen = function (this: Server, ...args: Array<unknown>) {
      const result = (original as (...a: Array<unknown>) => Server).apply(this, args)
      const options = args[0]
      if (typeof options === "object" && options !== null && "path" in options && typeof options.path === "string") {
        modes.push(statSync(options.path).mode & 0o777)
      }
      return result
    } as typeof Server.prototype.listen
    return { modes, original, umask }
  }),
  ({ original, umask }) =>
    Effect.sync(() => {
      Server.prototype.listen = original
      process.umask(umask)
    }),
)

describe("the node's Unix socket", () => {
  it.scoped("is 0600 from the moment it exists, whatever the process umask", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ autoApproveEnrollment: true })
      const dir = yield* NodeHarness.tempDir
      const { modes } = yield* socketModesUnderOpenUmask
      const node = yield* NodeHarness.make(cp, { enroll: false, overrides: { dataDir: dir } })
      expect(modes).toEqual([0o600])
      expect(statSync(node.socketPath).mode & 0o777).toBe(0o600)
    }),
  )

  it.scoped("is refused in a folder its group or others may enter, and its folder is made 0700 when missing", () =>
    Effect.gen(function* () {
      const cp = yield* Harness.make({ autoApproveEnrollment: true })
      const dir = yield* NodeHarness.tempDir
      const open = join(dir, "open")
      mkdirSync(open)
      chmodSync(open, 0o755)
      const refused = yield* Effect.flip(
        NodeHarness.make(cp, { enroll: false, overrides: { socketPath: Option.some(join(open, "mesh.sock")) } }),
      )
      expect(String((refused as Error).message)).toBe(
        `the socket's folder ${open} is open to its group or others (mode 0755): chmod go-rwx it`,
      )
      const made = join(dir, "made", "here")
      const node = yield* NodeHarness.make(cp, {
        enroll: false,
        overrides: { socketPath: Option.some(join(made, "mesh.sock")) },
      })
      expect(statSync(made).mode & 0o777).toBe(0o700)
      expect(statSync(node.socketPath).mode & 0o777).toBe(0o600)
    }),
  )
})
