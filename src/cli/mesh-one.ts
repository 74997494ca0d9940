/**
 * `mesh-one`: the whole mesh on this machine for development. A control plane on sqlite under a data folder, an
 * admin token generated once and kept there (0600), a development OIDC issuer on loopback so `--issuer` has a real
 * target, a router enrolled against it, and two nodes: node A publishes the demo MCP server, node B the demo
 * inference provider, both shipped in src/demo/ and run in this process. A development policy (first start only)
 * lets nodes call every service, so each node reaches the other's demo across the mesh.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as HttpServer from "@effect/platform/HttpServer"
import { Console, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import type { JWK } from "jose"
import * as ControlPlaneConfig from "../config/ControlPlaneConfig.js"
import * as RouterConfig from "../config/RouterConfig.js"
import * as DemoInference from "../demo/DemoInference.js"
import * as DemoMcpServer from "../demo/DemoMcpServer.js"
import { NODE_ROLE, ROUTER_ROLE } from "../domain/Policy.js"
import * as ControlPlaneLive from "../layers/ControlPlaneLive.js"
import * as Logging from "../layers/Logging.js"
import * as Tracing from "../layers/observability/Tracing.js"
import * as RouterLive from "../layers/router/RouterLive.js"
import { BootstrapTokens } from "../services/enrollment/BootstrapTokens.js"
import { MeshHost } from "../services/mesh/MeshHost.js"
import { OPERATOR } from "../services/operations/Audit.js"
import { Policy } from "../services/policy/Policy.js"
import * as DevOidcIssuer from "../testing/DevOidcIssuer.js"
import * as Flag from "./flags.js"
import * as Banner from "./one/Banner.js"
import * as Nodes from "./one/Nodes.js"
import * as Ports from "./one/Ports.js"
import * as Ready from "./one/Ready.js"

const port = (name: string, fallback: number, what: string) =>
  Options.integer(name).pipe(
    Options.withPseudoName("port"),
    Options.withDefault(fallback),
    Options.withDescription(`${what} port on 127.0.0.1 (0: any free port). Default: ${fallback}.`),
  )

const flags = {
  dataDir: Flag.text("data-dir", {
    env: "MESH_ONE_DATA_DIR",
    fallback: ".mesh-one",
    description: "Folder for the database, the admin token, the issuer's keys and each node's folder.",
  }),
  port: port("port", 8080, "Control plane"),
  routerPort: port("router-port", 4001, "Router libp2p"),
  nodePort: port("node-port", 8081, "Node A's local API"),
  nodeBPort: port("node-b-port", 8082, "Node B's local API"),
  issuerPort: port("issuer-port", 8090, "Development OIDC issuer"),
  demoMcpPort: port("demo-mcp-port", 8091, "Demo MCP server (behind node A)"),
  demoInferencePort: port("demo-inference-port", 8092, "Demo inference provider (behind node B)"),
  logLevel: Flag.logLevel,
}

/** How long the nodes get to find each other's demo service before the commands are printed anyway. */
const READY_WITHIN = Duration.seconds(90)

/** A secret file created once with mode 0600 and read back on later starts. */
const secretFile = (path: string, create: () => string): string => {
  if (existsSync(path)) return readFileSync(path, "utf8").trim()
  const value = create()
  writeFileSync(path, `${value}\n`, { mode: 0o600 })
  return value
}

/** A bootstrap token straight from the control plane's own service (no admin round trip), for a first start. */
const firstToken = (controlPlane: Context.Context<BootstrapTokens>, role: string, dataDir: string) =>
  existsSync(join(dataDir, "credential.json"))
    ? Effect.succeed(Option.none())
    : Context.get(controlPlane, BootstrapTokens)
        .mint({
          role,
          ttlHours: 1,
          maxUsages: 1,
          description: `mesh-one ${role === ROUTER_ROLE ? "router" : "node"}`,
          autonomousRecovery: true,
          ownerId: undefined,
          actor: OPERATOR,
        })
        .pipe(Effect.map((minted) => Option.some(Redacted.make(minted.secret))))

/** On a control plane that never had a policy: nodes may carry any label and call any service on any peer. */
const developmentPolicy = (controlPlane: Context.Context<Policy>) => {
  const policy = Context.get(controlPlane, Policy)
  return Effect.flatMap(policy.current, (snapshot) =>
    snapshot.version > 0
      ? Effect.void
      : policy.replace(
          {
            roles: [
              {
                name: NODE_ROLE,
                description: "mesh-one: every node may call every service (development only)",
                allowedLabels: ["*"],
                allowedServices: ["*"],
                allowedTargets: ["*"],
              },
            ],
            bindings: [],
          },
          OPERATOR,
        ),
  )
}

const progress = (what: string, where: string) => Console.log(`  started ${what.padEnd(24)}${where}`)

