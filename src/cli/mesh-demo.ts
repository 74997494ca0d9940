/**
 * `mesh-demo`: the demo services mesh-one runs, as programs of their own, so a mesh on real machines has something to
 * publish without the repository. `mesh-demo mcp` serves the demo MCP tools (`word_count`, `sha256`) over streamable
 * HTTP at `/mcp`; `mesh-demo model` serves the deterministic OpenAI-compatible model `mesh-demo` under `/v1`. Both
 * listen on 127.0.0.1 only (the node in front of them is what the mesh reaches) until Ctrl-C.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Effect, type Scope } from "effect"
import * as DemoInference from "../demo/DemoInference.js"
import * as DemoMcpServer from "../demo/DemoMcpServer.js"
import type { AddressInUse } from "../demo/Serve.js"
import { UsageError } from "./run.js"

const port = (fallback: number) =>
  Options.integer("port").pipe(
    Options.withDefault(fallback),
    Options.withDescription(`Port on 127.0.0.1 to listen on (0: any free port). Default: ${fallback}.`),
  )

/** Serves until interrupted; a taken port is a usage error naming the flag. */
const serve = (what: string, started: Effect.Effect<string, AddressInUse, Scope.Scope>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const url = yield* started.pipe(
        Effect.catchTag("AddressInUse", (e) =>
          Effect.fail(new UsageError({ message: `port ${e.port} is in use: choose another with --port` })),
        ),
      )
      yield* Console.log(`mesh-demo: ${what} at ${url} (Ctrl-C stops it)`)
      return yield* Effect.never
    }),
  )

const mcp = Command.make("mcp", { port: port(8091) }, ({ port }) =>
  serve("MCP server (tools word_count, sha256)", DemoMcpServer.make(port)),
).pipe(Command.withDescription("Serve the demo MCP tools word_count and sha256 over streamable HTTP at /mcp."))

const model = Command.make("model", { port: port(8092) }, ({ port }) =>
  serve(
    `OpenAI-compatible model ${DemoInference.MODEL}`,
    Effect.map(DemoInference.make(port), (root) => `${root}/v1`),
  ),
).pipe(
  Command.withDescription(
    `Serve the deterministic OpenAI-compatible model ${DemoInference.MODEL} under /v1 (models, chat completions).`,
  ),
)

export const meshDemo = Command.make("mesh-demo").pipe(
  Command.withDescription("The demo services of mesh-one, to publish from a node: an MCP server and a model."),
  Command.withSubcommands([mcp, model]),
)
