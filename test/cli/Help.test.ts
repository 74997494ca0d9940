/**
 * The programs' help and flag handling as a user meets them: the real programs, spawned, output piped. Every command
 * and subcommand of every program is read from the command tree, so a command added later is checked too.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import * as Colour from "../../src/cli/Colour.js"
import { controlPlane } from "../../src/cli/control-plane.js"
import * as Help from "../../src/cli/Help.js"
import { meshNode } from "../../src/cli/mesh-node.js"
import { meshOne } from "../../src/cli/mesh-one.js"
import { meshRouter } from "../../src/cli/mesh-router.js"
import { nodeArgs, sourceArgs } from "../support/processes.js"

/** Runs a program without blocking the test worker (a dozen spawns in a row would starve its heartbeat). */
const runBin = (program: string, args: ReadonlyArray<string>, argv = nodeArgs) =>
  promisify(execFile)(process.execPath, argv(program, args), { timeout: 120_000 }).then(
    (out) => ({ status: 0, stdout: out.stdout, stderr: out.stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      status: error.code ?? -1,
      stdout: error.stdout ?? "",
      stderr: error.stderr ?? "",
    }),
  )

const trees = [Help.tree(controlPlane), Help.tree(meshRouter), Help.tree(meshNode), Help.tree(meshOne)]
const commands = trees.flatMap(Help.walk)

/** Text @effect/cli writes by itself and that says nothing to a reader of this help. */
const PLACEHOLDERS = [
  "A user-defined piece of text",
  "This setting is optional",
  "This option can be set from environment variables",
  "A true or false value",
  "An integer.",
  "One of the following",
  "This option may be repeated",
  "Sets the minimum log level for a command",
]

