/**
 * Code loaded when it is first needed instead of when the program starts: a package an idle member never uses
 * (OpenTelemetry without an exporter, the MCP SDK while no agent or peer speaks MCP to it) then costs it no memory;
 * loading a package's modules is most of a member's idle weight (docs/scale.md, "Idle weight"). The caller writes the
 * `import()` itself, so the compiler still checks the module's types; `import()` caches the module, so asking again
 * loads nothing.
 */
import { Context, Effect, Layer, Option, Ref, Runtime } from "effect"

/** The layer `build` makes from the module `load` brings, loaded when the layer is built. */
export const layer = <M, A, E, R>(
  load: () => Promise<M>,
  build: (module: M) => Layer.Layer<A, E, R>,
): Layer.Layer<A, E, R> => Layer.unwrapEffect(Effect.map(Effect.promise(load), build))

/** `f` of the module `load` brings, loaded when the effect runs. */
export const effect = <M, A, E, R>(
  load: () => Promise<M>,
  f: (module: M) => Effect.Effect<A, E, R>,
): Effect.Effect<A, E, R> => Effect.flatMap(Effect.promise(load), f)

/**
 * A service built on its first use. Building this layer loads nothing: it keeps the runtime (the requirements, the
 * logger, the tracer) and the scope it was built in. `forward` makes the service from two effects: `use` gives the
 * real one, loading `load`'s layer and building it in that runtime and scope the first time, as if it had been built
 * here; `peek` gives it only once it is built, for figures (sessions open) that read as none before.
 */
export const service = <I, S, R>(
  tag: Context.Tag<I, S>,
  load: () => Promise<Layer.Layer<I, never, R>>,
  forward: (use: Effect.Effect<S>, peek: Effect.Effect<Option.Option<S>>) => S,
): Layer.Layer<I, never, R> =>
  Layer.scoped(
    tag,
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<R>()
      const scope = yield* Effect.scope
      const built = yield* Ref.make(Option.none<S>())
      // Built on a fiber of its own from the runtime kept here, not on the first caller's: nothing of the caller (its
      // agent, its span, its scope) may end up in what the service keeps.
      const build = Effect.promise(load).pipe(
        Effect.flatMap((real) => Layer.buildWithScope(real, scope)),
        Effect.map((context) => Context.get(context, tag)),
        Effect.tap((service) => Ref.set(built, Option.some(service))),
      )
      const use = yield* Effect.cached(Effect.promise(() => Runtime.runPromise(runtime, build)))
      return forward(use, Ref.get(built))
    }),
  )
