/**
 * Builds the console into `dist/console/`: one script and one stylesheet bundled by esbuild (names carry a content
 * hash, so browsers may keep them), an icon, and `index.html` naming them. The route of every API endpoint, taken
 * from the same HttpApi definition the server routes with, is compiled into the script (`__MESH_ROUTES__`).
 *
 * `npm run build` runs it (`tsx console/build.ts`), and so does the test run before any test starts.
 */
import { createHash } from "node:crypto"
import { mkdir, readFile, rm, writeFile } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as HttpApi from "@effect/platform/HttpApi"
import * as esbuild from "esbuild"
import { ControlPlaneApi } from "../src/http/Api.js"

const here = dirname(fileURLToPath(import.meta.url))

export const OUT_DIR = join(here, "..", "dist", "console")

/** `{ group: { endpoint: { method, path } } }` of every endpoint of the API. */
export const routes = (): Record<string, Record<string, { method: string; path: string }>> => {
  const out: Record<string, Record<string, { method: string; path: string }>> = {}
  HttpApi.reflect(ControlPlaneApi, {
    onGroup: () => {},
    onEndpoint: ({ group, endpoint }) => {
      out[group.identifier] = {
        ...out[group.identifier],
        [endpoint.name]: { method: endpoint.method, path: endpoint.path },
      }
    },
  })
  return out
}

const hashed = (name: string, content: Uint8Array): string => {
  const digest = createHash("sha256").update(content).digest("hex").slice(0, 8).toUpperCase()
  const dot = name.lastIndexOf(".")
  return `${name.slice(0, dot)}-${digest}${name.slice(dot)}`
}

export const build = async (outDir: string = OUT_DIR): Promise<void> => {
  const assets = join(outDir, "assets")
  await rm(outDir, { recursive: true, force: true })
  await mkdir(assets, { recursive: true })
  const result = await esbuild.build({
    entryPoints: { console: join(here, "src", "main.ts") },
    bundle: true,
    minify: true,
    format: "esm",
    target: ["chrome111", "firefox113", "safari16.4"],
    outdir: assets,
    entryNames: "[name]-[hash]",
    metafile: true,
    legalComments: "none",
    logLevel: "warning",
    define: { __MESH_ROUTES__: JSON.stringify(routes()) },
  })
  const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
  const js = outputs.find((f) => f.endsWith(".js"))
  const css = outputs.find((f) => f.endsWith(".css"))
  if (js === undefined || css === undefined) throw new Error("the console build produced no script or no stylesheet")
  const iconSource = await readFile(join(here, "src", "icon.svg"))
  const icon = hashed("icon.svg", iconSource)
  await writeFile(join(assets, icon), iconSource)
  const template = await readFile(join(here, "index.html"), "utf8")
  await writeFile(
    join(outDir, "index.html"),
    template.replace("{{js}}", js).replace("{{css}}", css).replace("{{icon}}", icon),
  )
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await build()
  process.stdout.write(`console built into ${OUT_DIR}\n`)
}
