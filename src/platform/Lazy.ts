/**
 * Code loaded when it is first needed instead of when the program starts: a package an idle member never uses
 * (OpenTelemetry without an exporter) then costs it no memory; loading a package's modules is most of a member's idle
 * weight (docs/scale.md, "Idle weight"). The caller writes the `import()` itself, so the compiler still checks the
 * module's types; `import()` caches the module, so building the layer again loads nothing.
 */
import { Effect, Layer } from "effect"

/** The layer `build` makes from the module `load` brings, loaded when the layer is built. */
export const layer = <M, A, E, R>(
  load: () => Promise<M>,
  build: (module: M) => Layer.Layer<A, E, R>,
): Layer.Layer<A, E, R> => Layer.unwrapEffect(Effect.map(Effect.promise(load), build))
