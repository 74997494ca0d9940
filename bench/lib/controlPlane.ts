/**
 * A control plane under load: the real binary in a child process on a database the benchmark prepares (a sqlite file
 * or a fresh postgres schema), plus that database opened in-process to seed records the way an operator would.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, type Layer, ManagedRuntime, Redacted, Scope } from "effect"
import * as ControlPlaneConfig from "../../src/config/ControlPlaneConfig.js"
import type { DatabaseConfig } from "../../src/config/DatabaseConfig.js"
import * as ControlPlaneLive from "../../src/layers/ControlPlaneLive.js"
import * as TestDatabase from "../../src/testing/TestDatabase.js"
import { type Child, freePort, start } from "./processes.js"

export const PG_URL = process.env.MESH_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

export type Driver = "sqlite" | "postgres"

export interface RunningControlPlane {
  readonly url: string
  readonly database: DatabaseConfig
  /** The control plane's services over the same database, in this process. */
  readonly runtime: ManagedRuntime.ManagedRuntime<
    Layer.Layer.Success<ReturnType<typeof ControlPlaneLive.services>>,
    unknown
  >
  readonly child: Child
  readonly close: () => Promise<void>
}

export const database = async (driver: Driver): Promise<{ config: DatabaseConfig; release: () => Promise<void> }> => {
  if (driver === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "mesh-bench-"))
    return { config: { driver, dsn: Redacted.make(join(dir, "control-plane.db")) }, release: async () => {} }
  }
  const scope = Effect.runSync(Scope.make())
  const config = await Effect.runPromise(Scope.extend(TestDatabase.postgresSchema(PG_URL), scope))
  return { config, release: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

export const launch = async (driver: Driver, extraArgs: ReadonlyArray<string> = []): Promise<RunningControlPlane> => {
  const db = await database(driver)
  const settings = ControlPlaneConfig.make({ issuers: ["http://127.0.0.1:1"], database: db.config })
  // Migrate and create the first key before the server starts, so both see one key set.
  const runtime = ManagedRuntime.make(ControlPlaneLive.services(settings))
  await runtime.runPromise(Effect.void)
  const port = await freePort()
  const child = await start(
    "src/bin/mesh-control-plane.ts",
    [
      "--issuer",
      "http://127.0.0.1:1",
      "--bind-address",
      `127.0.0.1:${port}`,
      "--db-driver",
      driver,
      "--db-dsn",
      Redacted.value(db.config.dsn),
      "--log-level",
      "error",
      ...extraArgs,
    ],
    `http://127.0.0.1:${port}/readyz`,
  )
  return {
    url: `http://127.0.0.1:${port}`,
    database: db.config,
    runtime,
    child,
    close: async () => {
      await child.stop()
      await runtime.dispose()
      await db.release()
    },
  }
}

export const pgAvailable = async (): Promise<boolean> => {
  const pg = (await import("pg")).default
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}
