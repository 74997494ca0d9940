/** Builds the operator console once before any test, so every control plane a test starts serves the current one. */
import { build } from "../../console/build.js"

export default async function setup(): Promise<void> {
  await build()
}
