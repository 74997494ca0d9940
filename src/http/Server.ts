/** The control plane's HTTP server: the API with its handlers and middleware, on a node:http listener. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import { Layer } from "effect"
import type { ListenAddress } from "../config/ControlPlaneConfig.js"
import { ControlPlaneApi } from "./Api.js"
import { AdminHttpLive } from "./admin/AdminHttp.js"
import { AdminNodesHttpLive } from "./admin/NodesHttp.js"
import { AdminStatusHttpLive } from "./admin/StatusHttp.js"
import { AdminAuthLive } from "./auth/AdminAuth.js"
import { UserAuthLive } from "./auth/UserAuth.js"
import * as CanonicalPath from "./CanonicalPath.js"
import { CatalogHttpLive } from "./catalog/CatalogHttp.js"
import { ConsoleHttpLive } from "./console/ConsoleHttp.js"
import { CredentialsHttpLive } from "./credentials/CredentialsHttp.js"
import { EnrollmentHttpLive } from "./enrollment/EnrollmentHttp.js"
import * as Listener from "./Listener.js"
import * as Middleware from "./Middleware.js"
import { PoliciesHttpLive } from "./policies/PoliciesHttp.js"
import * as PublicFront from "./public/PublicFront.js"
import { PublicHttpLive } from "./public/PublicHttp.js"
import { RoutersHttpLive } from "./routers/RoutersHttp.js"
import { AdminToolDriftHttpLive, ToolDriftHttpLive } from "./tooldrift/ToolDriftHttp.js"
import { UserHttpLive } from "./user/UserHttp.js"

export const ApiLive = HttpApiBuilder.api(ControlPlaneApi).pipe(
  Layer.provide([
    PublicHttpLive,
    EnrollmentHttpLive,
    CredentialsHttpLive,
    RoutersHttpLive,
    CatalogHttpLive,
    ToolDriftHttpLive,
    PoliciesHttpLive,
    AdminHttpLive,
    AdminNodesHttpLive,
    AdminStatusHttpLive,
    AdminToolDriftHttpLive,
    UserHttpLive,
    ConsoleHttpLive,
  ]),
  Layer.provide([AdminAuthLive, UserAuthLive]),
)

/**
 * Serves the API on `address`, with `/info` and `/keys` answered from memory ahead of it (`PublicFront`); the
 * HttpServer stays in the output so callers can read the bound port. The router matches paths exactly as the
 * middleware's route table does (`CanonicalPath`).
 */
export const layer = (address: ListenAddress, options: Listener.ListenerOptions) =>
  Listener.serve(
    HttpApiBuilder.serve().pipe(
      Layer.provide(Middleware.layer),
      Layer.provide(ApiLive),
      HttpServer.withLogAddress,
      Layer.locally(HttpRouter.currentRouterConfig, CanonicalPath.routerConfig),
    ),
    { host: address.host, port: address.port },
    options,
    PublicFront.make,
  )
