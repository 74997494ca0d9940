/** The control plane's HTTP API: its groups, each defined in its own folder. */
import { HttpApi } from "@effect/platform"
import { CredentialsApi } from "./credentials/CredentialsApi.js"
import { PublicApi } from "./public/PublicApi.js"

export class ControlPlaneApi extends HttpApi.make("control-plane").add(PublicApi).add(CredentialsApi) {}
