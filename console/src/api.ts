/**
 * The console's client of the control plane's JSON API. Requests and answers are typed from the HttpApi definition
 * the server routes with (type imports only: nothing of the server reaches the browser), and the method and path of
 * each route come from the same definition, read when the console is built (`console/build.ts`). Bearer tokens only:
 * no cookie is ever sent, so no other site can make the browser act for the operator.
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import type { ControlPlaneApi } from "../../src/http/Api.js"
import type { PolicyUpdateJson } from "../../src/http/policies/PolicyJson.js"

type Groups = typeof ControlPlaneApi extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never

export type GroupName = HttpApiGroup.HttpApiGroup.Name<Groups>
type EndpointsOf<G extends GroupName> = HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, G>
export type EndpointName<G extends GroupName> = HttpApiEndpoint.HttpApiEndpoint.Name<EndpointsOf<G>>
type Endpoint<G extends GroupName, N extends string> = HttpApiEndpoint.HttpApiEndpoint.WithName<EndpointsOf<G>, N>

/** What a route answers when it succeeds. */
export type Success<G extends GroupName, N extends EndpointName<G>> = HttpApiEndpoint.HttpApiEndpoint.Success<
  Endpoint<G, N>
>

type Part<K extends string, T> = [T] extends [never] ? {} : { readonly [P in K]: T }

/** What a route takes: its path parameters, query and body, each only where the route has one. */
export type Request<G extends GroupName, N extends EndpointName<G>> = Part<
  "path",
  HttpApiEndpoint.HttpApiEndpoint.PathParsed<Endpoint<G, N>>
> &
  Part<"payload", HttpApiEndpoint.HttpApiEndpoint.Payload<Endpoint<G, N>>> & {
    readonly urlParams?: HttpApiEndpoint.HttpApiEndpoint.UrlParams<Endpoint<G, N>>
  }

export type Routes = { readonly [G in GroupName]: { readonly [N in EndpointName<G>]: Route } }

interface Route {
  readonly method: string
  /** `/admin/enrollments/:id/approve` */
  readonly path: string
}

declare const __MESH_ROUTES__: Routes

/** A failed call, in words: the API's `{error, message}` body, or what went wrong on the way. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

export interface Client {
  readonly call: <G extends GroupName, N extends EndpointName<G>>(
    group: G,
    name: N,
    request: Request<G, N>,
  ) => Promise<Success<G, N>>
  /** `POST /policies` in protojson; its body is described by `PolicyUpdateJson`, which the route is annotated with. */
  readonly savePolicy: (policy: PolicyUpdateJson) => Promise<void>
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null

const query = (params: Readonly<Record<string, unknown>> | undefined): string => {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

const fillPath = (path: string, params: unknown): string =>
  path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(isRecord(params) ? (params[name] ?? "") : "")))

const failure = async (response: Response): Promise<ApiError> => {
  const body: unknown = await response.json().catch(() => undefined)
  if (isRecord(body) && typeof body.error === "string" && typeof body.message === "string") {
    return new ApiError(response.status, body.error, body.message)
  }
  return new ApiError(response.status, "http", `The control plane answered HTTP ${response.status}.`)
}

/**
 * A client sending `bearer()` (read at each call, so signing out takes effect at once); `onUnauthorized` hears of
 * every 401 on an authenticated call, which ends the session.
 */
export const makeClient = (bearer: () => string | undefined, onUnauthorized: (error: ApiError) => void): Client => {
  const send = async (method: string, path: string, body: unknown, contentType?: string): Promise<unknown> => {
    const token = bearer()
    const headers: Record<string, string> = { accept: "application/json" }
    if (token !== undefined) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers["content-type"] = contentType ?? "application/json"
    let response: Response
    try {
      response = await fetch(path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        credentials: "omit",
        cache: "no-store",
        redirect: "error",
      })
    } catch {
      throw new ApiError(0, "network", "The control plane cannot be reached. Check the connection and try again.")
    }
    if (!response.ok) {
      const error = await failure(response)
      if (response.status === 401 && token !== undefined) onUnauthorized(error)
      throw error
    }
    return response.status === 204 ? undefined : response.json()
  }

  return {
    call: async (group, name, request) => {
      const route = (__MESH_ROUTES__[group] as Readonly<Record<string, Route>>)[name as string] as Route
      const r = request as { readonly path?: unknown; readonly payload?: unknown; readonly urlParams?: unknown }
      const urlParams = isRecord(r.urlParams) ? r.urlParams : undefined
      return (await send(route.method, fillPath(route.path, r.path) + query(urlParams), r.payload)) as never
    },
    savePolicy: async (policy) => {
      const route = __MESH_ROUTES__.policies.post
      await send(route.method, route.path, policy)
    },
  }
}