export const meshOne = Command.make("mesh-one", flags, (options) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* Ports.check([
        { port: options.port, flag: "port", what: "control plane" },
        { port: options.routerPort, flag: "router-port", what: "router" },
        { port: options.nodePort, flag: "node-port", what: "node A" },
        { port: options.nodeBPort, flag: "node-b-port", what: "node B" },
        { port: options.issuerPort, flag: "issuer-port", what: "OIDC issuer" },
        { port: options.demoMcpPort, flag: "demo-mcp-port", what: "demo MCP server" },
        { port: options.demoInferencePort, flag: "demo-inference-port", what: "demo inference provider" },
      ])
      const dir = resolve(options.dataDir)
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      yield* Console.log(`mesh-one: starting a development mesh in ${Banner.shownFrom(dir)}`)
      const adminToken = secretFile(join(dir, "admin-token"), () => randomBytes(32).toString("hex"))
      const issuerKeys = JSON.parse(secretFile(join(dir, "oidc-issuer-keys.json"), () => "[]")) as ReadonlyArray<JWK>
      const issuer = yield* DevOidcIssuer.make({ port: options.issuerPort, keys: issuerKeys })
      if (issuerKeys.length === 0) {
        writeFileSync(join(dir, "oidc-issuer-keys.json"), JSON.stringify(yield* issuer.exportKeys), { mode: 0o600 })
      }
      yield* progress("OIDC issuer", issuer.url)
      const settings = ControlPlaneConfig.make({
        issuers: [issuer.url],
        database: { driver: "sqlite", dsn: Redacted.make(join(dir, "control-plane.db")) },
        bindAddress: { host: "127.0.0.1", port: options.port },
        adminToken: Option.some(Redacted.make(adminToken)),
        autoApproveEnrollment: true,
        logLevel: options.logLevel,
      })
      const controlPlane = yield* Layer.build(ControlPlaneLive.layer(settings))
      const address = Context.get(controlPlane, HttpServer.HttpServer).address
      const cpUrl = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : options.port}`
      yield* developmentPolicy(controlPlane)
      yield* progress("control plane", cpUrl)
      // The router and the nodes enroll once with a token minted here; later starts reuse their key and credential.
      const routerDir = join(dir, "router")
      const router = yield* Layer.build(
        RouterLive.layer(
          RouterConfig.make({
            controlPlaneUrl: cpUrl,
            listen: [`/ip4/127.0.0.1/tcp/${options.routerPort}`],
            dataDir: Option.some(routerDir),
            bootstrapToken: yield* firstToken(controlPlane, ROUTER_ROLE, routerDir),
            logLevel: options.logLevel,
          }),
        ),
      )
      const routers = yield* Context.get(router, MeshHost).addresses
      yield* progress("router", routers.join(" "))
      const inUse = (flag: string, what: string) =>
        Effect.mapError(
          (e: { readonly port: number }) =>
            new Ports.PortTaken({
              message: `port ${e.port} (${what}) is taken; choose another with --${flag} <port>`,
            }),
        )
      const demoMcp = yield* DemoMcpServer.make(options.demoMcpPort).pipe(inUse("demo-mcp-port", "demo MCP server"))
      yield* progress("demo MCP server", demoMcp)
      const demoInference = yield* DemoInference.make(options.demoInferencePort).pipe(
        inUse("demo-inference-port", "demo inference provider"),
      )
      yield* progress("demo inference provider", `${demoInference}/v1`)
      const nodeDir = (name: string) => join(dir, name)
      const node = (name: string, nodePort: number, demo: Nodes.NodeSpec["demo"]) =>
        Effect.flatMap(firstToken(controlPlane, NODE_ROLE, nodeDir(name)), (bootstrapToken) =>
          Nodes.start({
            dir: nodeDir(name),
            port: nodePort,
            controlPlaneUrl: cpUrl,
            demo,
            bootstrapToken,
            logLevel: options.logLevel,
          }),
        )
      const a = yield* node("node-a", options.nodePort, {
        name: DemoMcpServer.SERVICE_NAME,
        type: "mcp",
        description: "mesh-one's demo tools: word_count, sha256",
        target_url: demoMcp,
        env: {},
      })
      yield* progress("node A", a.url)
      const b = yield* node("node-b", options.nodeBPort, {
        name: DemoInference.SERVICE_NAME,
        type: "inference",
        description: `mesh-one's demo model: ${DemoInference.MODEL}`,
        target_url: demoInference,
        env: {},
      })
      yield* progress("node B", b.url)
      yield* Console.log("  waiting for each node to find the other's demo service across the mesh...")
      const token = (n: Nodes.StartedNode) => readFileSync(n.tokenPath, "utf8").trim()
      const ready = yield* Effect.all(
        [
          Ready.discovers(b, token(b), "mcp", DemoMcpServer.SERVICE_NAME, READY_WITHIN),
          Ready.lists(a, token(a), DemoInference.MODEL, READY_WITHIN),
        ],
        { concurrency: "unbounded" },
      )
      yield* Console.log(
        ready.every((ok) => ok)
          ? "  ready: node B sees mcp://demo on node A, node A sees the model on node B"
          : "  not ready yet: the commands below may fail for a moment (see the nodes' log lines)",
      )
      yield* Console.log(
        Banner.render({
          dataDir: dir,
          controlPlane: cpUrl,
          issuer: issuer.url,
          routers,
          a,
          b,
          demoMcp,
          demoInference,
          examples: join(import.meta.dirname, "..", "..", "examples", "try"),
        }),
      )
      return yield* Effect.never
    }),
  ).pipe(Effect.provide(Layer.merge(Logging.layerFromConfig(options.logLevel), Tracing.fromConfig("mesh-one")))),
).pipe(
  Command.withDescription(
    "Run a development mesh on this machine: control plane, router, OIDC issuer, and two nodes with demo services.",
  ),
)
