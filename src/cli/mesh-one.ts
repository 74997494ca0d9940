/**
 * `mesh-one`: the whole mesh on this machine for development. A control plane on sqlite under a data folder, an
 * admin token generated once and kept there (0600), and a development OIDC issuer on loopback so `--issuer` has a
 * real target, a router enrolled against it, and a node whose local API answers on loopback.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Command, Options } from "@effect/cli"
import { HttpServer } from "@effect/platform"
import { Console, Context, Effect, Layer, Option, Redacted } from "effect"
import type { JWK } from "jose"
import * as ControlPlaneConfig from "../config/ControlPlaneConfig.js"
import * as NodeConfig from "../config/NodeConfig.js"
import * as RouterConfig from "../config/RouterConfig.js"
import { NODE_ROLE, ROUTER_ROLE } from "../domain/Policy.js"
import * as ControlPlaneLive from "../layers/ControlPlaneLive.js"
import * as Logging from "../layers/Logging.js"
import * as NodeLive from "../layers/NodeLive.js"
import * as ApiTokenLive from "../layers/node/ApiTokenLive.js"
import * as Tracing from "../layers/observability/Tracing.js"
import * as RouterLive from "../layers/router/RouterLive.js"
import { LocalApi } from "../node/Listeners.js"
import { BootstrapTokens } from "../services/enrollment/BootstrapTokens.js"
import { MeshHost } from "../services/mesh/MeshHost.js"
import { OPERATOR } from "../services/operations/Audit.js"
import * as DevOidcIssuer from "../testing/DevOidcIssuer.js"
import * as Flag from "./flags.js"

const flags = {
  dataDir: Flag.text("data-dir", {
    env: "MESH_ONE_DATA_DIR",
    fallback: ".mesh-one",
    description: "Folder for the database, the admin token and the issuer's keys.",
  }),
  port: Options.integer("port").pipe(
    Options.withDefault(8080),
    Options.withDescription("Control plane port on 127.0.0.1. Default: 8080."),
  ),
  routerPort: Options.integer("router-port").pipe(
    Options.withDefault(4001),
    Options.withDescription("Router libp2p port on 127.0.0.1. Default: 4001."),
  ),
  nodePort: Options.integer("node-port").pipe(
    Options.withDefault(8081),
    Options.withDescription("The node's local API port on 127.0.0.1. Default: 8081."),
  ),
  issuerPort: Options.integer("issuer-port").pipe(
    Options.withDefault(8090),
    Options.withDescription("Development OIDC issuer port on 127.0.0.1. Default: 8090."),
  ),
  logLevel: Flag.logLevel,
}

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

const banner = (
  cp: string,
  issuer: string,
  dir: string,
  routers: ReadonlyArray<string>,
  node: { readonly url: string; readonly tokenPath: string; readonly socket: string },
) =>
  `
mesh-one: a development mesh on this machine

  control plane  ${cp}   (sqlite: ${join(dir, "control-plane.db")})
  console        ${cp}/console   (sign in with the admin token, or as any user through the issuer)
  router         ${routers.join(" ")}
  node           ${node.url}   (local API; socket ${node.socket})
  API token      ${node.tokenPath}   (mode 0600; the node's local API wants it on TCP)
  OIDC issuer    ${issuer}   DEVELOPMENT ONLY: it signs an ID token for anyone who asks
  admin token    ${join(dir, "admin-token")}   (mode 0600)

Try it:
  curl ${cp}/healthz
  curl -H "X-Mesh-Authentication: Bearer $(cat ${node.tokenPath})" ${node.url}/debug/mesh-info
  curl --unix-socket ${node.socket} http://node/mesh/identity

  # an ID token for a development user, from the development issuer
  curl -s -X POST ${issuer}/token -d '{"sub":"alice","email":"alice@example.com"}'

Press Ctrl-C to stop; state stays in ${dir}.
`

export const meshOne = Command.make("mesh-one", flags, (options) =>
  Effect.scoped(
    Effect.gen(function* () {
      const dir = resolve(options.dataDir)
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const adminToken = secretFile(join(dir, "admin-token"), () => randomBytes(32).toString("hex"))
      const issuerKeys = JSON.parse(secretFile(join(dir, "oidc-issuer-keys.json"), () => "[]")) as ReadonlyArray<JWK>
      const issuer = yield* DevOidcIssuer.make({ port: options.issuerPort, keys: issuerKeys })
      if (issuerKeys.length === 0) {
        writeFileSync(join(dir, "oidc-issuer-keys.json"), JSON.stringify(yield* issuer.exportKeys), { mode: 0o600 })
      }
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
      const port = address._tag === "TcpAddress" ? address.port : options.port
      const cpUrl = `http://127.0.0.1:${port}`
      // The router enrolls once with a router token minted here; later starts reuse its key and credential.
      const routerDir = join(dir, "router")
      const bootstrapToken = yield* firstToken(controlPlane, ROUTER_ROLE, routerDir)
      const router = yield* Layer.build(
        RouterLive.layer(
          RouterConfig.make({
            controlPlaneUrl: cpUrl,
            listen: [`/ip4/127.0.0.1/tcp/${options.routerPort}`],
            dataDir: Option.some(routerDir),
            bootstrapToken,
            logLevel: options.logLevel,
          }),
        ),
      )
      const routerAddresses = yield* Context.get(router, MeshHost).addresses
      // The node, like the router, enrolls once and keeps its identity (and its API token) in its folder.
      const nodeDir = join(dir, "node")
      const token = yield* ApiTokenLive.resolve({
        path: Option.none(),
        fromEnvironment: Option.none(),
        dataDir: nodeDir,
      })
      const socket = NodeConfig.socketPathIn(nodeDir)
      const node = yield* Layer.build(
        NodeLive.layer(
          NodeConfig.make({
            controlPlaneUrl: Option.some(cpUrl),
            dataDir: nodeDir,
            apiToken: token.token,
            apiTokenPath: token.path,
            bindAddress: Option.some({ host: "127.0.0.1", port: options.nodePort }),
            socketPath: Option.some(socket),
            bootstrapToken: yield* firstToken(controlPlane, NODE_ROLE, nodeDir),
            logLevel: options.logLevel,
          }),
        ),
      )
      const nodePort = Option.getOrElse(
        Option.map(Context.get(node, LocalApi).tcp, (a) => a.port),
        () => options.nodePort,
      )
      yield* Console.log(
        banner(cpUrl, issuer.url, dir, routerAddresses, {
          url: `http://127.0.0.1:${nodePort}`,
          tokenPath: join(nodeDir, "api-token"),
          socket,
        }),
      )
      return yield* Effect.never
    }),
  ).pipe(Effect.provide(Layer.merge(Logging.layerFromConfig(options.logLevel), Tracing.fromConfig("mesh-one")))),
).pipe(Command.withDescription("Run a development mesh on this machine: control plane, router, node and OIDC issuer."))
