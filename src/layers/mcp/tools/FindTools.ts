/**
 * `find_remote_tools`: tools of MCP services on peers, one row per tool (`mcp://<service>/<tool>` on a peer, its
 * description, the labels the peer's credential attests). Every row comes from a `tools/list` on the peer's service
 * (the session is kept for later calls), made by this call or by an earlier one while its listing is fresh by the
 * `ttlMs` the server gave (ToolListings). Three ways in:
 * - with `peer_id`: that peer's catalog, then each of its MCP services;
 * - with only a tool name: first the gossip announcements of that name (fresh ones, waited for up to GOSSIP_WAIT when
 *   this node just started listening), each candidate confirmed; the mesh-wide search runs meanwhile and answers
 *   when gossip confirms nothing;
 * - otherwise the mesh-wide search: the DHT's MCP providers, each one's catalog, each service's tools, a few peers
 *   at a time, each bounded in time.
 * A peer or service that cannot be asked is a row with `error`; the call itself never fails. In a mesh-wide search
 * for a tool name those rows are left out (they would bury the answer).
 *
 * Every listing asked of a peer also feeds the tool search index. With an `intent` (and no tool name), the tools
 * listed by this search are ranked by relevance to it (ToolSearch) and the best `limit` come back with their score,
 * before the rows of peers that could not be asked.
 */
import { Chunk, Duration, Effect, Either, Exit, Fiber, Option, Stream } from "effect"
import { z } from "zod"
import * as ToolName from "../../../domain/ToolName.js"
import { type Announcer, Discovery, type ProviderAnswer } from "../../../services/discovery/Discovery.js"
import { MeshHost } from "../../../services/mesh/MeshHost.js"
import { ToolListings } from "../../../services/toollistings/ToolListings.js"
import type { ToolPinning } from "../../../services/toolpinning/ToolPinning.js"
import { ToolSearch } from "../../../services/toolsearch/ToolSearch.js"
import * as AgentView from "../../agents/AgentView.js"
import * as Judged from "../../toolpinning/Judged.js"
import * as Tool from "../Tool.js"
import * as Peers from "./Peers.js"

/** One service's tools must be listed within this. */
const LIST_TIMEOUT = Duration.seconds(5)
/** Services listed at once. */
const CONCURRENCY = 8
/** How long a first lookup of a tool name waits for announcements to arrive. */
const GOSSIP_WAIT = Duration.seconds(3)
const GOSSIP_POLL = Duration.millis(100)
/** The mesh-wide search ends by then with what it found. */
const SEARCH_TIMEOUT = Duration.seconds(10)
/** Rows an intent search returns unless told otherwise, and at most. */
const DEFAULT_LIMIT = 10
const MAX_LIMIT = 50

interface Row {
  readonly peer_id: string
  readonly tool_name?: string
  readonly description?: string
  readonly labels?: Readonly<Record<string, string>>
  readonly pin?: "pinned" | "unpinned" | "changed"
  readonly fingerprint?: string
  readonly error?: string
  readonly score?: number
}

const isError = (row: Row) => row.error !== undefined

const byPeerAndTool = (a: Row, b: Row) =>
  a.peer_id === b.peer_id ? (a.tool_name ?? "").localeCompare(b.tool_name ?? "") : a.peer_id < b.peer_id ? -1 : 1

/** A changed definition that the mode hides is listed, marked, without its words: they are what changed. */
const toolRow = (
  peerId: string,
  service: string,
  { tool, judgement }: Judged.Judged,
  labels: Readonly<Record<string, string>>,
): Row => ({
  peer_id: peerId,
  tool_name: ToolName.format({ service, tool: tool.name }),
  ...(judgement.usable ? { description: tool.description ?? "" } : {}),
  labels,
  ...Judged.rowOf(judgement),
})

/** The tools of one service on a peer (only `tool`, when given), or a row saying why they could not be listed. */
const serviceRows = (
  peerId: string,
  service: string,
  labels: Readonly<Record<string, string>>,
  tool: string | undefined,
): Effect.Effect<ReadonlyArray<Row>, never, ToolListings | MeshHost | ToolSearch | ToolPinning> =>
  Effect.gen(function* () {
    const listed = yield* Effect.either((yield* ToolListings).get(peerId, service, LIST_TIMEOUT))
    const index = yield* ToolSearch
    if (Either.isLeft(listed)) {
      if (listed.left.reason === "not_found" || listed.left.reason === "refused") yield* index.forget(peerId, service)
      return [
        {
          peer_id: peerId,
          tool_name: `${ToolName.SCHEME}${service}`,
          error: `failed to list tools: ${listed.left.message}`,
        },
      ]
    }
    // Reached (now or while the listing is fresh), so authenticated: the labels its credential attests now.
    const peer = yield* (yield* MeshHost).peer(peerId)
    const attested = Option.match(peer, { onNone: () => labels, onSome: (p) => p.labels })
    const judged = yield* Judged.listing(peerId, attested, service, listed.right.tools, listed.right.fetched)
    // The index ranks only definitions agents may use: a changed one the mode hides is never a search's answer.
    if (listed.right.fetched) {
      yield* index.replace(
        peerId,
        service,
        judged.filter((j) => j.judgement.usable).map((j) => j.tool),
      )
    }
    return judged
      .filter((j) => tool === undefined || j.tool.name === tool)
      .map((j) => toolRow(peerId, service, j, attested))
  })

