/**
 * The node assembled: its settings, logs kept for /debug/logs, metrics, the API token, the lifecycle (login,
 * joining, member) and the local API listeners. The mesh side lives in layers/node/MemberLive.ts, built by the
 * lifecycle. It sits in node/, beside the listeners and the routes it serves, rather than in layers/ with the other
 * compositions: those import only layers/ and below, while this one starts the local API, which is above them.
 */
import { Effect, Layer, Option } from "effect"
import { NodeConfig, type NodeSettings } from "../config/NodeConfig.js"
import * as AgentLogLive from "../layers/agents/AgentLogLive.js"
import * as ApiTokenLive from "../layers/node/ApiTokenLive.js"
import * as LogRingLive from "../layers/node/LogRingLive.js"
import * as NodeLifecycleLive from "../layers/node/NodeLifecycleLive.js"
import * as NodeMetrics from "../layers/node/NodeMetrics.js"
import * as MetricsLive from "../layers/operations/MetricsLive.js"
import * as ProbeServer from "../layers/operations/ProbeServer.js"
import * as Listeners from "./Listeners.js"

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
