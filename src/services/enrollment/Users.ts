/** OIDC users, registered on first sight of a valid ID token; the user id is the identity key `<issuer>|<subject>`. */
import { Context, type Effect } from "effect"
import type { Identity } from "../../domain/Node.js"

export interface User {
  readonly id: string
  readonly issuer: string
  readonly subject: string
  readonly email: string | undefined
  readonly firstSeenAt: number
  readonly lastSeenAt: number
}

export interface UsersService {
  /** Records that the identity was seen now; creates the user on first sight. */
  readonly seen: (identity: Identity) => Effect.Effect<User>
  readonly list: Effect.Effect<ReadonlyArray<User>>
}

export class Users extends Context.Tag("mesh/Users")<Users, UsersService>() {}
