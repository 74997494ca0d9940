/**
 * Federation over the mesh: a fiber runs a Round every REFRESH while `federate:` has rules, with what the last rounds
 * learnt (Memory: it decides which remote work a round does), and keeps the result in a SubscriptionRef; `changes`
 * emits when the listed names or listings differ from the last. A call ranks the tool's providers as inference
 * ranks its own (the operator's floor, cooldowns, load, the least loaded rotated) and goes through RemoteCall, as
 * `call_remote_tool` does; a provider that cannot be reached is benched and the next tried. A provider whose call
 * failed is forgotten, so the next round confirms it again before it is listed. Only providers whose definition tool
 * pinning lets be chosen now are called (Routable): shadowing is refused at every call, not only at every round.
 */
import { Clock, Duration, Effect, Either, Layer, Option, Ref, Stream, SubscriptionRef } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import * as FederationRules from "../../domain/Federation.js"
import * as Inference from "../../domain/Inference.js"
import { type FederatedTool, Federation } from "../../services/federation/Federation.js"
import { FederationScope } from "../../services/federation/FederationScope.js"
import { isInputRequired, type PeerMcp, type PeerMcpError, type Progress } from "../../services/mcp/PeerMcp.js"
import type { MeshHost } from "../../services/mesh/MeshHost.js"
import { Metrics } from "../../services/operations/Metrics.js"
import type { ToolPinning } from "../../services/toolpinning/ToolPinning.js"
import * as Cooldowns from "../inference/Cooldowns.js"
import * as InputRequiredView from "../mcp/InputRequiredView.js"
import * as PinCheck from "../mcp/PinCheck.js"
import * as RemoteCall from "../mcp/RemoteCall.js"
import * as ToolResult from "../mcp/ToolResult.js"
import * as FederationMetrics from "./FederationMetrics.js"
import * as Memory from "./Memory.js"
import * as Round from "./Round.js"
import * as Routable from "./Routable.js"

/**
 * Under the gossip announcement interval (10 s), so a provider that goes away, or announces other tools, is seen
 * within it. Cheap: a round reads gossip and the connections; what it asks of the network Memory bounds.
 */
export const REFRESH = Duration.seconds(3)
/** Providers tried for one call, at most. */
const MAX_ATTEMPTS = 3
/** Failed calls' providers kept for the next round, at most (the latest): a round drains them. */
const MAX_FAILED = 256

/** What clients see of the list: names and listings, not who serves them. */
const fingerprint = (tools: ReadonlyArray<FederatedTool>) => JSON.stringify(tools.map((t) => t.definition))

const outcomeOf = (error: PeerMcpError): FederationMetrics.Outcome =>
  error.reason === "refused" ? "refused" : error.reason === "unreachable" ? "unreachable" : "failed"

