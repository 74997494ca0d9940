/**
 * The node's settings, one field per flag of `mesh-node run`, plus the decoded configuration file. The CLI fills it
 * from flags, environment and the file; the in-process harness fills it directly. Defaults live here only.
 */
import { join } from "node:path"
import { Context, Duration, LogLevel, Option, type Redacted } from "effect"
import * as NodeFile from "../domain/NodeFile.js"
import type { ListenAddress } from "./ControlPlaneConfig.js"

export interface TlsSettings {
  readonly certPath: string
  readonly keyPath: string
  /** With a CA, clients must present a certificate it signed, which then replaces the API token. */
  readonly caPath: Option.Option<string>
}

/** Limits on what peers' proxy streams may hold of this node (the serving side). */
export interface IngressSettings {
  /** A stream must have sent its request's headers within this, or it is reset (infinite: no deadline). */
  readonly headersTimeout: Duration.Duration
  /** A stream with no bytes either way for this long is reset, a quiet SSE stream included (infinite: never). */
  readonly idleTimeout: Duration.Duration
  /** Proxy streams one peer may hold open at once, over all its connections; beyond, new ones are reset. */
  readonly maxStreamsPerPeer: number
  /** A backend must send its answer's headers within this (502 otherwise); none: no limit. */
  readonly backendHeadersTimeout: Option.Option<Duration.Duration>
}

export interface NodeSettings {
  /** Where to enroll and sync; else the URL recorded by `join` in the data folder. */
  readonly controlPlaneUrl: Option.Option<string>
  readonly dataDir: string
  /** libp2p listen multiaddrs. */
  readonly listen: ReadonlyArray<string>
  /** Addresses peers are told to dial instead of the listen addresses (a port forward, NAT, a relay of our own). */
  readonly externalAddresses: ReadonlyArray<string>
  /** The local API's TCP listener; none disables it. */
  readonly bindAddress: Option.Option<ListenAddress>
  /** The local API's Unix socket (mode 0600, no token); none disables it. */
  readonly socketPath: Option.Option<string>
  readonly tls: Option.Option<TlsSettings>
  /** Names the local API answers to besides loopback ones and the bind host (`*`: any), against DNS rebinding. */
  readonly allowedHosts: ReadonlyArray<string>
  /** `/metrics`, `/healthz`, `/readyz` without authentication. */
  readonly metricsAddress: Option.Option<ListenAddress>
  /** The API token local callers present on TCP. */
  readonly apiToken: Redacted.Redacted<string>
  /** Where the API token lives, for instructions (never the token itself); none when it came from the environment. */
  readonly apiTokenPath: Option.Option<string>
  /** How often keys, bans and the policy are re-read (jittered by a tenth). */
  readonly syncInterval: Duration.Duration
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  readonly jwtPath: Option.Option<string>
  readonly file: NodeFile.NodeFile
  readonly logLevel: LogLevel.LogLevel
  readonly ingress: IngressSettings
  /** `--max-response-bytes`: the most bytes read from a peer per response; none leaves it to the file, else 16 MiB. */
  readonly maxResponseBytes: Option.Option<number>
  /** How long an inference provider may take to send its response head before the next one is tried. */
  readonly inferenceHeadersTimeout: Duration.Duration
  /** Relay slots held at once, one per connected router, the first listed first; 0: none (reachable directly only). */
  readonly relaySlots: number
}

export class NodeConfig extends Context.Tag("mesh/NodeConfig")<NodeConfig, NodeSettings>() {}

export const defaults = {
  dataDir: ".mesh-node",
  configFile: "mesh-node.yaml",
  listen: "/ip4/0.0.0.0/tcp/0",
  bindAddress: "127.0.0.1:8080",
  socketFile: "mesh.sock",
  apiTokenFile: "api-token",
  syncInterval: "15m",
  /** The flags' spelling of `defaultIngress`. */
  peerHeadersTimeout: "30s",
  peerIdleTimeout: "10m",
  peerMaxStreams: 512,
  backendHeadersTimeout: "0",
  /** Bytes read from a peer per response (its head included) before the exchange is reset. */
  maxResponseBytes: 16 * 1024 * 1024,
  inferenceHeadersTimeout: "30s",
  /** A slot on every router of a usual mesh (two to four), so losing one router leaves the node reachable. */
  relaySlots: 4,
} as const

/**
 * node:http's own header deadline is a minute; half that is ample for a peer whose request is written at once. Ten
 * minutes of silence matches the longest remote tool call a caller's node waits for.
 */
export const defaultIngress: IngressSettings = {
  headersTimeout: Duration.seconds(30),
  idleTimeout: Duration.minutes(10),
  maxStreamsPerPeer: 512,
  backendHeadersTimeout: Option.none(),
}

/** The cap on a peer's response: the flag, else the configuration file's `max_response_bytes`, else the default. */
export const maxResponseBytes = (settings: NodeSettings): number =>
  Option.getOrElse(settings.maxResponseBytes, () => settings.file.max_response_bytes ?? defaults.maxResponseBytes)

export const socketPathIn = (dataDir: string) => join(dataDir, defaults.socketFile)

export const make = (overrides: Partial<NodeSettings> & Pick<NodeSettings, "dataDir" | "apiToken">): NodeSettings => ({
  controlPlaneUrl: Option.none(),
  listen: ["/ip4/127.0.0.1/tcp/0"],
  externalAddresses: [],
  bindAddress: Option.none(),
  socketPath: Option.none(),
  tls: Option.none(),
  allowedHosts: [],
  metricsAddress: Option.none(),
  apiTokenPath: Option.none(),
  syncInterval: Duration.minutes(15),
  bootstrapToken: Option.none(),
  jwtPath: Option.none(),
  file: NodeFile.empty,
  logLevel: LogLevel.Info,
  ingress: defaultIngress,
  maxResponseBytes: Option.none(),
  inferenceHeadersTimeout: Duration.seconds(30),
  relaySlots: defaults.relaySlots,
  ...overrides,
})
