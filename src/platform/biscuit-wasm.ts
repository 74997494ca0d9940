/**
 * Loads @biscuit-auth/biscuit-wasm by instantiating its WebAssembly module ourselves.
 *
 * The package's entry imports its `.wasm` file as an ES module. Node 22 and 24 accept that, but only as an experimental
 * feature that prints a warning to stderr, and the entry then runs the wasm start function unguarded, which prints a
 * banner to stdout that would corrupt our CLI output. We wire the module into the package's JS glue, as the bundler
 * target would, and silence the banner. This is the only place that loads biscuit; everything else
 * imports from here.
 */
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type * as BiscuitModule from "@biscuit-auth/biscuit-wasm"

interface Glue {
  readonly __wbg_set_wasm: (exports: WebAssembly.Exports) => void
}

const findModuleDir = (): string => {
  // `import.meta.resolve` is unavailable under vitest's transform, hence the resolver search paths.
  const candidates = (createRequire(import.meta.url).resolve.paths("@biscuit-auth/biscuit-wasm") ?? []).map((p) =>
    join(p, "@biscuit-auth/biscuit-wasm/module"),
  )
  const dir = candidates.find((d) => existsSync(join(d, "biscuit_bg.wasm")))
  if (dir === undefined) throw new Error("@biscuit-auth/biscuit-wasm is not installed")
  return dir
}

const moduleDir = findModuleDir()
const glue = (await import(pathToFileURL(join(moduleDir, "biscuit_bg.js")).href)) as typeof BiscuitModule & Glue
// Compiled lazily, function by function on first call (Node 22 and 24's default): a member keeps code only for what
// it runs (mint, verify, append), about 8 MiB less resident than compiling the whole module up front, and starts
// sooner. A process's first mint and first verify pay for their compilation once (about 10 and 5 ms). The mesh runs
// no biscuit authorizer; one that does counts that first compilation against its run-time limit (docs/decisions.md).
const wasmModule = new WebAssembly.Module(readFileSync(join(moduleDir, "biscuit_bg.wasm")))
const imports: Record<string, WebAssembly.ModuleImports> = {
  "./biscuit_bg.js": glue as unknown as WebAssembly.ModuleImports,
}
for (const entry of WebAssembly.Module.imports(wasmModule)) {
  if (!(entry.module in imports)) {
    imports[entry.module] = (await import(
      pathToFileURL(join(moduleDir, entry.module)).href
    )) as WebAssembly.ModuleImports
  }
}
const instance = new WebAssembly.Instance(wasmModule, imports)
glue.__wbg_set_wasm(instance.exports)
const start = instance.exports.__wbindgen_start
if (typeof start === "function") {
  // The wasm start function prints a banner to stdout, which would corrupt the output of our CLI commands.
  // biome-ignore lint/suspicious/noConsole: silencing, not logging
  const log = console.log
  console.log = () => {}
  try {
    start()
  } finally {
    console.log = log
  }
}

export const {
  Biscuit,
  BiscuitBuilder,
  BlockBuilder,
  AuthorizerBuilder,
  KeyPair,
  PublicKey,
  PrivateKey,
  SignatureAlgorithm,
  Rule,
  Fact,
} = glue
export type Biscuit = BiscuitModule.Biscuit
export type PublicKey = BiscuitModule.PublicKey
export type PrivateKey = BiscuitModule.PrivateKey
export type Authorizer = BiscuitModule.Authorizer
