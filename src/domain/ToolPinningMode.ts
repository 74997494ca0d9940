/**
 * What a changed tool definition does on a node (`tool_pinning` in mesh-node.yaml): `enforce` hides it and refuses
 * calls, `warn` lists and calls it marked and logged, `off` checks nothing. Its own module: the configuration reads
 * it without the pinning rules, which themselves read service names from the configuration's module.
 */
export const MODES = ["enforce", "warn", "off"] as const
export type Mode = (typeof MODES)[number]
/** docs/decisions.md, "Tool definitions from peers". */
export const DEFAULT_MODE: Mode = "enforce"
