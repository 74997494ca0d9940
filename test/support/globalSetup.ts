/**
 * Says which Node runs the tests (the test workers are forks of this process, on the same binary), and fails the
 * whole run at once when MESH_TEST_PG_URL names a server that does not answer: postgres suites must run in CI, never
 * silently skip.
 */
import pg from "pg"

export default async function setup(): Promise<void> {
  process.stdout.write(`Tests run on Node ${process.version}.\n`)
  const url = process.env.MESH_TEST_PG_URL?.trim()
  if (url === undefined || url.length === 0) {
    process.stdout.write("MESH_TEST_PG_URL is not set: postgres suites are skipped.\n")
    return
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  try {
    await client.connect()
    await client.query("SELECT 1")
  } catch (error) {
    throw new Error(`MESH_TEST_PG_URL is set but postgres does not answer: ${(error as Error).message}`)
  } finally {
    await client.end().catch(() => undefined)
  }
}
