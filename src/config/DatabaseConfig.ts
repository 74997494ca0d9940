/** Where the control plane keeps its state: the `--db-driver` and the resolved DSN. */
import type { Redacted } from "effect"

export type DatabaseDriver = "sqlite" | "postgres"

export interface DatabaseConfig {
  readonly driver: DatabaseDriver
  /** For sqlite a file path (or `:memory:`); for postgres a connection URL. Redacted: a URL may hold a password. */
  readonly dsn: Redacted.Redacted<string>
}
