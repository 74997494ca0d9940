/**
 * The control plane's settings, one field per flag of the interface spec (§2.2). The CLI fills it from flags and
 * environment; the in-process harness fills it directly. Defaults live here only.
 */
import { Context, Duration, LogLevel, Option, Redacted } from "effect"
import type { DatabaseConfig } from "./DatabaseConfig.js"

export interface ListenAddress {
  readonly host: string
  readonly port: number
}

export interface ControlPlaneSettings {
  /** OIDC issuers accepted for enrollment and the user API; the first is advertised on /info. */
  readonly issuers: ReadonlyArray<string>
  readonly allowedAudiences: ReadonlyArray<string>
  readonly oidcClientId: string
  readonly insecureSkipTlsVerify: boolean
  /** How long an issuer's key set is trusted once read; its `Cache-Control: max-age` may shorten it. */
  readonly oidcKeysMaxAge: Duration.Duration
  readonly bindAddress: ListenAddress
  readonly database: DatabaseConfig
  /** Bearer token of the operator API; without one the admin API answers 401 to everyone. */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly autoApproveEnrollment: boolean
  readonly biscuitTtl: Duration.Duration
  readonly oidcSessionTtl: Duration.Duration
  /** Zero disables rotation. */
  readonly keyRotationInterval: Duration.Duration
  readonly keyGracePeriod: Duration.Duration
  readonly leaseDuration: Duration.Duration
  /** Zero keeps every node record. */
  readonly nodeRetention: Duration.Duration
  readonly meshReconnectInterval: Duration.Duration
  readonly logLevel: LogLevel.LogLevel
  readonly logFormat: "text" | "json"
  /** Per-client limit on /register, /enroll and /enroll/status; perSecond 0 disables it. */
  readonly enrollRateLimit: { readonly perSecond: number; readonly burst: number }
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number
  /** How long a client may take to send a whole request (408 and the connection closed beyond). */
  readonly requestTimeout: Duration.Duration
  /** How long requests in flight may finish once the server stops; then their connections are cut. Not a flag. */
  readonly shutdownGrace: Duration.Duration
}

export class ControlPlaneConfig extends Context.Tag("mesh/ControlPlaneConfig")<
  ControlPlaneConfig,
  ControlPlaneSettings
>() {}

export const DEFAULT_AUDIENCE = "mesh-mesh-audience"

export const defaults = {
  allowedAudiences: [DEFAULT_AUDIENCE],
  insecureSkipTlsVerify: false,
  oidcKeysMaxAge: "10m",
  bindAddress: "0.0.0.0:8080",
  dbDriver: "sqlite",
  dbDsn: "control-plane.db",
  autoApproveEnrollment: false,
  biscuitTtl: "24h",
  oidcSessionTtl: "2160h",
  keyRotationInterval: "24h",
  keyGracePeriod: "1h",
  leaseDuration: "15m",
  nodeRetention: "720h",
  meshReconnectInterval: "30s",
  logLevel: "info",
  enrollRateLimit: 10,
  enrollBurst: 20,
  maxBodyBytes: 1024 * 1024,
  requestTimeout: "30s",
} as const

/** Requests in flight get this long once stopping starts: well inside the ten seconds init systems wait. */
export const SHUTDOWN_GRACE = Duration.seconds(5)

/** Settings with every default applied; `overrides` names only what differs. Used by tests and the dev mesh. */
export const make = (
  overrides: Partial<ControlPlaneSettings> & Pick<ControlPlaneSettings, "issuers" | "database">,
): ControlPlaneSettings => {
  const allowedAudiences = overrides.allowedAudiences ?? defaults.allowedAudiences
  return {
    allowedAudiences,
    oidcClientId: allowedAudiences[0] ?? DEFAULT_AUDIENCE,
    insecureSkipTlsVerify: defaults.insecureSkipTlsVerify,
    oidcKeysMaxAge: Duration.minutes(10),
    bindAddress: { host: "127.0.0.1", port: 0 },
    adminToken: Option.none(),
    autoApproveEnrollment: defaults.autoApproveEnrollment,
    biscuitTtl: Duration.hours(24),
    oidcSessionTtl: Duration.hours(2160),
    keyRotationInterval: Duration.hours(24),
    keyGracePeriod: Duration.hours(1),
    leaseDuration: Duration.minutes(15),
    nodeRetention: Duration.hours(720),
    meshReconnectInterval: Duration.seconds(30),
    logLevel: LogLevel.Info,
    logFormat: "text",
    enrollRateLimit: { perSecond: defaults.enrollRateLimit, burst: defaults.enrollBurst },
    maxBodyBytes: defaults.maxBodyBytes,
    requestTimeout: Duration.seconds(30),
    shutdownGrace: SHUTDOWN_GRACE,
    ...overrides,
  }
}

export const sqliteMemory: DatabaseConfig = { driver: "sqlite", dsn: Redacted.make(":memory:") }
