/**
 * Approvals: bootstrap enrollments waiting for an operator. Each request's labels are checked against its role's
 * `allowed_labels` as approval will check them; approving or rejecting resolves a request once, and a request someone
 * else resolved first says so.
 */
import { ApiError, type Success } from "../api.js"
import type { PageContext } from "../context.js"
import { fill, h } from "../dom.js"
import { roleName, shortId } from "../format.js"
import { allowedLabelsOf, checkLabels } from "../policy.js"
import {
  announce,
  button,
  card,
  chip,
  confirm,
  empty,
  loadInto,
  messageOf,
  mono,
  notice,
  pageHeader,
  stateBadge,
  table,
  time,
} from "../ui.js"

type Request = Success<"admin", "listEnrollments">[number]

interface Data {
  readonly requests: ReadonlyArray<Request>
  readonly policy: unknown
}

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client } = context
  const messages = h("div", { class: "messages", "aria-live": "polite" })
  const body = h("div", { class: "page-body" })

  const load = async (): Promise<Data> => {
    const [requests, status] = await Promise.all([
      client.call("admin", "listEnrollments", { urlParams: { status: "all" } }),
      client.call("adminStatus", "status", {}),
    ])
    context.setPending(status.counts.pending_enrollments)
    return { requests, policy: status.policy.document }
  }
  const refresh = () => loadInto(body, load, view, { quiet: true })

  const describeResolved = (request: Request | undefined) =>
    request === undefined || request.status === "pending"
      ? "This request was already resolved."
      : `This request was already ${request.status}${request.resolved_by === null ? "" : ` by ${request.resolved_by}`}.`

  const resolve = async (request: Request, action: "approve" | "reject") => {
    fill(messages)
    if (action === "reject") {
      const sure = await confirm({
        title: "Reject this enrollment?",
        body: [
          "The node ",
          mono(shortId(request.peer_id), request.peer_id),
          " will not be admitted. It can ask again with a valid token.",
        ],
        confirmLabel: "Reject",
        danger: true,
      })
      if (!sure) return
    }
    try {
      await client.call("admin", action, { path: { id: request.id } })
      announce(
        action === "approve"
          ? `Approved ${shortId(request.peer_id)}: it receives its credential at its next poll.`
          : `Rejected ${shortId(request.peer_id)}.`,
      )
    } catch (error) {
      if (error instanceof ApiError && error.code === "conflict") {
        const all = await client.call("admin", "listEnrollments", { urlParams: { status: "all" } }).catch(() => [])
        fill(messages, notice("warn", describeResolved(all.find((r) => r.id === request.id))))
      } else {
        fill(messages, notice("error", `Could not ${action} ${shortId(request.peer_id)}: ${messageOf(error)}`))
      }
    }
    await refresh()
  }

  const labelsCell = (request: Request, policy: unknown) => {
    const checks = checkLabels(policy, request.requested_role, request.labels)
    if (checks.length === 0) return h("span", { class: "muted" }, "none")
    return h(
      "div",
      { class: "chips" },
      checks.map((c) =>
        c.allowedBy === undefined
          ? chip(`✗ ${c.label}`, {
              class: "chip chip-bad",
              title: `Not in the allowed_labels of ${request.requested_role}`,
            })
          : chip(`✓ ${c.label}`, { class: "chip chip-good", title: `Allowed by ${c.allowedBy}` }),
      ),
    )
  }

  const view = ({ requests, policy }: Data) => {
    const pending = requests.filter((r) => r.status === "pending")
    const resolved = requests
      .filter((r) => r.status !== "pending")
      .sort((a, b) => (b.resolved_at ?? "").localeCompare(a.resolved_at ?? ""))
      .slice(0, 10)
    return [
      card(
        `Waiting (${pending.length})`,
        pending.length === 0
          ? empty("Nothing to approve", "Enrollments made with a token appear here when auto-approval is off.")
          : table(
              "Pending enrollment requests",
              [
                { title: "Node", cell: (r) => mono(shortId(r.peer_id), r.peer_id) },
                { title: "Role", cell: (r) => h("span", { title: r.requested_role }, roleName(r.requested_role)) },
                {
                  title: "Labels",
                  cell: (r) => {
                    const refused = checkLabels(policy, r.requested_role, r.labels).filter(
                      (c) => c.allowedBy === undefined,
                    )
                    const allowed = allowedLabelsOf(policy, r.requested_role)
                    return h(
                      "div",
                      { class: "stack" },
                      labelsCell(r, policy),
                      refused.length === 0
                        ? null
                        : h(
                            "p",
                            { class: "hint hint-bad" },
                            `Approval will be refused: ${roleName(r.requested_role)} allows ${allowed.length === 0 ? "no labels" : allowed.join(", ")}.`,
                          ),
                    )
                  },
                },
                { title: "Token", cell: (r) => mono(r.token_id) },
                { title: "Asked", cell: (r) => time(r.created_at) },
                {
                  title: "Decision",
                  className: "actions",
                  cell: (r) =>
                    h(
                      "div",
                      { class: "button-row" },
                      button("Approve", () => resolve(r, "approve"), {
                        variant: "primary",
                        busyLabel: "Approving…",
                        attributes: { "aria-label": `Approve ${r.peer_id}` },
                      }),
                      button("Reject", () => resolve(r, "reject"), {
                        variant: "danger",
                        busyLabel: "Rejecting…",
                        attributes: { "aria-label": `Reject ${r.peer_id}` },
                      }),
                    ),
                },
              ],
              pending,
              { rowAttributes: (r) => ({ "data-request": r.id }) },
            ),
      ),
      card(
        "Recently resolved",
        resolved.length === 0
          ? empty("None yet", "Approved and rejected requests are listed here.")
          : table(
              "Recently resolved enrollment requests",
              [
                { title: "Node", cell: (r) => mono(shortId(r.peer_id), r.peer_id) },
                { title: "Role", cell: (r) => roleName(r.requested_role) },
                { title: "Decision", cell: (r) => stateBadge(r.status) },
                { title: "By", cell: (r) => r.resolved_by ?? "—" },
                { title: "When", cell: (r) => time(r.resolved_at) },
              ],
              resolved,
            ),
      ),
    ]
  }

  root.append(
    pageHeader(
      "Approvals",
      "Enrollments waiting for an operator's decision",
      button("Refresh", () => refresh().then(() => undefined), { busyLabel: "Refreshing…" }),
    ),
    messages,
    body,
  )
  void loadInto(body, load, view)
}
