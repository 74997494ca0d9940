/** Overview: the mesh at a glance (operator), or the signed-in user's own nodes and tokens. */
import type { AdminStatus, PageContext, UserStatus } from "../context.js"
import { h } from "../dom.js"
import { plural, roleName, shortId } from "../format.js"
import { badge, button, card, empty, loadInto, mono, pageHeader, stat, stateBadge, table, time } from "../ui.js"

const NODE_STATES = ["admitted", "expired", "banned"] as const

const byRole = (nodes: AdminStatus["nodes"]) => {
  const rows = new Map<string, Record<(typeof NODE_STATES)[number], number>>()
  for (const node of nodes) {
    const row = rows.get(node.role) ?? { admitted: 0, expired: 0, banned: 0 }
    row[node.state]++
    rows.set(node.role, row)
  }
  return [...rows].sort(([a], [b]) => a.localeCompare(b))
}

const count = (n: number, tone: "good" | "warn" | "bad") =>
  n === 0 ? h("span", { class: "muted" }, "0") : badge(String(n), tone)

/** Routers enroll like nodes and are listed with them; the overview counts them apart. */
const ROUTER_ROLE = "mesh:role:router"

const adminView = (status: AdminStatus) => {
  const nodes = status.nodes.filter((n) => n.role !== ROUTER_ROLE)
  const enrolledRouters = status.nodes.length - nodes.length
  const banned = nodes.filter((n) => n.state === "banned").length
  const admitted = nodes.filter((n) => n.state === "admitted").length
  const activeTokens = status.bootstrap_tokens.filter((t) => t.state === "active").length
  const pending = status.counts.pending_enrollments
  const current = status.signing_keys.find((k) => k.retires_at === null)
  return [
    h(
      "div",
      { class: "stats" },
      stat("Nodes", nodes.length, h("span", { class: "stat-detail" }, `${admitted} admitted · ${banned} banned`)),
      stat(
        "Live routers",
        status.counts.routers,
        h(
          "span",
          { class: "stat-detail" },
          `${status.counts.routers === 0 ? "none holds a lease" : "with a live lease"} · ${enrolledRouters} enrolled`,
        ),
      ),
      stat(
        "Pending approvals",
        pending,
        h(
          "span",
          { class: pending > 0 ? "stat-detail stat-attention" : "stat-detail" },
          pending > 0 ? "review now" : "queue is empty",
        ),
        "#/approvals",
      ),
      stat(
        "Active tokens",
        activeTokens,
        h("span", { class: "stat-detail" }, `${status.counts.bootstrap_tokens} in all`),
        "#/tokens",
      ),
      stat(
        "Policy",
        `v${status.policy.version}`,
        h(
          "span",
          { class: "stat-detail" },
          status.policy.updated_at === null
            ? "never set: grants nothing"
            : ["updated ", time(status.policy.updated_at)],
        ),
        "#/policy",
      ),
      stat("Users", status.counts.users, h("span", { class: "stat-detail" }, "signed in with OIDC")),
    ),
    h(
      "div",
      { class: "grid-2" },
      card(
        "Nodes by role and state",
        status.nodes.length === 0
          ? empty("No nodes yet", "Mint a bootstrap token and enroll a node with it.")
          : table(
              "Nodes by role and state",
              [
                { title: "Role", cell: ([role]) => h("span", { title: role }, roleName(role)) },
                ...NODE_STATES.map((state) => ({
                  title: state[0]?.toUpperCase() + state.slice(1),
                  className: "num",
                  cell: ([, row]: readonly [string, Record<(typeof NODE_STATES)[number], number>]) =>
                    count(row[state], state === "admitted" ? "good" : state === "expired" ? "warn" : "bad"),
                })),
                { title: "Total", className: "num", cell: ([, row]) => row.admitted + row.expired + row.banned },
              ],
              byRole(status.nodes),
            ),
      ),
      card(
        "Signing keys",
        table(
          "Signing keys",
          [
            { title: "Key", cell: (k) => mono(`#${k.id}`) },
            {
              title: "State",
              cell: (k) => (k.retires_at === null ? badge("signing", "good") : badge("retiring", "warn")),
            },
            { title: "Created", cell: (k) => time(k.created_at) },
            { title: "Accepted until", cell: (k) => time(k.retires_at, "until rotated out") },
          ],
          status.signing_keys,
        ),
        h(
          "p",
          { class: "hint" },
          current === undefined
            ? "No signing key yet."
            : [
                "The current key signs every new credential; it was made ",
                time(current.created_at),
                ". A rotated-out key stays accepted for the grace period.",
              ],
        ),
      ),
    ),
    card(
      "Live routers",
      status.routers.length === 0
        ? empty(
            "No router holds a lease",
            "Nodes reach each other through routers: start mesh-router with a router token.",
          )
        : table(
            "Live routers",
            [
              { title: "Router", cell: (r) => mono(shortId(r.peer_id), r.peer_id) },
              {
                title: "Addresses",
                cell: (r) =>
                  h(
                    "div",
                    { class: "stack" },
                    r.addresses.map((a) => mono(a)),
                  ),
              },
              { title: "Connected peers", className: "num", cell: (r) => r.connected_peers },
              { title: "DHT size", className: "num", cell: (r) => r.dht_size },
              { title: "Measured", cell: (r) => time(r.renewed_at) },
              { title: "Lease ends", cell: (r) => time(r.expires_at) },
            ],
            status.routers,
          ),
      status.routers.length === 0
        ? null
        : h(
            "p",
            { class: "hint" },
            "Peers and DHT size as each router measured them when it last renewed its lease: at start, within 10 seconds of a change, and every lease renewal interval.",
          ),
    ),
  ]
}

