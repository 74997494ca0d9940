/** The node's local API: every route group, by audience, in one table served through the middleware. */
import * as AgentRoutes from "./agents/AgentRoutes.js"
import * as DebugRoutes from "./debug/DebugRoutes.js"
import * as HealthRoutes from "./health/HealthRoutes.js"
import * as IdentityRoutes from "./identity/IdentityRoutes.js"
import * as Middleware from "./Middleware.js"
import * as McpRoutes from "./mcp/McpRoutes.js"
import * as DiscoverRoutes from "./mesh/DiscoverRoutes.js"
import * as ProxyRoutes from "./mesh/ProxyRoutes.js"
import type { RequestMetrics } from "./RequestMetrics.js"
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

/** `/v1/*` speaks OpenAI's error dialect, so OpenAI SDKs report our refusals as they report OpenAI's. */
export const make = (metrics: RequestMetrics) =>
  Middleware.make(routes, [{ prefix: "/v1/", render: OpenAiError.render }], metrics)
