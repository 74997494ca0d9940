/**
 * mesh-one's nodes. Each has a folder of its own (`node-a/`, `node-b/`) with its key, credential, API token, socket
 * and `mesh-node.yaml`. The file is written once, with comments, and read at every start: services added there are
 * published next to the demo service mesh-one adds itself (unless the file declares one of the same type and name).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import type { LogLevel } from "effect"
import { Context, Effect, Either, Layer, Option, type Redacted } from "effect"
import * as NodeConfig from "../../config/NodeConfig.js"
import * as NodeFile from "../../domain/NodeFile.js"
import * as ApiTokenLive from "../../layers/node/ApiTokenLive.js"
import { LocalApi } from "../../node/Listeners.js"
import * as NodeLive from "../../node/NodeLive.js"
import { UsageError } from "../run.js"

export interface NodeSpec {
  readonly dir: string
  readonly port: number
  readonly controlPlaneUrl: string
  /** The service mesh-one runs behind this node. */
  readonly demo: NodeFile.ServiceSpec
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  readonly logLevel: LogLevel.LogLevel
}

export interface StartedNode {
  readonly url: string
  readonly tokenPath: string
  readonly socket: string
  readonly configPath: string
  /** Every service the node publishes: its configuration file's, and the demo unless the file declares it. */
  readonly services: ReadonlyArray<NodeFile.ServiceSpec>
}

const template = (
  demo: NodeFile.ServiceSpec,
) => `# This node's configuration, read by mesh-one at every start (Ctrl-C and \`npm start\` again to apply).
# mesh-one adds its demo service (${demo.type} service \`${demo.name}\`) itself; services you list here are published
# next to it. The keys are those of mesh-node.yaml (examples/ in the repository). For instance, uncommented, this
# runs the MCP reference server over stdio (npx fetches it from the npm registry on first use):
# services:
#   - name: everything
#     type: mcp
#     description: The MCP reference server
#     command: ["npx", "-y", "@modelcontextprotocol/server-everything"]
`

/** The file's settings with the demo service added, written first if there is no file yet. */
export const configuration = (configPath: string, demo: NodeFile.ServiceSpec) =>
  Effect.gen(function* () {
    mkdirSync(dirname(configPath), { recursive: true, mode: 0o700 })
    if (!existsSync(configPath)) writeFileSync(configPath, template(demo), { mode: 0o600 })
    const parsed = NodeFile.parse(readFileSync(configPath, "utf8"))
    if (Either.isLeft(parsed)) return yield* new UsageError({ message: `${configPath}: ${parsed.left}` })
    const file = parsed.right
    const declared = file.services.some((s) => s.type === demo.type && s.name === demo.name)
    return declared ? file : { ...file, services: [demo, ...file.services] }
  })

/** Builds the node in the current scope; it enrolls once and keeps its identity and API token in its folder. */
export const start = (spec: NodeSpec) =>
  Effect.gen(function* () {
    const configPath = join(spec.dir, NodeConfig.defaults.configFile)
    const file = yield* configuration(configPath, spec.demo)
    const token = yield* ApiTokenLive.resolve({
      path: Option.none(),
      fromEnvironment: Option.none(),
      dataDir: spec.dir,
    })
    const socket = NodeConfig.socketPathIn(spec.dir)
    const node = yield* Layer.build(
      NodeLive.layer(
        NodeConfig.make({
          controlPlaneUrl: Option.some(spec.controlPlaneUrl),
          dataDir: spec.dir,
          apiToken: token.token,
          apiTokenPath: token.path,
          bindAddress: Option.some({ host: "127.0.0.1", port: spec.port }),
          socketPath: Option.some(socket),
          bootstrapToken: spec.bootstrapToken,
          file,
          logLevel: spec.logLevel,
        }),
      ),
    )
    const port = Option.getOrElse(
      Option.map(Context.get(node, LocalApi).tcp, (a) => a.port),
      () => spec.port,
    )
    return {
      url: `http://127.0.0.1:${port}`,
      tokenPath: join(spec.dir, NodeConfig.defaults.apiTokenFile),
      socket,
      configPath,
      services: file.services,
    } satisfies StartedNode
  })
