/** The node's local API: every route group, by audience, in one table served through the middleware. */
import * as AgentRoutes from "./agents/AgentRoutes.js"
import * as DebugRoutes from "./debug/DebugRoutes.js"
import type { Fast } from "./FastAnswer.js"
import * as HealthRoutes from "./health/HealthRoutes.js"
import * as IdentityRoutes from "./identity/IdentityRoutes.js"
import * as Middleware from "./Middleware.js"
import * as McpRoutes from "./mcp/McpRoutes.js"
import * as DiscoverRoutes from "./mesh/DiscoverRoutes.js"
import * as ProxyFront from "./mesh/ProxyFront.js"
import * as ProxyRoutes from "./mesh/ProxyRoutes.js"
import type { RequestMetrics } from "./RequestMetrics.js"
import * as Completion from "./v1/Completion.js"
import * as InferenceRoutes from "./v1/InferenceRoutes.js"
import * as OpenAiError from "./v1/OpenAiError.js"

export const routes = [
  ...HealthRoutes.routes,
  ...McpRoutes.routes,
  ...IdentityRoutes.routes,
  ...DiscoverRoutes.routes,
  ...ProxyRoutes.routes,
  ...InferenceRoutes.routes,
  ...DebugRoutes.routes,
  ...AgentRoutes.routes,
]

/** The busiest routes' plain requests, answered on node:http ahead of the platform (Front), by route label. */
export const fast: Readonly<Record<string, Fast>> = {
  mcp: McpRoutes.fast,
  mesh_proxy: ProxyFront.fast,
  v1_chat_completions: Completion.fast("/v1/chat/completions"),
  v1_completions: Completion.fast("/v1/completions"),
}

/** `/v1/*` speaks OpenAI's error dialect, so OpenAI SDKs report our refusals as they report OpenAI's. */
export const make = (metrics: RequestMetrics) =>
  Middleware.make(routes, [{ prefix: "/v1/", render: OpenAiError.render }], metrics)
