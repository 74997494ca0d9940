/**
 * `mesh-control-plane --check`: the server's flags and files checked as a start would check them (the database is
 * not opened, the network not touched), and the settings printed.
 */
import { existsSync } from "node:fs"
import { dirname } from "node:path"
import { Effect, Option, Redacted } from "effect"
import * as Check from "../Check.js"
import { UsageError } from "../run.js"
import { type ServerFlags, settingsFromFlags } from "./serve.js"

export const check = (flags: ServerFlags) =>
  Effect.gen(function* () {
    const s = yield* settingsFromFlags(flags)
    const dsn = Redacted.value(s.database.dsn)
    if (s.database.driver === "sqlite" && dsn !== ":memory:" && !existsSync(dirname(dsn))) {
      return yield* new UsageError({ message: `--db-dsn: the folder of ${dsn} does not exist` })
    }
    yield* Check.report("mesh-control-plane", [
      ["issuers", Check.list(s.issuers)],
      ["allowed audiences", Check.list(s.allowedAudiences)],
      ["oidc client id", s.oidcClientId],
      ["bind address", Check.address(s.bindAddress)],
      ["database", Check.database(s.database)],
      [
        "admin API",
        Option.isSome(s.adminToken)
          ? `enabled (token ${Check.optional(flags.adminTokenPath, (p) => `from ${p}`, "from MESH_ADMIN_TOKEN")})`
          : "disabled (no admin token)",
      ],
      ["auto-approve enrollment", String(s.autoApproveEnrollment)],
      ["credential lifetime", Check.duration(s.biscuitTtl)],
      ["key rotation", `${Check.duration(s.keyRotationInterval)}, grace ${Check.duration(s.keyGracePeriod)}`],
      ["lease duration", Check.duration(s.leaseDuration)],
      ["node retention", Check.duration(s.nodeRetention)],
      ["log", `${flags.logLevel.label.toLowerCase()}, ${s.logFormat}`],
    ])
  })
