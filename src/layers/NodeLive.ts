/**
 * The node assembled: its settings, logs kept for /debug/logs, metrics, the API token, the lifecycle (login,
 * joining, member) and the local API listeners. The mesh side lives in node/MemberLive.ts, built by the lifecycle.
 */
import { Effect, Layer, Option } from "effect"
import { NodeConfig, type NodeSettings } from "../config/NodeConfig.js"
import * as Listeners from "../node/Listeners.js"
import * as AgentLogLive from "./agents/AgentLogLive.js"
import * as ApiTokenLive from "./node/ApiTokenLive.js"
import * as LogRingLive from "./node/LogRingLive.js"
import * as NodeLifecycleLive from "./node/NodeLifecycleLive.js"
import * as NodeMetrics from "./node/NodeMetrics.js"
import * as MetricsLive from "./operations/MetricsLive.js"
import * as ProbeServer from "./operations/ProbeServer.js"

/** `--metrics-addr`: probes and metrics without authentication; the node is "ready" while its process is up. */
const probes = (settings: NodeSettings) =>
  Option.match(settings.metricsAddress, {
    onNone: () => Layer.empty,
    onSome: (address) => ProbeServer.layer(address, Effect.succeed(true)),
  })

export const layer = (settings: NodeSettings) =>
  Layer.mergeAll(Listeners.layer, NodeMetrics.layer, probes(settings)).pipe(
    Layer.provideMerge(NodeLifecycleLive.layer),
    Layer.provideMerge(ApiTokenLive.layer),
    Layer.provideMerge(AgentLogLive.layer),
    Layer.provideMerge(MetricsLive.layer),
    Layer.provideMerge(LogRingLive.layer),
    Layer.provideMerge(Layer.succeed(NodeConfig, settings)),
  )
