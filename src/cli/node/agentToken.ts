/**
 * `mesh-node agent-token`: asks the running node, over its Unix socket, for an agent token scoped to the given
 * services, tools, models, methods and paths (`POST /agents/token`). The node mints it from its own credential,
 * so the control plane need not be reachable. The token goes to `--out` (written 0600) or, without it, to stdout
 * alone, so that `TOKEN=$(mesh-node agent-token ...)` captures it; what it allows goes to stderr.
 */
import { chmodSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Console, Data, Effect, Either, Option } from "effect"
import * as NodeConfig from "../../config/NodeConfig.js"
import * as Labels from "../../domain/Labels.js"
import * as Flag from "../flags.js"
import { UsageError } from "../run.js"
import * as NodeFlags from "./flags.js"

const repeated = (name: string, description: string) =>
  Options.text(name).pipe(Options.repeated, Options.withDescription(`${description} Repeatable.`))

const flags = {
  dataDir: NodeFlags.dataDir,
  socketPath: Flag.optionalText("socket-path", {
    env: "MESH_SOCKET_PATH",
    description: `The node's Unix socket. Default: <data-dir>/${NodeConfig.defaults.socketFile}.`,
  }),
  agent: Options.text("agent").pipe(Options.withDescription("The agent's id: lower-case letters, digits, . _ -.")),
  service: repeated("service", "A service the agent may call: <type>://<name>[/path], names may use * (mcp://docs)."),
  tool: repeated("tool", "A tool the agent may call: mcp://<service>/<tool>, or mcp://<service>/* for all."),
  model: repeated("model", "A model the agent may use: an id, or a prefix ending in *."),
  method: repeated("method", "An HTTP method the agent may use on services (default: any)."),
  path: repeated("path", "A path below a service the agent may use: exact, or a prefix ending in * (default: any)."),
  label: repeated("label", "A label k=v every serving peer must attest."),
  ttl: Options.text("ttl").pipe(
    Options.withDefault("1h"),
    Options.withDescription("How long the token lasts (Go duration); never past the node's credential."),
  ),
  out: Options.text("out").pipe(
    Options.optional,
    Options.withDescription("Write the token to this file (0600) instead of stdout."),
  ),
}

/** The node is not there to ask: exit 1 (a usage error, a scope the node refuses, is exit 2). */
class NodeUnreachable extends Data.TaggedError("NodeUnreachable")<{ readonly message: string }> {}

interface Answer {
  readonly status: number
  readonly body: string
}

const post = (socketPath: string, body: string): Effect.Effect<Answer, NodeUnreachable> =>
  Effect.async<Answer, NodeUnreachable>((resume) => {
    const req = request(
      {
        socketPath,
        method: "POST",
        path: "/agents/token",
        headers: { host: "localhost", "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () =>
          resume(Effect.succeed({ status: res.statusCode ?? 500, body: Buffer.concat(chunks).toString("utf8") })),
        )
      },
    )
    req.on("error", (error: NodeJS.ErrnoException) =>
      resume(
        Effect.fail(
          new NodeUnreachable({
            message: `cannot reach the node at ${socketPath}: ${error.code ?? error.message} (is it running?)`,
          }),
        ),
      ),
    )
    req.end(body)
  })

export const agentToken = Command.make("agent-token", flags, (f) =>
  Effect.gen(function* () {
    const labels: Record<string, string> = {}
    for (const pair of f.label) {
      const parsed = Labels.parseList(pair)
      if (Either.isLeft(parsed)) return yield* new UsageError({ message: `--label: ${parsed.left}` })
      Object.assign(labels, parsed.right)
    }
    const socketPath = Option.getOrElse(f.socketPath, () => NodeConfig.socketPathIn(f.dataDir))
    const answer = yield* post(
      socketPath,
      JSON.stringify({
        agent: f.agent,
        services: f.service,
        tools: f.tool,
        models: f.model,
        methods: f.method.map((m) => m.toUpperCase()),
        paths: f.path,
        labels,
        ttl: f.ttl,
      }),
    )
    const parsed = Either.try(
      () => JSON.parse(answer.body) as { token?: string; expires_at?: string; message?: string },
    )
    const json = Either.getOrElse(parsed, () => ({}) as { token?: string; expires_at?: string; message?: string })
    if (answer.status !== 200 || json.token === undefined) {
      return yield* new UsageError({ message: `the node refused: ${json.message ?? `HTTP ${answer.status}`}` })
    }
    if (Option.isSome(f.out)) {
      const out = f.out.value
      yield* Effect.try({
        try: () => {
          writeFileSync(out, `${json.token}\n`, { mode: 0o600 })
          chmodSync(out, 0o600)
        },
        catch: (error) => new UsageError({ message: `cannot write ${out}: ${(error as NodeJS.ErrnoException).code}` }),
      })
      yield* Console.error(`agent token for ${f.agent} written to ${out}, valid until ${json.expires_at}`)
    } else {
      yield* Console.log(json.token)
      yield* Console.error(`agent token for ${f.agent}, valid until ${json.expires_at}`)
    }
  }),
).pipe(Command.withDescription("Mint a token for an agent on this machine, scoped to what it may call."))
