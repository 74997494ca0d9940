/**
 * The help of the mesh programs, and the flags each of their commands knows. @effect/cli writes its help with lines
 * that say nothing here ("A user-defined piece of text.", "This setting is optional.": every flag falls back to its
 * environment variable, required ones included), its own `--log-level` next to ours, and usage lines that start with
 * the subcommand alone (`$ ban ...`). Its help document is kept, cleaned of those lines, and printed with a usage line
 * that starts with the program's name and the path of subcommands.
 */
import * as AutoCorrect from "@effect/cli/AutoCorrect"
import * as CliConfig from "@effect/cli/CliConfig"
import type * as Command from "@effect/cli/Command"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import type { Span } from "@effect/cli/HelpDoc/Span"
import * as Usage from "@effect/cli/Usage"
import { Option } from "effect"

/** A command and the subcommands under it, as @effect/cli holds them. */
export interface CommandNode {
  readonly name: string
  /** The command with its subcommands, for its help. */
  readonly descriptor: CommandDescriptor.Command<unknown>
  /** The command without its subcommands, for its own flags. */
  readonly own: CommandDescriptor.Command<unknown>
  readonly description: HelpDoc.HelpDoc
  readonly children: ReadonlyArray<CommandNode>
}

/**
 * The fields @effect/cli's descriptors carry (`Standard`, `Map`, `Subcommands`). Its public `getSubcommands` goes one
 * level deep and drops the grandchildren, so the tree is read from these.
 */
interface Instruction {
  readonly _tag: "Standard" | "GetUserInput" | "Map" | "Subcommands"
  readonly name?: string
  readonly description?: HelpDoc.HelpDoc
  readonly command?: Instruction
  readonly parent?: Instruction
  readonly children?: ReadonlyArray<Instruction>
}

const nodeOf = (descriptor: Instruction): CommandNode => {
  switch (descriptor._tag) {
    case "Map":
      return { ...nodeOf(descriptor.command as Instruction), descriptor: descriptor as never }
    case "Subcommands": {
      const parent = nodeOf(descriptor.parent as Instruction)
      return { ...parent, descriptor: descriptor as never, children: (descriptor.children ?? []).map(nodeOf) }
    }
    default:
      return {
        name: descriptor.name ?? "",
        descriptor: descriptor as never,
        own: descriptor as never,
        description: descriptor.description ?? HelpDoc.empty,
        children: [],
      }
  }
}

export const tree = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>): CommandNode =>
  nodeOf(command.descriptor as unknown as Instruction)

/** Every command of the tree with the words that run it (`["mesh-control-plane", "admin", "ban"]`). */
export const walk = (root: CommandNode): ReadonlyArray<{ path: ReadonlyArray<string>; node: CommandNode }> => {
  const visit = (
    node: CommandNode,
    path: ReadonlyArray<string>,
  ): ReadonlyArray<{ path: ReadonlyArray<string>; node: CommandNode }> => [
    { path, node },
    ...node.children.flatMap((child) => visit(child, [...path, child.name])),
  ]
  return visit(root, [root.name])
}

/** The options @effect/cli adds to every command. Its `--log-level` is not among them: argv's goes to ours. */
export const BUILT_IN = { "--help": false, "-h": false, "--version": false, "--wizard": false, "--completions": true }

/** The flags of a command itself (not its subcommands'), each with whether it takes a value. */
export const flagsOf = (node: CommandNode): ReadonlyMap<string, boolean> => {
  const flags = new Map<string, boolean>(Object.entries(BUILT_IN))
  const visit = (usage: Usage.Usage): void => {
    switch (usage._tag) {
      case "Named":
        // A command's usage names the command itself too; only flags start with a dash.
        for (const name of usage.names) if (name.startsWith("-")) flags.set(name, Option.isSome(usage.acceptedValues))
        return
      case "Optional":
      case "Repeated":
        visit(usage.usage)
        return
      case "Alternation":
      case "Concat":
        visit(usage.left)
        visit(usage.right)
        return
      default:
        return
    }
  }
  visit(CommandDescriptor.getUsage(node.own))
  return flags
}

const spanText = (span: Span): string => {
  switch (span._tag) {
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    case "Text":
    case "URI":
      return span.value
    default:
      return spanText(span.value)
  }
}

export const docText = (doc: HelpDoc.HelpDoc): string => {
  switch (doc._tag) {
    case "Header":
    case "Paragraph":
      return spanText(doc.value)
    case "DescriptionList":
      return doc.definitions.map(([span, block]) => `${spanText(span)}\n${docText(block)}`).join("\n")
    case "Enumeration":
      return doc.elements.map(docText).join("\n")
    case "Sequence":
      return `${docText(doc.left)}\n${docText(doc.right)}`
    default:
      return ""
  }
}

