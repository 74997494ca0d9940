/** The router's settings, one field per flag of `mesh-router`. */
import { Context, Duration, LogLevel, Option, type Redacted } from "effect"
import type { ListenAddress } from "./ControlPlaneConfig.js"

export interface RouterSettings {
  readonly controlPlaneUrl: string
  /** libp2p listen multiaddrs. */
  readonly listen: ReadonlyArray<string>
  /** Addresses to announce instead of the listen addresses (behind NAT or a load balancer). */
  readonly externalAddresses: ReadonlyArray<string>
  readonly dataDir: Option.Option<string>
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  readonly jwtPath: Option.Option<string>
  readonly keysSyncInterval: Duration.Duration
  readonly leaseRenewInterval: Duration.Duration
  readonly metricsAddress: Option.Option<ListenAddress>
  readonly logLevel: LogLevel.LogLevel
}

export class RouterConfig extends Context.Tag("mesh/RouterConfig")<RouterConfig, RouterSettings>() {}

export const defaults = {
  listen: "/ip4/0.0.0.0/tcp/4001",
  keysSyncInterval: "5m",
  leaseRenewInterval: "5m",
  dataDir: ".mesh-router",
} as const

export const make = (overrides: Partial<RouterSettings> & Pick<RouterSettings, "controlPlaneUrl">): RouterSettings => ({
  listen: ["/ip4/127.0.0.1/tcp/0"],
  externalAddresses: [],
  dataDir: Option.none(),
  bootstrapToken: Option.none(),
  jwtPath: Option.none(),
  keysSyncInterval: Duration.minutes(5),
  leaseRenewInterval: Duration.minutes(5),
  metricsAddress: Option.none(),
  logLevel: LogLevel.Info,
  ...overrides,
})
