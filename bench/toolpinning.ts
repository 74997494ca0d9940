/**
 * What tool pinning adds to a tool call: the check a `call_remote_tool` or a federated call makes before it goes
 * (ToolPinning.held: the definition the provider last listed, judged now against the policy's pins and the node's
 * first-use pin), over the real layer (ToolPinningLive) with a policy of PINS pins and a listing of TOOLS tools held.
 * The baseline, measured in the same run, is one fingerprint of the same definition (canonical JSON and sha256): what
 * the check would cost if it hashed the definition each time instead of keeping the fingerprint per definition.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, Layer, Option, Redacted } from "effect"
import * as NodeConfig from "../src/config/NodeConfig.js"
import type * as Policy from "../src/domain/Policy.js"
import * as ToolFingerprint from "../src/domain/ToolFingerprint.js"
import * as MetricsLive from "../src/layers/operations/MetricsLive.js"
import * as ToolPinningLive from "../src/layers/toolpinning/ToolPinningLive.js"
import { PolicyView } from "../src/services/node/PolicyView.js"
import { ToolPinning } from "../src/services/toolpinning/ToolPinning.js"
import { goals } from "./lib/goals.js"
import type { Entry } from "./lib/report.js"

const PINS = 1000
const TOOLS = 50
const CHECKS = 20_000
const PEER = "12D3KooWBenchPeer"

/** A definition of the size of a real one: a paragraph of description, a schema with a few properties. */
const definition = (i: number) => ({
  name: `tool_${i}`,
  title: `Tool ${i}`,
  description: `Does the ${i}th thing. `.repeat(20),
  inputSchema: {
    type: "object",
    properties: Object.fromEntries(
      ["text", "limit", "cursor", "language", "format"].map((p) => [p, { type: "string", description: `The ${p}` }]),
    ),
    required: ["text"],
  },
  annotations: { readOnlyHint: true },
})

const median = (runs: ReadonlyArray<number>) => [...runs].sort((a, b) => a - b)[Math.floor(runs.length / 2)] ?? 0

/** Per-operation time in ms of `op`, CHECKS times in one fiber, median of 5 runs. */
const timed = (op: (i: number) => Effect.Effect<unknown>) =>
  Effect.gen(function* () {
    const runs: Array<number> = []
    for (let run = 0; run < 5; run++) {
      const started = performance.now()
      for (let i = 0; i < CHECKS; i++) yield* op(i)
      runs.push((performance.now() - started) / CHECKS)
    }
    return median(runs)
  })

export const run = async (): Promise<ReadonlyArray<Entry>> => {
  const dir = mkdtempSync(join(tmpdir(), "mesh-bench-pins-"))
  const definitions = Array.from({ length: TOOLS }, (_, i) => definition(i))
  // The policy pins the first tool (as it is listed) and PINS - 1 others, as a large mesh's policy would.
  const document: Policy.Document = {
    roles: [],
    bindings: [],
    toolPins: [
      { tool: "mcp://bench/tool_0", fingerprint: ToolFingerprint.fingerprint(definitions[0] ?? {}), peerLabels: {} },
      ...Array.from({ length: PINS - 1 }, (_, i) => ({
        tool: `mcp://other${i}/tool`,
        fingerprint: `sha256:${i.toString(16).padStart(64, "0")}`,
        peerLabels: {},
      })),
    ],
  }
  const layer = ToolPinningLive.layer.pipe(
    Layer.provide(
      Layer.succeed(
        NodeConfig.NodeConfig,
        NodeConfig.make({
          dataDir: dir,
          apiToken: Redacted.make("bench-token-00000000"),
          file: { labels: {}, egress: { require_labels: {} }, services: [] },
        }),
      ),
    ),
    Layer.provide(
      Layer.succeed(
        PolicyView,
        PolicyView.of({
          current: Effect.succeed(Option.some({ document, version: 1, fetchedAtMs: 0 })),
          refresh: Effect.void,
          issuers: Effect.succeed([]),
        }),
      ),
    ),
    Layer.provide(MetricsLive.layer),
  )
  try {
    const [check, fingerprintMs, pinned] = await Effect.runPromise(
      Effect.gen(function* () {
        const pinning = yield* ToolPinning
        yield* pinning.judgeListing(PEER, {}, "bench", definitions)
        const first = yield* pinning.held(PEER, "bench", "tool_0")
        const check = yield* timed((i) => pinning.held(PEER, "bench", `tool_${i % TOOLS}`))
        const fingerprintMs = yield* timed((i) =>
          Effect.sync(() => ToolFingerprint.fingerprint(definitions[i % TOOLS] ?? {})),
        )
        return [check, fingerprintMs, first._tag === "Judged" ? first.judgement.pin : "none"] as const
      }).pipe(Effect.provide(layer)),
    )
    const goal = goals.toolPinning.checkMs
    return [
      {
        name: `Tool pinning check before a call (${PINS} policy pins, ${TOOLS} tools held)`,
        figure: check,
        unit: "ms",
        baselineName: "one fingerprint",
        baseline: fingerprintMs,
        ratio: check / fingerprintMs,
        goal: `<= ${goal} ms`,
        met: check <= goal,
        notes: `${(check * 1000).toFixed(1)} µs per check against ${(fingerprintMs * 1000).toFixed(1)} µs per fingerprint, median of 5 runs of ${CHECKS}; the pinned tool judged ${pinned}`,
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