/** One peer: its catalog of MCP services, then the tools of each. */
const peerRows = (peerId: string, service: string | undefined, tool: string | undefined) =>
  Effect.gen(function* () {
    const catalog = yield* Effect.either((yield* Discovery).catalogOf(peerId, "mcp", service))
    if (Either.isLeft(catalog))
      return [{ peer_id: peerId, error: `failed to fetch the peer's catalog: ${catalog.left}` }]
    if (service !== undefined && catalog.right.length === 0) {
      return [
        {
          peer_id: peerId,
          tool_name: `${ToolName.SCHEME}${service}`,
          error: `the peer publishes no mcp service named ${service}`,
        },
      ]
    }
    const rows = yield* Effect.forEach(catalog.right, (s) => serviceRows(peerId, s.name, s.labels, tool), {
      concurrency: CONCURRENCY,
    })
    return rows.flat()
  })

/** The whole mesh: every MCP provider the DHT names, each asked as it comes in. */
const meshRows = (service: string | undefined, tool: string | undefined) =>
  Effect.gen(function* () {
    const discovery = yield* Discovery
    const seen = new Set<string>()
    const answer = (found: ProviderAnswer) =>
      Either.match(found.services, {
        onLeft: (
          reason,
        ): Effect.Effect<ReadonlyArray<Row>, never, ToolListings | MeshHost | ToolSearch | ToolPinning> =>
          Effect.succeed([{ peer_id: found.peerId, error: `failed to fetch the peer's catalog: ${reason}` }]),
        onRight: (services) =>
          Effect.map(
            Effect.forEach(services, (s) => serviceRows(found.peerId, s.name, s.labels, tool)),
            (rows) => rows.flat(),
          ),
      })
    const rows = yield* discovery
      .providers({ type: "mcp", ...(service === undefined ? {} : { name: service }), timeout: SEARCH_TIMEOUT })
      .pipe(
        // The DHT may name a provider more than once.
        Stream.filter((found) => {
          if (seen.has(found.peerId)) return false
          seen.add(found.peerId)
          return true
        }),
        Stream.mapEffect(answer, { concurrency: CONCURRENCY, unordered: true }),
        Stream.flattenIterables,
        Stream.runCollect,
      )
    return Chunk.toReadonlyArray(rows)
  })

/** Fresh announcers of the tool name, waiting a little for the first ones when nobody announced it yet. */
const announcers = (tool: string) =>
  Effect.gen(function* () {
    const discovery = yield* Discovery
    while (true) {
      const list = yield* discovery.announcers("mcp", tool)
      if (list.length > 0) return list
      yield* Effect.sleep(GOSSIP_POLL)
    }
  }).pipe(
    Effect.timeoutTo({
      duration: GOSSIP_WAIT,
      onTimeout: (): ReadonlyArray<Announcer> => [],
      onSuccess: (list) => list,
    }),
  )

/** The gossip path: announcers of the tool name, each confirmed by listing its service's tools; none confirmed, none. */
const gossipRows = (tool: string, service: string | undefined) =>
  Effect.gen(function* () {
    const candidates = new Map<string, Announcer>()
    for (const a of yield* announcers(tool)) {
      if (service === undefined || a.service === service) candidates.set(`${a.peerId}/${a.service}`, a)
    }
    const rows = yield* Effect.forEach(
      [...candidates.values()],
      (a) => serviceRows(a.peerId, a.service, a.labels, tool),
      {
        concurrency: CONCURRENCY,
      },
    )
    const confirmed = rows.flat().filter((row) => !isError(row))
    return confirmed.length > 0 ? Option.some(confirmed) : Option.none()
  })

/**
 * The listed tools ranked by relevance to the intent (the index holds what this search listed, and more), best
 * first, then the rows of services and peers that could not be asked.
 */
const ranked = (rows: ReadonlyArray<Row>, intent: string, limit: number) =>
  Effect.gen(function* () {
    const listed = new Map<string, Row>()
    const services = new Set<string>()
    for (const row of rows) {
      const name = ToolName.parse(row.tool_name ?? "")
      if (isError(row) || Either.isLeft(name)) continue
      listed.set(`${row.peer_id} ${row.tool_name}`, row)
      services.add(`${row.peer_id} ${name.right.service}`)
    }
    const hits = yield* (yield* ToolSearch).search(intent, {
      limit,
      keep: (peerId, service) => services.has(`${peerId} ${service}`),
    })
    const best = hits.flatMap((hit) => {
      const row = listed.get(`${hit.peerId} ${ToolName.format({ service: hit.service, tool: hit.tool })}`)
      return row === undefined ? [] : [{ ...row, score: hit.score }]
    })
    return [...best, ...rows.filter(isError).sort(byPeerAndTool)]
  })