/** The lines @effect/cli adds under every flag, which our descriptions say better (default, env, accepted words). */
export const BOILERPLATE: ReadonlyArray<RegExp> = [
  /^A user-defined piece of text\.$/,
  /^A true or false value\.$/,
  /^An integer\.$/,
  /^This setting is optional\./,
  /^This option can be set from environment variables\.$/,
  /^This option may be repeated zero or more times\.$/,
  /^One of the following: /,
]

const isBoilerplate = (doc: HelpDoc.HelpDoc) =>
  doc._tag === "Paragraph" && BOILERPLATE.some((pattern) => pattern.test(spanText(doc.value)))

/** @effect/cli's own `--log-level` (levels all…none) is not ours and is not read: it leaves the help. */
const isForeignLogLevel = (span: Span) => spanText(span).startsWith("--log-level all")

const clean = (doc: HelpDoc.HelpDoc): HelpDoc.HelpDoc => {
  switch (doc._tag) {
    case "Sequence": {
      const left = clean(doc.left)
      const right = clean(doc.right)
      return HelpDoc.isEmpty(left) ? right : HelpDoc.isEmpty(right) ? left : HelpDoc.sequence(left, right)
    }
    case "DescriptionList": {
      const kept = doc.definitions
        .filter(([span]) => !isForeignLogLevel(span))
        .map(([span, block]) => [span, clean(block)] as [Span, HelpDoc.HelpDoc])
      return kept.length === 0 ? HelpDoc.empty : HelpDoc.descriptionList(kept as [[Span, HelpDoc.HelpDoc]])
    }
    default:
      return isBoilerplate(doc) ? HelpDoc.empty : doc
  }
}

const config = CliConfig.make({ showAllNames: true, showBuiltIns: true, showTypes: true })

/** Whether the command does something itself, without a subcommand (it has flags of its own). */
export const runsItself = (node: CommandNode) => [...flagsOf(node).keys()].some((flag) => !(flag in BUILT_IN))

/**
 * The help of the command at `path`: name and version, usage lines from the program's name, description, options,
 * and its subcommands by name with their descriptions (each has its own `--help`).
 */
export const render = (path: ReadonlyArray<string>, node: CommandNode, version: string): HelpDoc.HelpDoc => {
  const prefix = path.slice(0, -1).join(" ")
  const own = Usage.enumerate(CommandDescriptor.getUsage(node.own), config).map((span) =>
    HelpDoc.p(`$ ${prefix === "" ? "" : `${prefix} `}${spanText(span)}`),
  )
  const usage =
    node.children.length === 0
      ? own
      : [...(runsItself(node) ? own : []), HelpDoc.p(`$ ${path.join(" ")} <command> [flags]`)]
  const width = Math.max(0, ...node.children.map((child) => child.name.length)) + 2
  const commands =
    node.children.length === 0
      ? []
      : [
          HelpDoc.h1("COMMANDS"),
          ...node.children.map((child) =>
            HelpDoc.p(`  ${child.name.padEnd(width)}${docText(child.description).trim()}`),
          ),
          HelpDoc.p(`Each command has its own help: ${path.join(" ")} <command> --help`),
        ]
  return HelpDoc.blocks([
    HelpDoc.p(`${path.join(" ")} ${version}`),
    HelpDoc.h1("USAGE"),
    ...usage,
    clean(CommandDescriptor.getHelp(node.own, config)),
    ...commands,
  ])
}

/** The command `argv` names (subcommand words in order), for `--help` anywhere on the line. */
export const commandAt = (root: CommandNode, argv: ReadonlyArray<string>) => {
  let node = root
  const path = [root.name]
  for (const word of argv) {
    const child = node.children.find((c) => c.name === word)
    if (child !== undefined) {
      node = child
      path.push(child.name)
    }
  }
  return { node, path }
}

/**
 * The first flag of `argv` that the command it reaches does not know, with the closest one it does. @effect/cli
 * names it for a command without subcommands, but reads it as a misspelt subcommand where there are some.
 */
export const unknownFlag = (
  root: CommandNode,
  argv: ReadonlyArray<string>,
): Option.Option<{ flag: string; command: string; closest: Option.Option<string> }> => {
  let node = root
  const path = [root.name]
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ""
    if (word === "--") break
    if (word.startsWith("-") && word.length > 1) {
      const [name = word, inline] = word.split("=", 2)
      const known = flagsOf(node)
      const takesValue = known.get(name)
      if (takesValue === undefined) {
        const closest = [...known.keys()]
          .filter((k) => !k.startsWith("--completions"))
          .map((k) => [k, AutoCorrect.levensteinDistance(name, k, config)] as const)
          .filter(([, d]) => d <= 2)
          .sort((a, b) => a[1] - b[1])[0]
        return Option.some({ flag: name, command: path.join(" "), closest: Option.fromNullable(closest?.[0]) })
      }
      if (takesValue && inline === undefined) i++
      continue
    }
    const child = node.children.find((c) => c.name === word)
    if (child !== undefined) {
      node = child
      path.push(child.name)
    }
  }
  return Option.none()
}
