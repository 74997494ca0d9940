/**
 * A node's local API over its Unix socket: what the node serves its own machine without a token (mode 0600), and
 * what a test reaches across a network namespace, since a socket path is a file, not an address.
 */
import { Effect } from "effect"
import { Agent, fetch } from "undici"

export interface Endpoint {
  readonly socketPath: string
}

const agents = new Map<string, Agent>()

/** One connection pool per socket. */
export const agentFor = (endpoint: Endpoint): Agent => {
  let agent = agents.get(endpoint.socketPath)
  if (agent === undefined) {
    agent = new Agent({ connect: { socketPath: endpoint.socketPath } })
    agents.set(endpoint.socketPath, agent)
  }
  return agent
}

/** A `fetch` bound to the node's socket, for clients (MCP, OpenAI) that take one; the URL's host is ignored. */
export const fetchFor =
  (endpoint: Endpoint): typeof globalThis.fetch =>
  (input, init) =>
    fetch(input as string, { ...(init as object), dispatcher: agentFor(endpoint) }) as unknown as Promise<Response>

/** The base URL clients are given; requests go to the socket whatever it says. */
export const BASE = "http://localhost"

export const request = (endpoint: Endpoint, path: string, init: { method?: string; body?: string } = {}) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(`${BASE}${path}`, {
        ...init,
        ...(init.body === undefined ? {} : { headers: { "content-type": "application/json" } }),
        dispatcher: agentFor(endpoint),
        signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)]),
      })
      return { status: response.status, body: await response.text() }
    },
    catch: (error) => new Error(`${path} over ${endpoint.socketPath}: ${String(error)}`),
  })

export const json = <A>(endpoint: Endpoint, path: string) =>
  Effect.flatMap(request(endpoint, path), (answer) =>
    answer.status === 200
      ? Effect.try({ try: () => JSON.parse(answer.body) as A, catch: (e) => new Error(String(e)) })
      : Effect.fail(new Error(`${path}: ${answer.status} ${answer.body.slice(0, 300)}`)),
  )
