/**
 * ToolPinning over the node's policy copy (PolicyView), its first-use pins (FirstUsePins) and its configuration
 * (`tool_pinning` of the node and of each `federate:` entry). A changed definition is logged and counted once per
 * (peer, tool, fingerprint) — never with its text, which is the peer's and may be hostile — and judged again on every
 * listing, so an approval in the policy applies at the next one.
 */
import { Clock, Effect, Layer, Option, Ref, SynchronizedRef } from "effect"
import { NodeConfig } from "../../config/NodeConfig.js"
import type * as ToolFingerprint from "../../domain/ToolFingerprint.js"
import * as ToolName from "../../domain/ToolName.js"
import * as ToolPinningRules from "../../domain/ToolPinning.js"
import { PolicyView } from "../../services/node/PolicyView.js"
import { Metrics } from "../../services/operations/Metrics.js"
import { type Drift, DriftReporter } from "../../services/tooldrift/DriftReporter.js"
import { type Provided, ToolPinning } from "../../services/toolpinning/ToolPinning.js"
import * as Fingerprints from "./Fingerprints.js"
import * as FirstUsePins from "./FirstUsePins.js"
import * as Latest from "./Latest.js"
import * as PinsByTool from "./PinsByTool.js"

/** Drift already reported; forgotten whole past this many, so a flood of definitions cannot grow it. */
const MAX_REPORTED = 10_000

export const layer = Layer.effect(
  ToolPinning,
  Effect.gen(function* () {
    const settings = yield* NodeConfig
    const policy = yield* PolicyView
    const metrics = yield* Metrics
    const drift = metrics.counter(
      "mesh_node_tool_drift_total",
      "Tool definitions from peers that differ from the pinned one, by what they were held against (policy, first_use) and the mode (enforce, warn).",
    )
    const pins = yield* SynchronizedRef.make(yield* FirstUsePins.load(settings.dataDir))
    const reported = yield* Ref.make<ReadonlySet<string>>(new Set())
    // Where the node has one (a member), drift goes to the control plane and pinned definitions are kept for its diffs.
    const reporter = yield* Effect.serviceOption(DriftReporter)
    const latest = yield* Ref.make(Latest.empty)

    const nodeMode = settings.file.tool_pinning ?? ToolPinningRules.DEFAULT_MODE
    const modes = new Map<string, ToolPinningRules.Mode>()
    for (const entry of settings.file.federate ?? []) {
      if (typeof entry === "string" || entry.tool_pinning === undefined) continue
      const service = entry.tools.slice(ToolName.SCHEME.length).split("/")[0] ?? ""
      modes.set(service, entry.tool_pinning)
    }
    const modeOf = (service: string): ToolPinningRules.Mode => modes.get(service) ?? nodeMode

    /** This node's first-use pin of `tool`, taking it now when there is none. */
    const firstUse = (
      tool: string,
      fingerprint: ToolFingerprint.Fingerprint,
      peer: string,
      mode: ToolPinningRules.Mode,
    ) =>
      // Read first: the pin is there on every judgement but the first, and taking the lock costs more than the rest.
      Effect.flatMap(SynchronizedRef.get(pins), (seen) => {
        const known = seen.get(tool)
        if (known !== undefined || mode === "off") return Effect.succeed(known?.fingerprint)
        return SynchronizedRef.modifyEffect(pins, (held) => {
          const found = held.get(tool)
          if (found !== undefined) return Effect.succeed([found.fingerprint, held] as const)
          if (held.size >= FirstUsePins.MAX_PINS) {
            return Effect.as(Effect.logWarning("tool pins full; no first-use pin taken"), [undefined, held] as const)
          }
          return Effect.gen(function* () {
            const next = new Map(held)
            next.set(tool, { fingerprint, peer, at: yield* Clock.currentTimeMillis })
            yield* FirstUsePins.save(settings.dataDir, next)
            return [fingerprint, next] as const
          })
        })
      })

    const noteDrift = (
      key: string,
      fields: Record<string, unknown>,
      judgement: ToolPinningRules.Judgement,
      mode: string,
      report: Drift,
    ) =>
      Effect.gen(function* () {
        const isNew = yield* Ref.modify(reported, (seen) => {
          if (seen.has(key)) return [false, seen] as const
          const next = new Set(seen.size >= MAX_REPORTED ? [] : seen)
          next.add(key)
          return [true, next] as const
        })
        if (!isNew) return
        drift.inc({ against: judgement.against ?? "policy", mode })
        yield* Effect.logWarning("tool definition changed").pipe(
          Effect.annotateLogs({
            ...fields,
            fingerprint: judgement.fingerprint,
            expected: judgement.expected.join(","),
          }),
        )
        if (Option.isSome(reporter)) yield* reporter.value.report(report)
      })

    const judge = (provided: Provided, override?: ToolPinningRules.Mode) =>
      Effect.gen(function* () {
        const mode = override ?? modeOf(provided.service)
        const name = typeof provided.definition.name === "string" ? provided.definition.name : ""
        const tool = ToolName.format({ service: provided.service, tool: name })
        const fingerprint = Fingerprints.of(provided.definition)
        const snapshot = yield* policy.current
        const policyPins = PinsByTool.of(
          Option.match(snapshot, { onNone: () => [], onSome: (s) => s.document.toolPins ?? [] }),
          tool,
        )
        const judgement = ToolPinningRules.judge({
          mode,
          policyPins,
          firstUse: yield* firstUse(tool, fingerprint, provided.peerId, mode),
          tool,
          fingerprint,
          labels: provided.labels,
        })
        if (judgement.pin === "changed") {
          yield* noteDrift(
            `${provided.peerId}|${tool}|${fingerprint}`,
            { peer: provided.peerId, tool, against: judgement.against, mode },
            judgement,
            mode,
            {
              providerPeerId: provided.peerId,
              providerLabels: provided.labels,
              tool,
              against: judgement.against ?? "policy",
              expected: judgement.expected,
              fingerprint,
              definition: provided.definition,
            },
          )
        } else if (mode !== "off" && Option.isSome(reporter)) {
          yield* reporter.value.remember(tool, fingerprint, provided.definition)
        }
        return judgement
      })

    return ToolPinning.of({
      modeOf,
      judge,
      pinned: (service, name) =>
        Effect.gen(function* () {
          const tool = ToolName.format({ service, tool: name })
          if ((yield* SynchronizedRef.get(pins)).has(tool)) return true
          const snapshot = yield* policy.current
          const all = Option.match(snapshot, { onNone: () => [], onSome: (s) => s.document.toolPins ?? [] })
          return PinsByTool.of(all, tool).length > 0
        }),
      judgeListing: (peerId, labels, service, definitions) =>
        Effect.gen(function* () {
          const listing = definitions.map((definition): Provided => ({ peerId, labels, service, definition }))
          yield* Ref.update(latest, (held) => Latest.replace(held, peerId, service, listing))
          return yield* Effect.forEach(listing, (provided) => judge(provided))
        }),
      held: (peerId, service, tool) =>
        Effect.gen(function* () {
          const found = Latest.find(yield* Ref.get(latest), peerId, service, tool)
          if (found._tag !== "Listed") return found
          return { _tag: "Judged", judgement: yield* judge(found.provided) } as const
        }),
    })
  }),
)
