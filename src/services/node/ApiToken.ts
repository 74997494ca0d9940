/**
 * The node's API token: what a local caller on the TCP listener presents (`X-Mesh-Authentication: Bearer <token>`).
 * Compared in constant time over SHA-256 digests, so neither the length nor a prefix of the token leaks.
 */
import { Context } from "effect"

export interface ApiTokenService {
  readonly matches: (presented: string) => boolean
}

export class ApiToken extends Context.Tag("mesh/ApiToken")<ApiToken, ApiTokenService>() {}
