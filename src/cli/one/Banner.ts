/**
 * What mesh-one prints once the mesh is up: every address, each node's API token, socket and configuration file, and
 * three commands to try, each through the node that does NOT host the service so that the call crosses the mesh.
 * Paths under the working folder are shown relative to it, so the commands stay short and copyable.
 */
import { isAbsolute, join, relative } from "node:path"
import type { StartedNode } from "./Nodes.js"

export interface Mesh {
  readonly dataDir: string
  readonly controlPlane: string
  readonly issuer: string
  readonly routers: ReadonlyArray<string>
  readonly a: StartedNode
  readonly b: StartedNode
  readonly demoMcp: string
  readonly demoInference: string
  /** The folder holding the `try` scripts (examples/try in the repository). */
  readonly examples: string
  /** Where the commands will be typed; paths below it are shown relative to it. Default: the working folder. */
  readonly cwd?: string
}

/** A path as the user would type it from where mesh-one runs, quoted for sh when it needs to be. */
export const shownFrom = (path: string, cwd = process.cwd()): string => {
  const rel = relative(cwd, path)
  const text = rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path
  return /^[\w./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`
}

/** The three commands, in order: an MCP client on B calling A's tool; A's model list; a chat on A answered by B. */
export const commands = (mesh: Mesh): ReadonlyArray<readonly [string, string]> => {
  const shown = (path: string) => shownFrom(path, mesh.cwd)
  return [
    [
      "an MCP client on node B finds node A's demo tools and calls them (call_remote_tool)",
      `MESH_API_TOKEN="$(cat ${shown(mesh.b.tokenPath)})" npx tsx ${shown(join(mesh.examples, "call-tool.ts"))} ${mesh.b.url}/mcp`,
    ],
    [
      "node A lists the models of the mesh: node B's provider serves mesh-demo",
      `curl -s -H "Authorization: Bearer $(cat ${shown(mesh.a.tokenPath)})" ${mesh.a.url}/v1/models`,
    ],
    [
      "the OpenAI SDK on node A: a streamed chat completion, answered by node B",
      `OPENAI_BASE_URL=${mesh.a.url}/v1 OPENAI_API_KEY="$(cat ${shown(mesh.a.tokenPath)})" npx tsx ${shown(join(mesh.examples, "chat.ts"))}`,
    ],
  ]
}

/** `mcp://demo (what it is)`: a service as the mesh names it, with its description. */
const service = (s: StartedNode["services"][number]) =>
  `${s.type}://${s.name}${s.description === "" ? "" : ` (${s.description})`}`

/** One line per service the node publishes, the first beside its address: the demo and any the user added. */
const node = (name: string, n: StartedNode, shown: (path: string) => string) => [
  ...(n.services.length === 0 ? [""] : n.services.map((s) => `publishes ${service(s)}`)).map((serves, i) =>
    i === 0 ? `  ${name.padEnd(16)}${n.url.padEnd(30)}${serves}` : `  ${"".padEnd(16)}${"".padEnd(30)}${serves}`,
  ),
  `    API token     ${shown(n.tokenPath)}   (mode 0600)`,
  `    socket        ${shown(n.socket)}   (no token needed)`,
  `    config        ${shown(n.configPath)}`,
]

export const render = (mesh: Mesh): string => {
  const shown = (path: string) => shownFrom(path, mesh.cwd)
  return [
    "",
    "mesh-one: a development mesh on this machine",
    "",
    `  ${"control plane".padEnd(16)}${mesh.controlPlane.padEnd(30)}sqlite ${shown(join(mesh.dataDir, "control-plane.db"))}`,
    `  ${"console".padEnd(16)}${mesh.controlPlane}/console   (the admin token, or any user through the issuer)`,
    `  ${"OIDC issuer".padEnd(16)}${mesh.issuer.padEnd(30)}DEVELOPMENT ONLY: it signs an ID token for anyone`,
    `  ${"admin token".padEnd(16)}${shown(join(mesh.dataDir, "admin-token"))}`,
    `  ${"router".padEnd(16)}${mesh.routers.join(" ")}`,
    ...node("node A", mesh.a, shown),
    ...node("node B", mesh.b, shown),
    `  ${"demo tools".padEnd(16)}${mesh.demoMcp.padEnd(30)}the MCP server behind node A`,
    `  ${"demo model".padEnd(16)}${`${mesh.demoInference}/v1`.padEnd(30)}the OpenAI-compatible server behind node B`,
    "",
    "Try it (each goes to the node that does not host the service, so it crosses the mesh):",
    ...commands(mesh).flatMap(([what, command], i) => [`  # ${i + 1}. ${what}`, `  ${command}`]),
    "",
    `Press Ctrl-C to stop; state stays in ${shown(mesh.dataDir)}.`,
    "",
  ].join("\n")
}
