/**
 * Refuses, in one line, to start on a Node.js older than the supported ones (22 from 22.14, and 24). Loaded first by
 * every entry point. Without it an old runtime does not fail cleanly: better-sqlite3 is built for Node-API 10 (Node
 * 22.14 and later) and crashes the process with a segmentation fault when it opens a database on an older one.
 */
import { basename } from "node:path"

/** Node-API 10 arrived in Node 22.14; every Node 24 has it. */
const REQUIRED_NODE_API = 10

/** Why this runtime cannot run mesh, or undefined when it can. */
export const unsupportedRuntime = (versions: {
  readonly node: string
  readonly napi?: string | undefined
}): string | undefined =>
  Number(versions.napi ?? 0) >= REQUIRED_NODE_API
    ? undefined
    : `needs Node.js 22 (22.14 or later) or 24; this is Node ${versions.node}`

const problem = unsupportedRuntime(process.versions)
if (problem !== undefined) {
  process.stderr.write(`${basename(process.argv[1] ?? "mesh", ".js")}: ${problem}\n`)
  process.exit(1)
}
