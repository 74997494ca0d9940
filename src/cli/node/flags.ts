/** Flags of `mesh-node` shared by its verbs. */
import * as NodeConfig from "../../config/NodeConfig.js"
import * as Flag from "../flags.js"

export const controlPlane = Flag.optionalText("control-plane", {
  env: "MESH_CONTROL_PLANE",
  description: "URL of the control plane. `run` falls back to the one recorded by `join` in the data folder.",
})

export const dataDir = Flag.text("data-dir", {
  env: "MESH_DATA_DIR",
  fallback: NodeConfig.defaults.dataDir,
  description: "Folder for the node's key, credential, API token and socket (created 0700, files 0600).",
})

export const bootstrapTokenPath = Flag.optionalText("bootstrap-token-path", {
  env: "MESH_BOOTSTRAP_TOKEN_PATH",
  description: "File holding a bootstrap token to enroll with.",
})

export const jwtPath = Flag.optionalText("jwt-path", {
  env: "MESH_JWT_PATH",
  description: "File holding an OIDC ID token to enroll with.",
})