const userView = (status: UserStatus) => {
  const admitted = status.nodes.filter((n) => n.state === "admitted").length
  const activeTokens = status.bootstrap_tokens.filter((t) => t.state === "active").length
  return [
    h(
      "div",
      { class: "stats" },
      stat("Your nodes", status.nodes.length, h("span", { class: "stat-detail" }, `${admitted} admitted`), "#/nodes"),
      stat(
        "Your active tokens",
        activeTokens,
        h("span", { class: "stat-detail" }, `${plural(status.bootstrap_tokens.length, "token")} in all`),
        "#/tokens",
      ),
      stat(
        "Role",
        status.user.admin ? "admin" : "user",
        h(
          "span",
          { class: "stat-detail" },
          status.user.admin ? "bound to mesh:role:admin" : "your own nodes and tokens",
        ),
      ),
    ),
    card(
      "Your nodes",
      status.nodes.length === 0
        ? empty("No nodes yet", "Mint a token on the Tokens page and enroll a machine with it.")
        : table(
            "Your nodes",
            [
              { title: "Node", cell: (n) => mono(shortId(n.peer_id), n.peer_id) },
              { title: "Role", cell: (n) => h("span", { title: n.role }, roleName(n.role)) },
              { title: "State", cell: (n) => stateBadge(n.state) },
              { title: "Credential expires", cell: (n) => time(n.credential_expires_at) },
              { title: "Last refresh", cell: (n) => time(n.refreshed_at ?? n.enrolled_at) },
            ],
            status.nodes,
          ),
    ),
    card(
      "Signed in",
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Identity"),
        h("dd", null, mono(status.user.id)),
        h("dt", null, "Email"),
        h("dd", null, status.user.email ?? "—"),
        h("dt", null, "Issuer"),
        h("dd", null, mono(status.user.issuer)),
      ),
    ),
  ]
}

export const render = (root: HTMLElement, context: PageContext): void => {
  const body = h("div", { class: "page-body" })
  const updated = h("span", null, "")
  const refresh = (quiet: boolean) =>
    context.session.kind === "admin"
      ? loadInto(
          body,
          async () => {
            const status = await context.client.call("adminStatus", "status", {})
            context.setPending(status.counts.pending_enrollments)
            updated.textContent = `Updated ${new Date().toLocaleTimeString()}`
            return status
          },
          adminView,
          { quiet },
        )
      : loadInto(
          body,
          async () => {
            const status = await context.client.call("user", "status", {})
            updated.textContent = `Updated ${new Date().toLocaleTimeString()}`
            return status
          },
          userView,
          { quiet },
        )
  root.append(
    pageHeader(
      context.session.kind === "admin" ? "Overview" : "Your mesh",
      updated,
      button("Refresh", () => refresh(true).then(() => undefined), { busyLabel: "Refreshing…" }),
    ),
    body,
  )
  void refresh(false)
}
