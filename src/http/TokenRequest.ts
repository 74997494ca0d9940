/** The body of `POST /admin/bootstrap-tokens` and `POST /user/bootstrap-tokens`, with the spec's defaults. */
import { Schema } from "effect"
import * as Token from "../domain/BootstrapToken.js"

export const MintTokenBody = Schema.Struct({
  role: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255))),
  ttl_hours: Schema.optionalWith(
    Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(Token.MAX_TTL_HOURS)),
    {
      default: () => Token.DEFAULT_TTL_HOURS,
    },
  ),
  max_usages: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, Token.MAX_USAGES)), {
    default: () => Token.DEFAULT_MAX_USAGES,
  }),
  description: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(1024)), { default: () => "" }),
  autonomous_recovery: Schema.optionalWith(Schema.Boolean, { default: () => false }),
})
export type MintTokenBody = typeof MintTokenBody.Type
