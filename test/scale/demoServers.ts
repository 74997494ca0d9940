/**
 * The demo MCP server and model server as a process of their own, for a test host in a network namespace that cannot
 * reach the test's loopback: run under `ip netns exec`, it prints one JSON line with both URLs and serves until killed.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect } from "effect"
import * as DemoInference from "../../src/demo/DemoInference.js"
import * as DemoMcpServer from "../../src/demo/DemoMcpServer.js"

Effect.gen(function* () {
  const mcp = yield* DemoMcpServer.make(0)
  const inference = yield* DemoInference.make(0)
  yield* Console.log(JSON.stringify({ mcp, inference }))
  yield* Effect.never
}).pipe(Effect.scoped, NodeRuntime.runMain)