/** A tool name only: gossip first, the mesh-wide search meanwhile; whichever has the answer first. */
const byToolName = (tool: string, service: string | undefined) =>
  Effect.raceWith(gossipRows(tool, service), meshRows(service, tool), {
    onSelfDone: (exit, mesh) =>
      Exit.isSuccess(exit) && Option.isSome(exit.value)
        ? Effect.as(Fiber.interrupt(mesh), exit.value.value)
        : Fiber.join(mesh),
    onOtherDone: (exit, gossip) =>
      Exit.isSuccess(exit) && exit.value.some((row) => !isError(row))
        ? Effect.as(Fiber.interrupt(gossip), exit.value)
        : Effect.flatMap(Fiber.join(gossip), (confirmed) =>
            Option.isSome(confirmed)
              ? Effect.succeed(confirmed.value)
              : Exit.isSuccess(exit)
                ? exit
                : Effect.succeed([]),
          ),
  })

export const tool = Tool.make({
  name: "find_remote_tools",
  title: "Find tools on other peers",
  description:
    "Tools of MCP services on other peers, each named mcp://<service>/<tool> and listed with its description, " +
    "the peer that serves it (peer_id) and the labels that peer's credential attests. Narrow the search with " +
    "peer_id, service_name (bare or mcp://<service>) and tool_name (the exact tool name, answered fast from the " +
    "mesh's announcements). With intent (what you want done, in your words) and no tool_name, the tools found are " +
    "ranked by relevance and the best `limit` come back with a score. A peer or service that cannot be asked " +
    "appears as a row with an error. Each tool's row says how its definition stands (pin): pinned (the mesh " +
    "policy approves it), unpinned (nothing approved yet; the first definition this node saw), or changed (not the " +
    "approved or first-seen one: its description is withheld and it cannot be called until an operator approves " +
    "it, unless this node only warns), with its fingerprint. Then use " +
    "describe_remote_tool for a tool's schemas and call_remote_tool to call it.",
  input: {
    peer_id: z.string().optional().describe("Only this peer's tools."),
    service_name: z.string().optional().describe("Only this MCP service: a bare name or mcp://<service>."),
    tool_name: z.string().optional().describe("Only tools with exactly this name (or mcp://<service>/<tool>)."),
    intent: z
      .string()
      .max(1024)
      .optional()
      .describe("What you want to do, in a few words: the tools are ranked by relevance to it."),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_LIMIT)
      .optional()
      .describe(`With intent: how many of the best tools to return (default ${DEFAULT_LIMIT}).`),
  },
  output: {
    tools: z.array(
      z.object({
        peer_id: z.string(),
        tool_name: z.string().optional(),
        description: z.string().optional(),
        labels: z.record(z.string(), z.string()).optional(),
        pin: z.enum(["pinned", "unpinned", "changed"]).optional(),
        fingerprint: z.string().optional(),
        error: z.string().optional(),
        score: z.number().optional(),
      }),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: true },
  run: (args) =>
    Effect.gen(function* () {
      const serviceArg =
        args.service_name === undefined || args.service_name.trim() === ""
          ? Either.right(undefined)
          : ToolName.parseService(args.service_name)
      if (Either.isLeft(serviceArg)) return Tool.refused(serviceArg.left)
      const toolArg =
        args.tool_name === undefined || args.tool_name.trim() === ""
          ? Either.right(undefined)
          : ToolName.parseQuery(args.tool_name)
      if (Either.isLeft(toolArg)) return Tool.refused(toolArg.left)
      const named = toolArg.right?.service
      if (named !== undefined && serviceArg.right !== undefined && named !== serviceArg.right) {
        return Tool.refused("tool_name names another service than service_name")
      }
      const service = serviceArg.right ?? named
      const toolName = toolArg.right?.tool
      const peerId = args.peer_id === undefined || args.peer_id.trim() === "" ? undefined : args.peer_id.trim()
      if (peerId !== undefined) {
        const refusal = yield* Peers.refusal(peerId)
        if (Option.isSome(refusal)) return Tool.refused(refusal.value)
      }
      const intent = args.intent?.trim() ?? ""
      const rows =
        peerId !== undefined
          ? yield* peerRows(peerId, service, toolName)
          : toolName !== undefined
            ? (yield* byToolName(toolName, service)).filter((row) => !isError(row))
            : yield* meshRows(service, undefined)
      const shown = yield* AgentView.keep(rows, (scope, row) => AgentView.toolVisible(scope, row.tool_name))
      if (intent !== "" && toolName === undefined) {
        return Tool.ok({ tools: yield* ranked(shown, intent, args.limit ?? DEFAULT_LIMIT) })
      }
      return Tool.ok({ tools: [...shown].sort(byPeerAndTool) })
    }),
})
