/**
 * One probe per kind of backend: does it answer, and what keys does it serve? An MCP server over HTTP is initialized
 * and asked for its tools (McpProbe, loaded with the MCP SDK on the first such probe), an inference backend for
 * `GET /v1/models`, an a2a agent for its card. Each probe is bounded by PROBE_TIMEOUT. A stdio MCP server (a
 * `command`) is run and asked for its tools by StdioServers, whose probe allows for a program's start-up.
 *
 * A backend that answers 401 or 403 is up: it wants the credential its callers send (the proxy passes
 * `Authorization` through), which the node does not have. It counts as answering, with no keys.
 */
import { Data, Duration, Effect, Either, Option, Schema } from "effect"
import type { ServiceSpec } from "../../domain/NodeFile.js"
import { MAX_KEY_LENGTH } from "../../domain/ServiceKeys.js"
import * as HttpGet from "../../http/HttpGet.js"
import { describe } from "../../platform/Describe.js"
import * as Lazy from "../../platform/Lazy.js"

export const PROBE_TIMEOUT = Duration.seconds(2)
/** Keys kept per service; announcements carry fewer (ServiceKeys.MAX_ANNOUNCE_KEYS). */
export const MAX_KEYS = 1024

/** The backend did not answer as its kind should; `reason` is short and holds no response body. */
export class ProbeFailed extends Data.TaggedError("ProbeFailed")<{ readonly reason: string }> {}

/** Lists the tools of a stdio MCP server by running it (StdioServers.tools); fails with a short reason. */
export type CommandProbe = (spec: ServiceSpec) => Effect.Effect<ReadonlyArray<string>, string>

/** Where a service's requests go: a URL, or a program this node runs (stdio MCP). */
export type Backend =
  | { readonly _tag: "Http"; readonly url: string }
  | { readonly _tag: "Command"; readonly argv: ReadonlyArray<string> }

export const backendOf = (spec: ServiceSpec): Backend =>
  spec.command !== undefined ? { _tag: "Command", argv: spec.command } : { _tag: "Http", url: spec.target_url ?? "" }

/** `target` with `path` appended to its own path (a target may live under a prefix). */
export const joinUrl = (target: string, path: string): string => {
  const url = new URL(target)
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`
  return url.toString()
}

/** Statuses of a backend that is up but wants its callers' credential. */
const wantsCredential = (status: number | undefined) => status === 401 || status === 403

/** Sorted, unique, of sane length, at most MAX_KEYS. */
const keysOf = (names: ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(names.filter((n) => n.length > 0 && n.length <= MAX_KEY_LENGTH))].sort().slice(0, MAX_KEYS)

/** The MCP probe, once the MCP SDK is loaded (the first time, outside the probe's PROBE_TIMEOUT). */
const mcpTools: Effect.Effect<(url: string) => Effect.Effect<ReadonlyArray<string>, ProbeFailed>> = Lazy.effect(
  () => import("./McpProbe.js"),
  (mcp) =>
    Effect.succeed((url: string) =>
      mcp.toolNames(url, MAX_KEYS).pipe(
        Effect.map(keysOf),
        Effect.mapError((error) => new ProbeFailed({ reason: describe(error) })),
      ),
    ),
)

/** GETs JSON from the backend; a 401 or 403 is none (up, but not for us to read). */
const getJson = (url: string, what: string): Effect.Effect<Option.Option<unknown>, ProbeFailed> =>
  HttpGet.getJson(url, { timeout: PROBE_TIMEOUT }).pipe(
    Effect.map(Option.some),
    Effect.catchAll((error) =>
      wantsCredential(error.status)
        ? Effect.succeedNone
        : Effect.fail(new ProbeFailed({ reason: `${what}: ${error.reason}` })),
    ),
  )

const ModelList = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

const modelIds = (url: string): Effect.Effect<ReadonlyArray<string>, ProbeFailed> =>
  Effect.flatMap(getJson(joinUrl(url, "/v1/models"), "GET /v1/models"), (body) =>
    Option.isNone(body)
      ? Effect.succeed([])
      : Either.match(Schema.decodeUnknownEither(ModelList)(body.value), {
          onLeft: () => Effect.fail(new ProbeFailed({ reason: "GET /v1/models: not an OpenAI model list" })),
          onRight: (list) => Effect.succeed(keysOf(list.data.map((m) => m.id))),
        }),
  )

const AgentCard = Schema.Struct({ name: Schema.String })

const agentCard = (url: string): Effect.Effect<ReadonlyArray<string>, ProbeFailed> =>
  Effect.flatMap(getJson(joinUrl(url, "/.well-known/agent-card.json"), "agent card"), (body) =>
    Option.isNone(body) || Schema.is(AgentCard)(body.value)
      ? Effect.succeed([])
      : Effect.fail(new ProbeFailed({ reason: "agent card: not an A2A agent card" })),
  )

/** A bug in a client library must not end the service's probe loop: it counts as a failed probe. */
const contained = <A>(effect: Effect.Effect<A, ProbeFailed>) =>
  effect.pipe(
    Effect.catchAllDefect((defect) =>
      Effect.zipRight(
        Effect.logError("backend probe failed unexpectedly", defect),
        Effect.fail(new ProbeFailed({ reason: "probe failed unexpectedly" })),
      ),
    ),
  )

/** Probes the service's backend: its keys (tool names, model ids; none for a2a) when it answers. */
export const probe = (spec: ServiceSpec, commands: CommandProbe): Effect.Effect<ReadonlyArray<string>, ProbeFailed> => {
  const backend = backendOf(spec)
  if (backend._tag === "Command") {
    return contained(
      Effect.suspend(() => commands(spec)).pipe(Effect.mapError((reason) => new ProbeFailed({ reason }))),
    )
  }
  const prober = spec.type === "mcp" ? mcpTools : Effect.succeed(spec.type === "inference" ? modelIds : agentCard)
  return contained(
    Effect.flatMap(prober, (run) =>
      Effect.suspend(() => run(backend.url)).pipe(
        Effect.timeoutFail({
          duration: PROBE_TIMEOUT,
          onTimeout: () => new ProbeFailed({ reason: "no answer within 2s" }),
        }),
      ),
    ),
  )
}
