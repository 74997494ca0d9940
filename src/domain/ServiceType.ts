/**
 * The kinds of service a node publishes. Apart from the node file that lists services, so the rules that speak of a
 * service's kind (agent scopes, keys, forwarding) need not import the node file, which imports them.
 */
export const SERVICE_TYPES = ["mcp", "inference", "a2a"] as const
export type ServiceType = (typeof SERVICE_TYPES)[number]
