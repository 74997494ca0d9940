/** The check shared by routes a node calls with its credential: the credential verifies and its node is admitted. */
import { Clock, Effect, Option } from "effect"
import type { Facts } from "../../crypto/Biscuit.js"
import { Forbidden, type Unauthorized } from "../../domain/Errors.js"
import { isAdmitted } from "../../domain/Node.js"
import type { CredentialsService } from "../identity/Credentials.js"
import type { NodesService } from "./Nodes.js"

/** The credential's facts; 401 when it does not verify, 403 when its node is unknown, pending, banned or expired. */
export const makeAdmittedCaller =
  (credentials: CredentialsService, nodes: NodesService) =>
  (credential: Uint8Array): Effect.Effect<Facts, Unauthorized | Forbidden> =>
    Effect.gen(function* () {
      const { facts } = yield* credentials.verify(credential).pipe(Effect.mapError((rejected) => rejected.unauthorized))
      const node = yield* nodes.find(facts.peerId)
      const now = yield* Clock.currentTimeMillis
      if (Option.isNone(node) || !isAdmitted(node.value, now)) {
        return yield* new Forbidden({ message: "node is not admitted" })
      }
      return facts
    })
