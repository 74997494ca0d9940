/**
 * The demo MCP and model servers (`demoServers.ts`) as a process on the host `prefix` puts it on (a network
 * namespace the test's loopback does not reach); their URLs as that host sees them. The scope stops the process.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import { Deferred, Effect } from "effect"

const root = join(import.meta.dirname, "..", "..")

export const demoServers = (prefix: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const urls = yield* Deferred.make<{ mcp: string; inference: string }>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const [command = "", ...args] = [
          ...prefix,
          process.execPath,
          "--import",
          "tsx",
          join(root, "test", "scale", "demoServers.ts"),
        ]
        const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"] })
        let text = ""
        child.stdout?.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8")
          const line = text.split("\n")[0]
          if (text.includes("\n") && line !== undefined) Deferred.unsafeDone(urls, Effect.succeed(JSON.parse(line)))
        })
        return child
      }),
      (child) => Effect.sync(() => child.kill("SIGTERM")),
    )
    return yield* Deferred.await(urls).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => "demo" }))
  })
