/** Requests to a node's local API, over TCP (with or without its token) or over its Unix socket. */
import { Duration, Effect, Schedule } from "effect"
import type { NodeHarness } from "../../src/testing/NodeHarness.js"
import { socketFetch } from "../../src/testing/SocketFetch.js"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
}

const read = (response: Response): Promise<Reply> =>
  response.text().then((text) => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, headers: response.headers, text, json }
  })

export const tokenHeader = (node: NodeHarness) => ({ "x-mesh-authentication": `Bearer ${node.apiToken}` })

/** Over TCP; `headers` replace the default token header when given. */
export const tcp = (node: NodeHarness, path: string, init: RequestInit = {}) =>
  Effect.promise(() => fetch(`${node.url}${path}`, { ...init, headers: init.headers ?? tokenHeader(node) }).then(read))

export const socket = (node: NodeHarness, path: string, init: RequestInit = {}) =>
  Effect.promise(() => socketFetch(node.socketPath)(`http://node${path}`, init).then(read))

/** Polls until `predicate` holds, for up to `seconds`; fails the test otherwise. */
export const eventually = <A, R>(seconds: number, effect: Effect.Effect<A, never, R>, predicate: (a: A) => boolean) =>
  effect.pipe(
    Effect.filterOrFail(predicate, () => "not yet"),
    Effect.retry(Schedule.spaced(Duration.millis(100)).pipe(Schedule.upTo(Duration.seconds(seconds)))),
    Effect.orDieWith(() => new Error(`condition not met within ${seconds} s`)),
  )

export const mcpInitialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } },
}

export const mcpHeaders = (node: NodeHarness) => ({
  ...tokenHeader(node),
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
})
