/**
 * Bundles the long-running members, mesh-node and mesh-router, each into one script (`dist/bin/<program>.js`, over
 * the compiler's output) and the chunks it loads on first use (`dist/bin/chunks/`): OpenTelemetry, the MCP SDK.
 *
 * Why: V8 keeps the source text of every module a program loads in its heap, with a few hundred bytes of module
 * records each. Unbundled, an idle node loads ~1,900 modules, ~10.6 MiB of source, most of it stored two bytes a
 * character (a comment's `—` makes a whole file two-byte): ~16 MiB of its heap was source text. Bundled, tree-shaken
 * and stripped of comments and whitespace (in ASCII, so one byte a character) it loads ~3.4 MiB; an idle node's RSS
 * drops by ~20 MiB (docs/scale.md, "Idle weight"). Names are kept: stack traces and logs read as before.
 *
 * Entry points are the TypeScript sources, so running this again needs no compiler output and bundles no bundle.
 * `npm run build` runs it after the compiler (`tsx scripts/bundle.ts`).
 */
import { rm } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as esbuild from "esbuild"

const root = join(import.meta.dirname, "..")

/** The programs bundled; the others (control plane, mesh-one, demo) run from the compiler's output. */
export const PROGRAMS = ["mesh-node", "mesh-router"] as const

/**
 * The build, into `outDir`: `dist/bin` by default, a test's folder otherwise (inside the project, so that the
 * packages left out of the bundle are found in node_modules).
 */
export const options = (outDir: string = join(root, "dist", "bin")): esbuild.BuildOptions & { metafile: true } => ({
  entryPoints: Object.fromEntries(PROGRAMS.map((name) => [name, join(root, "src", "bin", `${name}.ts`)])),
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node22.14",
  outdir: outDir,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  minifyWhitespace: true,
  minifySyntax: true,
  // Renaming saves nothing measurable once comments and whitespace are gone; names stay for stack traces.
  minifyIdentifiers: false,
  legalComments: "none",
  // On disk only, for `node --enable-source-maps`: V8 does not read them otherwise.
  sourcemap: "linked",
  sourcesContent: false,
  metafile: true,
  logLevel: "warning",
  // better-sqlite3 is a native addon; biscuit's wasm glue is loaded from its package folder (platform/biscuit-wasm).
  external: ["better-sqlite3", "@biscuit-auth/biscuit-wasm"],
  // The CommonJS packages bundled (ws, yaml's parsers, ...) `require` Node's modules, which an ES module has no
  // `require` for.
  banner: {
    js: 'import { createRequire as __meshRequire } from "node:module";const require=__meshRequire(import.meta.url);',
  },
})

export const bundle = async (outDir?: string): Promise<esbuild.Metafile> => {
  const built = options(outDir)
  await rm(join(built.outdir ?? "", "chunks"), { recursive: true, force: true })
  const result = await esbuild.build(built)
  return result.metafile
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await bundle()
  process.stdout.write(`${PROGRAMS.join(", ")} bundled into dist/bin\n`)
}
