/** The control plane's HTTP API: its groups, each defined in its own folder. */
import { HttpApi } from "@effect/platform"
import { AdminApi } from "./admin/AdminApi.js"
import { CredentialsApi } from "./credentials/CredentialsApi.js"
import { EnrollmentApi } from "./enrollment/EnrollmentApi.js"
import { PoliciesApi } from "./policies/PoliciesApi.js"
import { PublicApi } from "./public/PublicApi.js"
import { UserApi } from "./user/UserApi.js"

export class ControlPlaneApi extends HttpApi.make("control-plane")
  .add(PublicApi)
  .add(EnrollmentApi)
  .add(CredentialsApi)
  .add(PoliciesApi)
  .add(AdminApi)
  .add(UserApi) {}
