/**
 * What `mesh-node join` says while its enrollment waits for an operator: the peer id to approve, where to approve it
 * (the console, or the admin API), how often it asks; and on Ctrl-C, that the request stays queued and how to resume.
 */
import { Duration } from "effect"
import type { PendingEnrollment } from "../../services/member/Membership.js"

/** Ctrl-C while waiting: 128 + SIGINT, as a shell reports an interrupted command; the node has not joined. */
export const EXIT_STOPPED_WAITING = 130

export const waiting = (controlPlane: string, pending: PendingEnrollment): string =>
  [
    "waiting for an operator to approve this node",
    `  peer id      ${pending.peerId}`,
    `  request      ${pending.requestId}`,
    `  approve in   the console, ${controlPlane}/console/#/approvals, or with the admin API:`,
    `               curl -X POST -H "Authorization: Bearer <admin token>" ${controlPlane}/admin/enrollments/${pending.requestId}/approve`,
    `  polling      every ${Duration.format(pending.pollInterval)}; Ctrl-C stops waiting, the request stays queued`,
  ].join("\n")

const shell = (word: string) => (/^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)

export const stopped = (pending: PendingEnrollment, args: ReadonlyArray<string>): string =>
  [
    `stopped waiting: the request of ${pending.peerId} stays queued for approval.`,
    "To resume, run the same command again (the same data folder keeps the same peer id):",
    `  mesh-node ${args.map(shell).join(" ")}`,
  ].join("\n")
