/**
 * How a discovered service is shown to agents, the same by `GET /mesh/service/discover` and the MCP tool
 * `discover_remote_services`: `{peer_id, srv_name, srv_description, labels, local_proxy_url}`, plus a `note` on
 * inference rows (they are called over HTTP). `local_proxy_url` is this node's proxy path of the service, on the Host
 * the caller used to reach the node.
 */
import type { ServiceType } from "./ServiceType.js"

export const INFERENCE_NOTE =
  "Inference services are called over HTTP, not with call_remote_tool: send OpenAI-style requests to " +
  "local_proxy_url (e.g. local_proxy_url + /v1/chat/completions), or use this node's /v1 routes."

export interface Found {
  readonly peerId: string
  readonly type: ServiceType
  readonly name: string
  readonly description: string
  readonly labels: Readonly<Record<string, string>>
}

export interface Row {
  readonly peer_id: string
  readonly srv_name: string
  readonly srv_description: string
  readonly labels: Readonly<Record<string, string>>
  readonly local_proxy_url: string
  readonly note?: string
}

/** The Host the caller used, when it looks like one; proxy URLs are meant to be called the same way. */
const HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/
export const hostOf = (header: string | undefined): string =>
  header !== undefined && HOST.test(header) ? header : "localhost"

export const row = (service: Found, host: string): Row => ({
  peer_id: service.peerId,
  srv_name: service.name,
  srv_description: service.description,
  labels: service.labels,
  local_proxy_url: `http://${host}/mesh/${service.peerId}/${service.type}/${service.name}`,
  ...(service.type === "inference" ? { note: INFERENCE_NOTE } : {}),
})

/** The order of a collected answer: by peer id, then service name. */
export const byPeerAndName = (a: Found, b: Found): number =>
  a.peerId === b.peerId ? a.name.localeCompare(b.name) : a.peerId < b.peerId ? -1 : 1
