/**
 * The node assembled: its settings, logs kept for /debug/logs, metrics, the API token, the lifecycle (login,
 * joining, member) and the local API listeners. The mesh side lives in node/MemberLive.ts, built by the lifecycle.
 */
import { Layer } from "effect"
import { NodeConfig, type NodeSettings } from "../config/NodeConfig.js"
import * as Listeners from "../node/Listeners.js"
import * as ApiTokenLive from "./node/ApiTokenLive.js"
import * as LogRingLive from "./node/LogRingLive.js"
import * as NodeLifecycleLive from "./node/NodeLifecycleLive.js"
import * as NodeMetrics from "./node/NodeMetrics.js"
import * as MetricsLive from "./operations/MetricsLive.js"

export const layer = (settings: NodeSettings) =>
  Layer.mergeAll(Listeners.layer, NodeMetrics.layer).pipe(
    Layer.provideMerge(NodeLifecycleLive.layer),
    Layer.provideMerge(ApiTokenLive.layer),
    Layer.provideMerge(MetricsLive.layer),
    Layer.provideMerge(LogRingLive.layer),
    Layer.provideMerge(Layer.succeed(NodeConfig, settings)),
  )