/** A program takes seconds to start on a loaded machine (more under tsx); some tests start three. */
const TIMEOUT = 150_000

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for ANSI escapes
const ESCAPE = /\u001b\[/

describe("--help of every command", () => {
  it(
    "covers every program and subcommand",
    () => {
      expect(commands.map((c) => c.path.join(" "))).toEqual(
        expect.arrayContaining([
          "mesh-control-plane",
          "mesh-control-plane admin",
          "mesh-control-plane admin ban",
          "mesh-control-plane admin unban",
          "mesh-router",
          "mesh-node",
          "mesh-node join",
          "mesh-node run",
          "mesh-one",
        ]),
      )
    },
    TIMEOUT,
  )

  it.each(commands.map((c) => [c.path.join(" "), c.path] as const))(
    "%s --help: a description on every flag, usage from the program's name, one --log-level, no colour in a pipe",
    async (_, path) => {
      const [program = "", ...words] = path
      const result = await runBin(program, [...words, "--help"])
      expect(result.status, result.stderr).toBe(0)
      const help = result.stdout
      expect(help).not.toMatch(ESCAPE)
      for (const text of PLACEHOLDERS) expect(help, text).not.toContain(text)
      const usage = help.split("\n").filter((line) => line.startsWith("$ "))
      expect(usage.length).toBeGreaterThan(0)
      for (const line of usage) expect(line.startsWith(`$ ${path.join(" ")}`), line).toBe(true)
      expect(help).toMatch(/\nDESCRIPTION\n\n\S/)
      // Every option heading is followed by a description of its own.
      const lines = help.split("\n")
      const headings = lines.flatMap((line, i) => (/^(\(-h, )?--[a-z]/.test(line) ? [i] : []))
      expect(headings.length).toBeGreaterThan(0)
      for (const i of headings) expect(lines[i + 2] ?? "", lines[i]).toMatch(/^ {2}\S.{10,}/)
      const logLevels = lines.filter((line) => line.startsWith("--log-level"))
      expect(logLevels.length).toBeLessThanOrEqual(1)
      if (logLevels.length === 1) expect(logLevels[0]).toBe("--log-level debug|info|warn|error")
    },
    TIMEOUT,
  )

  // Every other test here starts the built programs; developers also start the sources through tsx.
  it(
    "the sources run through tsx print the same help as the built program",
    async () => {
      const [built, source] = await Promise.all([
        runBin("mesh-node", ["run", "--help"]),
        runBin("mesh-node", ["run", "--help"], sourceArgs),
      ])
      expect(source.status, source.stderr).toBe(0)
      expect(source.stdout).toContain("$ mesh-node run")
      expect(source.stdout).toBe(built.stdout)
    },
    TIMEOUT,
  )

  it(
    "a command that only groups others prints its help, with its commands and what each does",
    async () => {
      const result = await runBin("mesh-node", [])
      expect(result.status).toBe(0)
      expect(result.stdout).toContain("$ mesh-node <command> [flags]")
      // The column is as wide as the longest command's name.
      expect(result.stdout).toMatch(/\n {2}join +Enroll this machine/)
      expect(result.stdout).toMatch(/\n {2}run +Join the mesh/)
      expect(result.stdout).toMatch(/\n {2}agent-token {2}Mint a token for an agent/)
    },
    TIMEOUT,
  )

  it(
    "the router's usage shows its optional flags in brackets, the repeatable ones included",
    async () => {
      const usage =
        (await runBin("mesh-router", ["--help"])).stdout.split("\n").find((line) => line.startsWith("$ ")) ?? ""
      expect(usage).toContain("[--listen multiaddr...]")
      expect(usage).toContain("[--external-addr multiaddr...]")
      expect(usage.replace(/\[[^\]]*\]/g, "").trim()).toBe("$ mesh-router")
    },
    TIMEOUT,
  )

  it(
    "the README's control plane table is what --help prints: every flag with its environment variable",
    async () => {
      const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8")
      const from = readme.indexOf("## Control plane configuration")
      const section = readme.slice(from, readme.indexOf("\n## ", from + 1))
      const rows = [...section.matchAll(/^\| `(--[a-z-]+)` +\| `([A-Z_]+)` +\| ([^|]+?) +\|/gm)]
      expect(rows.length).toBeGreaterThan(15)
      const help = (await runBin("mesh-control-plane", ["--help"])).stdout
      for (const [, flag, env] of rows) {
        const description = new RegExp(`\n${flag}( [^\n]*)?\n\n {2}([^\n]*)`).exec(help)?.[2] ?? ""
        expect(description, `${flag} in --help`).toContain(`Env: ${env}.`)
      }
    },
    TIMEOUT,
  )
})

describe("unknown flags", () => {
  it.each([
    ["mesh-control-plane", [], "mesh-control-plane"],
    ["mesh-control-plane", ["admin", "ban"], "mesh-control-plane admin ban"],
    ["mesh-router", [], "mesh-router"],
    ["mesh-node", ["run"], "mesh-node run"],
    ["mesh-node", ["join"], "mesh-node join"],
    ["mesh-one", [], "mesh-one"],
  ] as const)(
    "%s %j names the unknown flag and the command, exit 2",
    async (program, words, command) => {
      const result = await runBin(program, [...words, "--no-such-flag", "x"])
      expect(result.status).toBe(2)
      expect(result.stderr.trim()).toBe(`${program}: unknown flag --no-such-flag for ${command}; see ${command} --help`)
    },
    TIMEOUT,
  )

  it(
    "a misspelt flag of the control plane is named as a flag, with the one meant",
    async () => {
      const result = await runBin("mesh-control-plane", ["--db-drvier", "postgres"])
      expect(result.status).toBe(2)
      expect(result.stderr.trim()).toBe(
        "mesh-control-plane: unknown flag --db-drvier for mesh-control-plane (did you mean --db-driver?); see mesh-control-plane --help",
      )
    },
    TIMEOUT,
  )
})

describe("--log-level", () => {
  it(
    "is the program's own: --log-level error keeps info lines out, whichever level words @effect/cli knows",
    async () => {
      for (const level of ["error", "--log-level=error"]) {
        const args = level.startsWith("--") ? [level] : ["--log-level", level]
        const result = await runBin("mesh-router", [...args, "--control-plane", "http://127.0.0.1:1"])
        expect(result.status).toBe(1)
        expect(result.stderr, level).not.toContain("level=INFO")
        expect(result.stderr.trim()).toBe("mesh-router: not enrolled: give a bootstrap token or an ID token")
      }
      const info = await runBin("mesh-router", ["--log-level", "info", "--control-plane", "http://127.0.0.1:1"])
      expect(info.stderr).toContain("level=INFO fiber=#")
    },
    TIMEOUT,
  )

  it(
    "refuses a level it does not know, naming the flag and the levels",
    async () => {
      const result = await runBin("mesh-router", ["--log-level", "loud", "--control-plane", "http://127.0.0.1:1"])
      expect(result.status).toBe(2)
      expect(result.stderr).toContain('--log-level: "loud" is not one of debug, info, warn, error')
    },
    TIMEOUT,
  )
})

describe("colour", () => {
  it(
    "only for a terminal, and never with NO_COLOR set",
    () => {
      expect(Colour.allowed({ isTTY: true }, {})).toBe(true)
      expect(Colour.allowed({ isTTY: true }, { NO_COLOR: "1" })).toBe(false)
      expect(Colour.allowed({ isTTY: true }, { NO_COLOR: "" })).toBe(true)
      expect(Colour.allowed({ isTTY: false }, {})).toBe(false)
      expect(Colour.allowed({}, {})).toBe(false)
    },
    TIMEOUT,
  )

  it(
    "errors @effect/cli writes reach a pipe without escape codes",
    async () => {
      const result = await runBin("mesh-node", ["rnu"])
      expect(result.status).toBe(2)
      expect(result.stderr).toContain("Invalid subcommand")
      expect(result.stderr).not.toMatch(ESCAPE)
    },
    TIMEOUT,
  )
})
