/** The flags of `mesh-control-plane` (interface spec §2.2), and the database flags its admin commands share. */
import { Effect, Option, Redacted } from "effect"
import { defaults } from "../../config/ControlPlaneConfig.js"
import type { DatabaseConfig } from "../../config/DatabaseConfig.js"
import * as KeyDurations from "../../domain/KeyDurations.js"
import * as Flag from "../flags.js"
import { UsageError } from "../run.js"

export const database = {
  dbDriver: Flag.choice("db-driver", ["sqlite", "postgres"], {
    env: "MESH_DB_DRIVER",
    fallback: defaults.dbDriver,
    description: "SQL driver.",
  }),
  dbDsn: Flag.text("db-dsn", {
    env: "MESH_DB_DSN",
    placeholder: "dsn",
    fallback: defaults.dbDsn,
    description: "Database DSN: a sqlite file path, or a postgres URL.",
  }),
  dbDsnPath: Flag.optionalText("db-dsn-path", {
    env: "MESH_DB_DSN_PATH",
    description: "File containing the DSN; overrides --db-dsn and MESH_DB_DSN.",
  }),
}

/** Resolves the DSN: a file named by --db-dsn-path wins over --db-dsn (itself falling back to MESH_DB_DSN). */
export const resolveDatabase = (flags: {
  readonly dbDriver: "sqlite" | "postgres"
  readonly dbDsn: string
  readonly dbDsnPath: Option.Option<string>
}): Effect.Effect<DatabaseConfig, UsageError> =>
  Option.match(flags.dbDsnPath, {
    onSome: (file) => Effect.map(Flag.readSecretFile(file), Option.some),
    onNone: () => Effect.succeed(Option.some(Redacted.make(flags.dbDsn))),
  }).pipe(
    Effect.flatMap((resolved) => {
      const dsn = Option.getOrElse(resolved, () => Redacted.make(""))
      return Redacted.value(dsn).length === 0
        ? Effect.fail(new UsageError({ message: "--db-dsn: empty DSN" }))
        : Effect.succeed({ driver: flags.dbDriver, dsn })
    }),
  )

