/** The `instructions` of the node's MCP server: how its tools fit together, read by the agent at initialize. */
export const text = [
  "This MCP server is a mesh node: it connects you to services published by other machines of the mesh.",
  "",
  "Start with get_mesh_info to see whether this node is connected and through which router.",
  "",
  "Authentication: this server is reached over the node's Unix socket (no token) or over TCP with the header",
  "X-Mesh-Authentication: Bearer <API token>, the token kept in the node's data folder (file api-token).",
  "Never print, echo or repeat the API token.",
].join("\n")
