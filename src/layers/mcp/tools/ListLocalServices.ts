/** `list_local_services`: the services this node publishes to the mesh, of one type or all. */
import { Effect } from "effect"
import { z } from "zod"
import { SERVICE_TYPES } from "../../../domain/ServiceType.js"
import { LocalServices } from "../../../services/local/LocalServices.js"
import * as AgentView from "../../agents/AgentView.js"
import * as Tool from "../Tool.js"

export const tool = Tool.make({
  name: "list_local_services",
  title: "Services this node publishes",
  description:
    "The services this node publishes to the mesh (those whose backend answers), optionally of one type: " +
    "mcp servers with their tool names, inference backends with their model ids, a2a agents.",
  input: {
    type: z.enum(SERVICE_TYPES).optional().describe("Only services of this type: mcp, inference or a2a."),
  },
  output: {
    services: z.array(
      z.object({
        type: z.enum(SERVICE_TYPES),
        name: z.string(),
        description: z.string(),
        tools: z.array(z.string()).optional(),
        models: z.array(z.string()).optional(),
      }),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (args) =>
    Effect.gen(function* () {
      const published = yield* AgentView.keep(yield* (yield* LocalServices).published, (scope, s) =>
        AgentView.serviceVisible(scope, s.type, s.name),
      )
      const services = published
        .filter((s) => args.type === undefined || s.type === args.type)
        .map((s) => ({
          type: s.type,
          name: s.name,
          description: s.description,
          ...(s.type === "mcp" ? { tools: [...s.keys] } : {}),
          ...(s.type === "inference" ? { models: [...s.keys] } : {}),
        }))
      return Tool.ok({ services })
    }),
})
