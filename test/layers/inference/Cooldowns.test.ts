import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Inference from "../../../src/domain/Inference.js"
import * as Cooldowns from "../../../src/layers/inference/Cooldowns.js"

const provider = { peerId: "peer", service: "llm" }

/** Whether the provider ranks for the model now, with the cooldowns as they stand. */
const eligible = (cooldowns: Cooldowns.Cooldowns, model: string) =>
  Effect.gen(function* () {
    const ranking = Inference.rank([{ ...provider, local: false, labels: {}, load: 0 }], {
      model,
      required: undefined,
      floor: {},
      coolingUntil: yield* cooldowns.current,
      nowMs: yield* TestClock.currentTimeMillis,
      turn: 0,
    })
    return ranking.ordered.length === 1
  })

describe("Cooldowns", () => {
  it.effect("a benched provider is left out for the cooldown, on the clock, for that model only", () =>
    Effect.gen(function* () {
      const cooldowns = yield* Cooldowns.make
      const until = yield* cooldowns.bench(Inference.cooldownKey(provider, "m"))
      expect(until).toBe(Cooldowns.COOLDOWN_MS)
      expect(yield* eligible(cooldowns, "m")).toBe(false)
      expect(yield* eligible(cooldowns, "other")).toBe(true)
      yield* TestClock.adjust(Duration.subtract(Cooldowns.COOLDOWN, Duration.millis(1)))
      expect(yield* eligible(cooldowns, "m")).toBe(false)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* eligible(cooldowns, "m")).toBe(true)
    }),
  )

  it.effect("entries past their time are dropped when another provider is benched", () =>
    Effect.gen(function* () {
      const cooldowns = yield* Cooldowns.make
      yield* cooldowns.bench("a")
      yield* TestClock.adjust(Cooldowns.COOLDOWN)
      yield* cooldowns.bench("b")
      expect([...(yield* cooldowns.current).keys()]).toEqual(["b"])
    }),
  )
})
