/** Enrolls nodes directly into a harnessed control plane's records (see src/testing/DirectEnrollment.ts). */
import { Effect } from "effect"
import type { ControlPlaneHarness } from "../../src/testing/ControlPlaneHarness.js"
import * as DirectEnrollment from "../../src/testing/DirectEnrollment.js"

export type EnrolledNode = DirectEnrollment.EnrolledNode

export const enrollDirectly = (cp: ControlPlaneHarness, options: DirectEnrollment.Options = {}) =>
  DirectEnrollment.enroll(options).pipe(Effect.provide(cp.context))
