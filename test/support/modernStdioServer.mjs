/** A modern-only MCP server over stdio (SDK v2, `legacy: 'reject'`): modernTools, answering as argv[2]. */
import { serveStdio } from "@modelcontextprotocol/server/stdio"
import { modernTools } from "./modernTools.mjs"

const name = process.argv[2] ?? "stdio"
serveStdio(() => modernTools(name), { legacy: "reject" })
