import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import type { ServiceSpec } from "../../src/domain/NodeFile.js"
import * as Probes from "../../src/layers/local/Probes.js"
import { freePort } from "../../src/testing/Ports.js"
import * as Backends from "../support/backends.js"

/** These probes reach HTTP backends only; stdio servers are probed by StdioServers (test/layers/StdioServers.test.ts). */
const noCommands: Probes.CommandProbe = () => Effect.fail("no commands in this test")

const spec = (type: ServiceSpec["type"], target: string): ServiceSpec => ({
  name: "svc",
  type,
  description: "",
  target_url: target,
  env: {},
})

describe("backend probes", () => {
  it.scopedLive("an MCP server is initialized and lists its tools, sorted", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.mcp(["zeta", "alpha", "mid"])
      expect(yield* Probes.probe(spec("mcp", `${backend.url}/mcp`), noCommands)).toEqual(["alpha", "mid", "zeta"])
    }),
  )

  it.scopedLive("an inference backend lists its model ids, under a path prefix too", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.inference(["tiny-2", "tiny-1"])
      expect(yield* Probes.probe(spec("inference", backend.url), noCommands)).toEqual(["tiny-1", "tiny-2"])
      expect(yield* Probes.probe(spec("inference", `${backend.url}/`), noCommands)).toEqual(["tiny-1", "tiny-2"])
    }),
  )

  it.scopedLive("an a2a agent answers with its card; it has no keys", () =>
    Effect.gen(function* () {
      const backend = yield* Backends.agent("helper")
      expect(yield* Probes.probe(spec("a2a", backend.url), noCommands)).toEqual([])
    }),
  )

  it.scopedLive("a backend that is down, or answers as another kind, fails its probe", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      for (const type of ["mcp", "inference", "a2a"] as const) {
        const outcome = yield* Effect.either(Probes.probe(spec(type, `http://127.0.0.1:${port}`), noCommands))
        expect(Either.isLeft(outcome) && outcome.left._tag, type).toBe("ProbeFailed")
      }
      const models = yield* Backends.inference(["m"])
      const asMcp = yield* Effect.either(Probes.probe(spec("mcp", models.url), noCommands))
      expect(Either.isLeft(asMcp) && asMcp.left._tag).toBe("ProbeFailed")
      const asAgent = yield* Effect.either(Probes.probe(spec("a2a", models.url), noCommands))
      expect(Either.isLeft(asAgent) && asAgent.left._tag).toBe("ProbeFailed")
    }),
  )

  it.scopedLive("a backend that wants its callers' credential (401, 403) is up: it answers, with no keys", () =>
    Effect.gen(function* () {
      for (const status of [401, 403]) {
        const locked = yield* Backends.refusing(status)
        expect(yield* Probes.probe(spec("mcp", `${locked.url}/mcp`), noCommands), `mcp ${status}`).toEqual([])
        expect(yield* Probes.probe(spec("inference", locked.url), noCommands), `inference ${status}`).toEqual([])
        expect(yield* Probes.probe(spec("a2a", locked.url), noCommands), `a2a ${status}`).toEqual([])
      }
      const broken = yield* Backends.refusing(500)
      const outcome = yield* Effect.either(Probes.probe(spec("inference", broken.url), noCommands))
      expect(Either.isLeft(outcome) && outcome.left._tag).toBe("ProbeFailed")
    }),
  )
})
