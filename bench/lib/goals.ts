/**
 * Every goal the benchmarks check, in one place: a benchmark reads its goal from here and states none of its own,
 * so raising or relaxing a target is one reviewed line. Ratios are figure / baseline as each benchmark defines them.
 */
export const goals = {
  /** Auto-approved enrollments per second, as a share of the crypto-bound ceiling. */
  enroll: { sqlite: 0.7, postgres: 0.5 },
  /** Refreshes per second as a share of the crypto-bound ceiling, and p99 with 100k nodes over p99 with 1k. */
  refresh: { sqlite: 0.7, postgres: 0.5, p99GrowthAt100k: 1.5 },
  /** /info and /keys throughput as a share of a bare node:http server answering the same bytes. */
  infoKeys: { shareOfBare: 0.5 },
  /** Stream open + 1 KiB echo between mesh hosts over the same between bare libp2p peers. */
  mesh: { overBare: 1.1 },
  /**
   * The proxy, on loopback with every party in a process of its own: what it adds to a small request (proxy p50 −
   * direct p50) over one bare stream open + 1 KiB echo between two such processes, and the throughput of 1 MiB
   * bodies through it as a share of 1 MiB on a bare stream, each direction on its own.
   */
  proxy: { overheadOverStream: 1.3, largeBodyShareOfStream: 0.8 },
  /**
   * Inference routing: what the node adds to a small non-streaming completion (node p50 − direct p50), in ms for a
   * provider on the node itself (LiteLLM documents 3.25 ms), and for a provider on a peer over one bare stream open
   * + 1 KiB echo between two processes.
   */
  inference: { localAddedMs: 0.3, remoteOverStream: 1.3 },
  /**
   * MCP between peers: what `call_remote_tool` through a node adds to the same MCP call made straight to the
   * backend (p50 − p50), over one bare stream open + 1 KiB echo between two processes.
   */
  mcp: { overheadOverStream: 1.5 },
  /**
   * A federated tool (the peer's tool called by its own name on the node's `/mcp`) over the same call through
   * `call_remote_tool`, p50 over p50: federation adds no cost.
   */
  federation: { overCallRemoteTool: 1.05 },
  /**
   * Round trips between two nodes on a link with a fixed delay: what a path adds over the same call straight to the
   * backend (p50 − p50), over the link's round-trip time. One round trip is the physical limit of a call to a peer
   * already connected; a first `call_remote_tool` may pay one more to open its MCP session.
   */
  rtt: { warm: 1.1, coldCallRemoteTool: 2.1, firstModernCall: 1.15 },
  /** Search by intent: the share of the corpus's intents whose expected tool is among the first five. */
  toolSearch: { recallAt5: 0.8 },
  /** What the tool pinning check adds to a tool call, in ms (the provider's listing held, the policy's pins read). */
  toolPinning: { checkMs: 0.05 },
  /** What checking an agent token adds to a request on the serving peer, at p50, in ms (a token seen before). */
  agents: { addedP50Ms: 0.2 },
} as const
