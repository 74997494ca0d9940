/**
 * Federation as pure rules: which remote tools `federate:` in `mesh-node.yaml` asks for, the MCP tool name each
 * gets on this node, and what its listing says. Nothing here does I/O.
 *
 * Names: `<service>__<tool>`, every character outside `A-Z a-z 0-9 _ . -` replaced by `_`, at most 128 characters
 * (the charset and length MCP recommends for tool names). When that name had to be changed (a character replaced,
 * or longer than 128), or two different (service, tool) pairs would get the same unchanged name (service names may
 * hold `_`: `a__b` + `c` and `a` + `b__c`), the pair gets instead the first 119 characters and `_` plus eight hex
 * digits of the SHA-256 of `<service>/<tool>`. So a name depends only on its pair, except in that one clash, and is
 * the same on every node and across restarts. One entry per (service, tool): peers serving the
 * same service share it, and calls go to the best of them. The node's own tools have no `__`, so never clash.
 */
import { createHash } from "node:crypto"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import * as Labels from "./Labels.js"
import type { NodeFile } from "./NodeFile.js"

/** The longest tool name MCP clients are asked to accept. */
export const MAX_NAME = 128
const HASH_DIGITS = 8
export const SEPARATOR = "__"
/** A peer's description, after our prefix, is cut to this many characters. */
export const MAX_DESCRIPTION = 1024

export interface Rule {
  readonly service: string
  /** Only this tool of the service; every tool when absent. */
  readonly tool?: string
  /** The serving peer's credential must attest every pair. */
  readonly labels: Readonly<Record<string, string>>
}

/** The rules of `federate:`, as decoded (patterns checked there). */
export const rulesOf = (file: NodeFile): ReadonlyArray<Rule> =>
  (file.federate ?? []).map((entry) => {
    const pattern = typeof entry === "string" ? entry : entry.tools
    const rest = pattern.slice("mcp://".length)
    const slash = rest.indexOf("/")
    const labels = typeof entry === "string" ? {} : entry.peer_labels
    return slash === -1
      ? { service: rest, labels }
      : { service: rest.slice(0, slash), tool: rest.slice(slash + 1), labels }
  })

/** Whether a rule asks for the tool of the service on a peer attesting these labels. */
export const wanted = (
  rules: ReadonlyArray<Rule>,
  service: string,
  tool: string,
  peerLabels: Readonly<Record<string, string>>,
): boolean =>
  rules.some(
    (rule) =>
      rule.service === service &&
      (rule.tool === undefined || rule.tool === tool) &&
      Labels.missing(peerLabels, rule.labels).length === 0,
  )

const plain = (service: string, tool: string): string =>
  `${service}${SEPARATOR}${tool}`.replace(/[^A-Za-z0-9_.-]/g, "_")

const hashed = (service: string, tool: string): string =>
  `${plain(service, tool).slice(0, MAX_NAME - HASH_DIGITS - 1)}_${createHash("sha256")
    .update(`${service}/${tool}`, "utf8")
    .digest("hex")
    .slice(0, HASH_DIGITS)}`

const pairKey = (service: string, tool: string) => `${service}/${tool}`

/** The name of each (service, tool) pair, by `<service>/<tool>`. */
export const names = (
  pairs: ReadonlyArray<{ readonly service: string; readonly tool: string }>,
): ReadonlyMap<string, string> => {
  const exact = (service: string, tool: string) => {
    const name = plain(service, tool)
    return name === `${service}${SEPARATOR}${tool}` && name.length <= MAX_NAME ? name : undefined
  }
  // Only unchanged names can clash (`a__b` + `c` and `a` + `b__c`); changed ones carry a hash anyway.
  const claims = new Map<string, number>()
  for (const { service, tool } of pairs) {
    const name = exact(service, tool)
    if (name !== undefined) claims.set(name, (claims.get(name) ?? 0) + 1)
  }
  const result = new Map<string, string>()
  for (const { service, tool } of pairs) {
    const name = exact(service, tool)
    result.set(pairKey(service, tool), name !== undefined && claims.get(name) === 1 ? name : hashed(service, tool))
  }
  return result
}

export const nameOf = (map: ReadonlyMap<string, string>, service: string, tool: string): string | undefined =>
  map.get(pairKey(service, tool))

/**
 * The tool as this node lists it: our name, a description that says where it comes from (and, when `changed`, that
 * its definition is not the pinned one: tool pinning only warns), the peer's words after it (cut to
 * MAX_DESCRIPTION), the peer's schemas unchanged (PeerTools capped them when they were listed).
 */
export const definition = (name: string, service: string, peerId: string, tool: Tool, changed = false): Tool => {
  const theirs = (tool.description ?? "").slice(0, MAX_DESCRIPTION)
  const mark = changed ? "; definition changed, not approved" : ""
  return {
    name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: `[mesh: ${service} on peer ${peerId}${mark}]${theirs === "" ? "" : ` ${theirs}`}`,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema }),
  }
}
