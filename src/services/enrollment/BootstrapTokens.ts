/** Bootstrap tokens: minting (the secret is returned once), listing, revoking, looking up and spending. */
import { Context, type Effect, type Option } from "effect"
import type { BootstrapToken } from "../../domain/BootstrapToken.js"
import type { NotFound } from "../../domain/Errors.js"
import type { Actor } from "../operations/Audit.js"

export interface MintRequest {
  readonly role: string
  readonly ttlHours: number
  readonly maxUsages: number
  readonly description: string
  readonly autonomousRecovery: boolean
  readonly ownerId: string | undefined
  readonly actor: Actor
}

export interface BootstrapTokensService {
  readonly mint: (request: MintRequest) => Effect.Effect<{ readonly token: BootstrapToken; readonly secret: string }>
  readonly list: (filter?: { readonly ownerId?: string }) => Effect.Effect<ReadonlyArray<BootstrapToken>>
  readonly find: (id: string) => Effect.Effect<Option.Option<BootstrapToken>>
  readonly findBySecret: (secret: string) => Effect.Effect<Option.Option<BootstrapToken>>
  /** Marks a token revoked; repeating it changes nothing. */
  readonly revoke: (id: string, actor: Actor) => Effect.Effect<BootstrapToken, NotFound>
  /** Spends one usage if the token is unrevoked, unexpired and not used up at `now`; false otherwise. */
  readonly spend: (id: string, now: number) => Effect.Effect<boolean>
}

export class BootstrapTokens extends Context.Tag("mesh/BootstrapTokens")<BootstrapTokens, BootstrapTokensService>() {}
