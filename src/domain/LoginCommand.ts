/**
 * The command that logs a waiting node in, as the node tells its user (log line, login-only MCP server). It names the
 * running node's own data folder, absolute, and control plane: `join` run without them enrolls into `./.mesh-node`,
 * which the running node never reads, and leaves the control plane with an admitted node nobody runs.
 */
import { resolve } from "node:path"

/** A word as sh reads it: quoted when it holds anything but safe characters. */
const shell = (word: string) => (/^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)

export const joinCommand = (controlPlane: string | undefined, dataDir: string): string =>
  [
    "mesh-node join",
    `--control-plane ${controlPlane === undefined ? "<control plane URL>" : shell(controlPlane)}`,
    `--data-dir ${shell(resolve(dataDir))}`,
    "--bootstrap-token-path <file>",
  ].join(" ")