export const layer = Layer.scoped(
  Federation,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const scope = yield* FederationScope
    const rules = FederationRules.rulesOf(settings.file)
    const floor = settings.file.egress.require_labels
    const metrics = FederationMetrics.make(yield* Metrics)
    const tools = yield* SubscriptionRef.make<ReadonlyArray<FederatedTool>>([])
    const cooldowns = yield* Cooldowns.make
    const turns = yield* Ref.make(0)
    const context = yield* Effect.context<MeshHost | PeerMcp | ToolPinning>()
    const memory = yield* Ref.make(Memory.empty)
    /** Providers (service, peer id) whose call failed since the last round. */
    const failed = yield* Ref.make<ReadonlyArray<readonly [string, string]>>([])

    if (rules.length > 0) {
      const round = Effect.gen(function* () {
        const forgotten = (yield* Ref.getAndSet(failed, [])).reduce(
          (m, [service, peerId]) => Memory.forget(m, service, peerId),
          yield* Ref.get(memory),
        )
        const next = yield* Round.run({ rules, floor, memory: forgotten, nowMs: yield* Clock.currentTimeMillis })
        yield* Ref.set(memory, next.memory)
        yield* SubscriptionRef.set(tools, next.tools)
        metrics.listed(next.tools.length)
      })
      yield* round.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("federation round failed", cause)),
        Effect.zipRight(Effect.sleep(REFRESH)),
        Effect.forever,
        Effect.forkScoped,
      )
    }

    const list = (caller: Parameters<typeof scope.visible>[0]) =>
      Effect.map(SubscriptionRef.get(tools), (all) => all.filter((tool) => scope.visible(caller, tool)))

    const call = (tool: FederatedTool, args: Readonly<Record<string, unknown>>, onProgress?: (p: Progress) => void) =>
      Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const done = (outcome: FederationMetrics.Outcome) =>
          Effect.map(Clock.currentTimeMillis, (now) => metrics.called(tool.name, outcome, (now - started) / 1000))
        const key = `${tool.service}/${tool.tool}`
        const routes = yield* Routable.providers(tool)
        const candidates = routes.providers.map(
          (p): Inference.Candidate => ({ ...p, service: tool.service, local: false }),
        )
        if (candidates.length === 0) {
          yield* done("refused")
          return ToolResult.refused(
            `refused: no provider of ${tool.name} offers a definition of ${tool.service}/${tool.tool} that tool pinning accepts now`,
          )
        }
        const ranking = Inference.rank(candidates, {
          model: key,
          required: undefined,
          floor,
          coolingUntil: yield* cooldowns.current,
          nowMs: started,
          turn: yield* Ref.getAndUpdate(turns, (n) => n + 1),
        })
        // Every provider benched: try them anyway, the least loaded first, rather than refuse outright.
        const ordered = ranking.ordered.length > 0 || ranking.refusedByLabels > 0 ? ranking.ordered : candidates
        if (ordered.length === 0) {
          yield* done("refused")
          return ToolResult.refused(`refused: no provider of ${tool.name} attests the egress floor's labels`)
        }
        const unreachable: Array<string> = []
        for (const candidate of ordered.slice(0, MAX_ATTEMPTS)) {
          const outcome = yield* Effect.either(
            RemoteCall.call(
              candidate.peerId,
              tool.service,
              tool.tool,
              args,
              onProgress === undefined ? {} : { onProgress },
            ),
          )
          if (Either.isRight(outcome)) {
            const result = outcome.right
            if (isInputRequired(result)) {
              // Answered through call_remote_tool, which takes the answers; the tool's own arguments cannot.
              yield* done("ok")
              return InputRequiredView.present(
                result,
                { peerId: candidate.peerId, toolName: `mcp://${tool.service}/${tool.tool}` },
                1,
              )
            }
            yield* done(result.isError === true ? "tool_error" : "ok")
            const changed = routes.changed.get(candidate.peerId)
            return changed === undefined
              ? result
              : { ...result, _meta: { ...result._meta, [PinCheck.META_KEY]: PinCheck.mark(changed) } }
          }
          const error = outcome.left
          yield* Ref.update(failed, (all) => [...all, [tool.service, candidate.peerId] as const].slice(-MAX_FAILED))
          if (error.reason !== "unreachable") {
            yield* done(outcomeOf(error))
            return ToolResult.refused(
              error.reason === "refused"
                ? `refused: ${error.message}`
                : `${tool.name} (${tool.service}/${tool.tool} on peer ${candidate.peerId}) failed: ${error.message}`,
            )
          }
          unreachable.push(`${candidate.peerId}: ${error.message}`)
          metrics.fellBack(tool.name)
          yield* cooldowns.bench(Inference.cooldownKey(candidate, key))
        }
        yield* done("unreachable")
        return ToolResult.refused(`${tool.name} could not be reached on any of its peers (${unreachable.join("; ")})`)
      }).pipe(Effect.provide(context))

    return Federation.of({
      list,
      lookup: (caller, name) =>
        Effect.map(list(caller), (all) => Option.fromNullable(all.find((t) => t.name === name))),
      call,
      changes: tools.changes.pipe(
        Stream.map(fingerprint),
        Stream.changes,
        Stream.drop(1),
        Stream.map(() => undefined),
      ),
    })
  }),
)