export const server = {
  issuer: Flag.optionalText("issuer", {
    env: "MESH_OIDC_ISSUER",
    description: "OIDC issuer URL(s), comma-separated; the first is advertised on /info. Required.",
  }),
  allowedAudiences: Flag.text("allowed-audiences", {
    env: "MESH_ALLOWED_AUDIENCES",
    placeholder: "list",
    fallback: defaults.allowedAudiences.join(","),
    description: "Audiences accepted in OIDC tokens, comma-separated.",
  }),
  oidcClientId: Flag.optionalText("oidc-client-id", {
    env: "MESH_OIDC_CLIENT_ID",
    description: "OAuth client ID advertised on /info. Default: the first allowed audience.",
  }),
  insecureSkipTlsVerify: Flag.boolean("insecure-skip-tls-verify", {
    env: "MESH_INSECURE_SKIP_TLS_VERIFY",
    description: "Skip TLS verification when fetching issuer metadata and keys.",
  }),
  oidcKeysMaxAge: Flag.duration("oidc-keys-max-age", {
    env: "MESH_OIDC_KEYS_MAX_AGE",
    fallback: defaults.oidcKeysMaxAge,
    description:
      "How long an issuer's signing keys are trusted once read (the issuer's Cache-Control max-age may shorten it); they are read again before then, so a key the issuer withdraws is refused within this time. At least 1s.",
  }),
  bindAddress: Flag.listenAddress("bind-address", {
    env: "MESH_BIND_ADDRESS",
    fallback: defaults.bindAddress,
    description: "HTTP listen address.",
  }),
  ...database,
  adminTokenPath: Flag.optionalText("admin-token-path", {
    env: "MESH_ADMIN_TOKEN_PATH",
    description:
      "File containing the bearer token for /admin/* and POST /policies; else the token itself from MESH_ADMIN_TOKEN. Without a token the admin API cannot be used.",
  }),
  autoApproveEnrollment: Flag.boolean("auto-approve-enrollment", {
    env: "MESH_AUTO_APPROVE_ENROLLMENT",
    description: "Issue credentials for valid bootstrap-token enrollments immediately instead of queueing them.",
  }),
  biscuitTtl: Flag.duration("biscuit-ttl", {
    env: "MESH_BISCUIT_TTL",
    fallback: defaults.biscuitTtl,
    description:
      "Credential lifetime; a credential never outlives the key that signs it (next rotation plus the grace period), so more than --key-rotation-interval plus --key-grace-period is never used.",
  }),
  oidcSessionTtl: Flag.duration("oidc-session-ttl", {
    env: "MESH_OIDC_SESSION_TTL",
    fallback: defaults.oidcSessionTtl,
    description: "How long an OIDC enrollment may keep refreshing before the identity must log in again.",
  }),
  keyRotationInterval: Flag.duration("key-rotation-interval", {
    env: "MESH_KEY_ROTATION_INTERVAL",
    fallback: defaults.keyRotationInterval,
    description:
      "How often a new signing key is generated; 0 disables rotation. Members move to the new key as soon as they learn of it (the key_rotation event, or their next key sync).",
  }),
  keyGracePeriod: Flag.duration("key-grace-period", {
    env: "MESH_KEY_GRACE_PERIOD",
    fallback: defaults.keyGracePeriod,
    description: `How long a rotated-out key stays accepted: the time members have to move to the new key. At least ${KeyDurations.GRACE_PER_SYNC} times --member-sync-interval, or the control plane refuses to start.`,
  }),
  memberSyncInterval: Flag.duration("member-sync-interval", {
    env: "MESH_MEMBER_SYNC_INTERVAL",
    fallback: KeyDurations.DEFAULT_MEMBER_SYNC,
    description:
      "The longest key-sync interval of this mesh's routers and nodes (their --keys-sync-interval and --control-plane-sync-interval), which a member that missed the key_rotation event waits before it sees a new key. Only checked against --key-grace-period.",
  }),
  leaseDuration: Flag.duration("lease-duration", {
    env: "MESH_LEASE_DURATION",
    fallback: defaults.leaseDuration,
    description: "Router lease length without renewal.",
  }),
  nodeRetention: Flag.duration("node-retention", {
    env: "MESH_NODE_RETENTION",
    fallback: defaults.nodeRetention,
    description:
      "How long a node record is kept after its session expires; banned nodes are kept forever; 0 keeps all.",
  }),
  meshReconnectInterval: Flag.duration("mesh-reconnect-interval", {
    env: "MESH_MESH_RECONNECT_INTERVAL",
    fallback: defaults.meshReconnectInterval,
    description: "How often the event publisher re-reads router leases and dials routers it is not connected to.",
  }),
  enrollRateLimit: Flag.integer("enroll-rate-limit", {
    env: "MESH_ENROLL_RATE_LIMIT",
    fallback: defaults.enrollRateLimit,
    description: "Requests per second each client may make to /register, /enroll and /enroll/status; 0 disables.",
  }),
  enrollBurst: Flag.integer("enroll-burst", {
    env: "MESH_ENROLL_BURST",
    fallback: defaults.enrollBurst,
    description: "Requests a client may make at once before --enroll-rate-limit applies.",
  }),
  maxBodyBytes: Flag.integer("max-body-bytes", {
    env: "MESH_MAX_BODY_BYTES",
    fallback: defaults.maxBodyBytes,
    description: "Largest request body accepted, in bytes; larger bodies are refused with 413.",
  }),
  requestTimeout: Flag.duration("request-timeout", {
    env: "MESH_REQUEST_TIMEOUT",
    fallback: defaults.requestTimeout,
    description:
      "How long a client may take to send a whole request, headers and body; beyond it the answer is 408 and the connection is closed.",
  }),
  logLevel: Flag.logLevel,
}
