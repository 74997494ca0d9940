/** `discover_remote_services`: services on other peers, by type and optionally name, as the discover route lists them. */
import { Chunk, Duration, Effect, Stream } from "effect"
import { z } from "zod"
import * as DiscoveryRow from "../../../domain/DiscoveryRow.js"
import { isServiceName } from "../../../domain/NodeFile.js"
import { SERVICE_TYPES } from "../../../domain/ServiceType.js"
import { Discovery } from "../../../services/discovery/Discovery.js"
import * as AgentView from "../../agents/AgentView.js"
import * as Tool from "../Tool.js"

/** The search ends by then with what it found. */
const SEARCH_TIMEOUT = Duration.seconds(10)

export const tool = Tool.make({
  name: "discover_remote_services",
  title: "Find services on other peers",
  description:
    "Services other peers of the mesh publish, of one type (mcp, inference, a2a), optionally only those with a " +
    "given name. Each result names the providing peer (peer_id: service names are not unique across the mesh), " +
    "the labels its credential attests, and local_proxy_url, where this node proxies HTTP to that service. " +
    "MCP services are used through find_remote_tools, describe_remote_tool and call_remote_tool; inference and " +
    "a2a services are plain HTTP on local_proxy_url.",
  input: {
    type: z.enum(SERVICE_TYPES).describe("The kind of service: mcp, inference or a2a."),
    name: z.string().optional().describe("Only services with this name."),
    limit: z.number().int().min(1).max(1000).default(20).describe("At most this many results (default 20)."),
    offset: z.number().int().min(0).max(1_000_000).default(0).describe("Results to skip, for paging (default 0)."),
  },
  output: {
    services: z.array(
      z.object({
        peer_id: z.string(),
        srv_name: z.string(),
        srv_description: z.string(),
        labels: z.record(z.string(), z.string()),
        local_proxy_url: z.string(),
        note: z.string().optional(),
      }),
    ),
  },
  annotations: { readOnlyHint: true, openWorldHint: true },
  run: (args, request) =>
    Effect.gen(function* () {
      const name = args.name === undefined || args.name === "" ? undefined : args.name
      if (name !== undefined && !isServiceName(name)) {
        return Tool.refused("name must be 1-64 letters, digits, '.', '_' or '-'")
      }
      const discovery = yield* Discovery
      const found = yield* Stream.runCollect(
        discovery.find({ type: args.type, ...(name === undefined ? {} : { name }), timeout: SEARCH_TIMEOUT }),
      )
      const host = DiscoveryRow.hostOf(request.host)
      const visible = yield* AgentView.keep(Chunk.toReadonlyArray(found), (scope, s) =>
        AgentView.serviceVisible(scope, s.type, s.name),
      )
      const services = [...visible]
        .sort(DiscoveryRow.byPeerAndName)
        .slice(args.offset, args.offset + args.limit)
        .map((service) => DiscoveryRow.row(service, host))
      return Tool.ok({ services })
    }),
})
