/** The control plane's HTTP API: its groups, each defined in its own folder. */
import * as HttpApi from "@effect/platform/HttpApi"
import { AdminApi } from "./admin/AdminApi.js"
import { AdminNodesApi } from "./admin/NodesApi.js"
import { AdminStatusApi } from "./admin/StatusApi.js"
import { CatalogApi } from "./catalog/CatalogApi.js"
import { ConsoleApi } from "./console/ConsoleApi.js"
import { CredentialsApi } from "./credentials/CredentialsApi.js"
import { EnrollmentApi } from "./enrollment/EnrollmentApi.js"
import { PoliciesApi } from "./policies/PoliciesApi.js"
import { PublicApi } from "./public/PublicApi.js"
import { RoutersApi } from "./routers/RoutersApi.js"
import { AdminToolDriftApi, ToolDriftApi } from "./tooldrift/ToolDriftApi.js"
import { UserApi } from "./user/UserApi.js"

export class ControlPlaneApi extends HttpApi.make("control-plane")
  .add(PublicApi)
  .add(EnrollmentApi)
  .add(CredentialsApi)
  .add(RoutersApi)
  .add(CatalogApi)
  .add(ToolDriftApi)
  .add(PoliciesApi)
  .add(AdminApi)
  .add(AdminNodesApi)
  .add(AdminStatusApi)
  .add(AdminToolDriftApi)
  .add(UserApi)
  .add(ConsoleApi) {}
