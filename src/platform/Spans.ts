/**
 * Spans that cost nothing while tracing is off. Effect's own `withSpan` still builds a no-op span, a context and an
 * exit hook when the tracer is disabled (several microseconds each on a request path that has a handful); these
 * check the flag once and run the effect as it is.
 */
import { Effect, FiberRef, type Tracer } from "effect"

/** `effect` in a span named `name`, while tracing is on; `effect` itself otherwise. */
export const withSpan =
  (name: string, options: Tracer.SpanOptions) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(effect, name, options) : effect,
    )

/** Sets an attribute on the current span, while tracing is on. */
export const annotate = (key: string, value: unknown): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) =>
    fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.annotateCurrentSpan(key, value) : Effect.void,
  )

/** Whether tracing is on for this fiber. */
export const enabled: Effect.Effect<boolean> = Effect.withFiberRuntime((fiber) =>
  Effect.succeed(fiber.getFiberRef(FiberRef.currentTracerEnabled)),
)
