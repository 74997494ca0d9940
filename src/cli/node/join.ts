/**
 * `mesh-node join`: enrolls this machine (bootstrap token or OIDC ID token), stores its key and credential in the
 * data folder and reports what it got. A running node waiting for a login picks the new identity up by itself.
 */
import { readFile } from "node:fs/promises"
import * as Command from "@effect/cli/Command"
import { Console, Duration, Effect, Either, Layer, Option, Redacted, Ref } from "effect"
import * as Labels from "../../domain/Labels.js"
import { NODE_ROLE } from "../../domain/Policy.js"
import * as Logging from "../../layers/Logging.js"
import * as ControlPlaneClientLive from "../../layers/member/ControlPlaneClientLive.js"
import * as MembershipLive from "../../layers/member/MembershipLive.js"
import { Membership, type PendingEnrollment } from "../../services/member/Membership.js"
import * as Flag from "../flags.js"
import { UsageError } from "../run.js"
import * as Approval from "./Approval.js"
import * as NodeFlags from "./flags.js"

const flags = {
  controlPlane: NodeFlags.controlPlane,
  dataDir: NodeFlags.dataDir,
  bootstrapTokenPath: NodeFlags.bootstrapTokenPath,
  jwtPath: NodeFlags.jwtPath,
  role: Flag.text("role", {
    env: "MESH_ROLE",
    fallback: NODE_ROLE,
    placeholder: "role",
    description: "Role to request; the policy's roles say what each may do.",
  }),
  labels: Flag.text("labels", {
    env: "MESH_LABELS",
    placeholder: "k=v,...",
    fallback: "",
    description: "Labels to attest, as k=v[,k=v]; the policy must allow them.",
  }),
  logLevel: Flag.logLevel,
}

export const join = Command.make("join", flags, (f) =>
  Effect.gen(function* () {
    const url = yield* Option.match(f.controlPlane, {
      onNone: () => Effect.fail(new UsageError({ message: "--control-plane is required (or MESH_CONTROL_PLANE)" })),
      onSome: Effect.succeed,
    })
    const labels = yield* Either.match(Labels.parseList(f.labels), {
      onLeft: (reason) => Effect.fail(new UsageError({ message: `--labels: ${reason}` })),
      onRight: Effect.succeed,
    })
    const bootstrapToken = Option.isSome(f.bootstrapTokenPath)
      ? Option.some(yield* Flag.readSecretFile(f.bootstrapTokenPath.value))
      : Option.none()
    /** Set while the request waits for approval: a Ctrl-C then leaves it queued, and says how to resume. */
    const waiting = yield* Ref.make(Option.none<PendingEnrollment>())
    const membership = MembershipLive.layer({
      role: f.role,
      labels,
      bootstrapToken,
      idToken: Option.map(f.jwtPath, (path) =>
        Effect.tryPromise(() => readFile(path, "utf8")).pipe(Effect.map((text) => Redacted.make(text.trim()))),
      ),
      dataDir: Option.some(f.dataDir),
      syncInterval: Duration.minutes(5),
      onPending: (pending) =>
        Effect.zipRight(Ref.set(waiting, Option.some(pending)), Console.log(Approval.waiting(url, pending))),
    }).pipe(Layer.provide(ControlPlaneClientLive.layer(url)))
    yield* Effect.gen(function* () {
      const member = yield* Membership
      const expires = new Date(yield* member.credentialExpiresAt).toISOString()
      yield* Console.log(`joined the mesh at ${url}`)
      yield* Console.log(`  peer id      ${member.peerId}`)
      yield* Console.log(`  role         ${f.role}`)
      yield* Console.log(`  credential   valid until ${expires}`)
      yield* Console.log(`  stored in    ${f.dataDir}`)
    }).pipe(
      Effect.provide(membership),
      Effect.onInterrupt(() =>
        Effect.flatMap(Ref.get(waiting), (pending) =>
          Option.match(pending, {
            onNone: () => Effect.void,
            onSome: (p) =>
              Effect.zipRight(
                Console.error(Approval.stopped(p, process.argv.slice(2))),
                // The request is still queued, not joined: a script must not read this as success.
                Effect.sync(() => {
                  process.exitCode = Approval.EXIT_STOPPED_WAITING
                }),
              ),
          }),
        ),
      ),
    )
  }).pipe(Effect.provide(Logging.layerFromConfig(f.logLevel))),
).pipe(Command.withDescription("Enroll this machine in the mesh and store its identity."))
