/**
 * How a tool on a peer is named to agents: `mcp://<service>/<tool>`, the service as named in its node's
 * `mesh-node.yaml` and the tool as its MCP server lists it. Service arguments may be bare (`docs`) or namespaced
 * (`mcp://docs`); any other scheme is refused, since only MCP services have tools.
 */
import { Either } from "effect"
import { isServiceName } from "./ServiceName.js"

export const SCHEME = "mcp://"

/** Longest tool name taken; MCP asks for at most 128 characters, a little slack costs nothing. */
const MAX_TOOL_LENGTH = 256

export interface ToolName {
  readonly service: string
  readonly tool: string
}

export const format = (name: ToolName): string => `${SCHEME}${name.service}/${name.tool}`

const SCHEMED = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//

/** A service argument, bare or `mcp://<service>` (a trailing slash allowed): the bare name. */
export const parseService = (text: string): Either.Either<string, string> => {
  const trimmed = text.trim()
  const bare = trimmed.startsWith(SCHEME)
    ? trimmed.slice(SCHEME.length).replace(/\/$/, "")
    : SCHEMED.test(trimmed)
      ? undefined
      : trimmed
  if (bare === undefined) return Either.left(`service_name must be a bare name or ${SCHEME}<service>`)
  return isServiceName(bare)
    ? Either.right(bare)
    : Either.left("service_name must be 1-64 letters, digits, '.', '_' or '-'")
}

const hasControl = (text: string): boolean => [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)

export const validTool = (tool: string): boolean =>
  tool.length > 0 && tool.length <= MAX_TOOL_LENGTH && !hasControl(tool)

/** A namespaced tool name, `mcp://<service>/<tool>`. */
export const parse = (text: string): Either.Either<ToolName, string> => {
  const trimmed = text.trim()
  if (!trimmed.startsWith(SCHEME)) {
    return Either.left(`tool_name must be namespaced: ${SCHEME}<service>/<tool>, as find_remote_tools lists it`)
  }
  const rest = trimmed.slice(SCHEME.length)
  const slash = rest.indexOf("/")
  const service = slash === -1 ? rest : rest.slice(0, slash)
  const tool = slash === -1 ? "" : rest.slice(slash + 1)
  if (!isServiceName(service)) return Either.left("the service part of tool_name is not a service name")
  if (!validTool(tool)) return Either.left(`tool_name names no tool: ${SCHEME}<service>/<tool>`)
  return Either.right({ service, tool })
}

/**
 * A tool argument of a search: namespaced (`mcp://<service>/<tool>`, which also names the service) or the bare tool
 * name as its server lists it.
 */
export const parseQuery = (
  text: string,
): Either.Either<{ readonly service?: string; readonly tool: string }, string> => {
  const trimmed = text.trim()
  if (trimmed.startsWith(SCHEME)) return parse(trimmed)
  if (SCHEMED.test(trimmed)) return Either.left(`tool_name must be a tool name or ${SCHEME}<service>/<tool>`)
  return validTool(trimmed) ? Either.right({ tool: trimmed }) : Either.left("tool_name is empty or not a tool name")
}
