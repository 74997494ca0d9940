/**
 * Nodes: every enrolled node (an operator) or the user's own, searchable and filtered by role, label and state; ban,
 * unban and the autonomous-recovery flag; the services each node last reported (display only).
 */
import type { Success } from "../api.js"
import type { AdminStatus, PageContext } from "../context.js"
import { fill, h } from "../dom.js"
import { labelPairs, roleName, shortId } from "../format.js"
import {
  announce,
  button,
  card,
  chip,
  confirm,
  empty,
  field,
  loadInto,
  messageOf,
  mono,
  pageHeader,
  stateBadge,
  table,
  time,
} from "../ui.js"

type Node = Success<"user", "status">["nodes"][number]
type Report = AdminStatus["catalog"][number]

interface Data {
  readonly nodes: ReadonlyArray<Node>
  readonly catalog: ReadonlyMap<string, Report>
}

const identityOf = (node: Node): string =>
  node.identity === null ? "enrolled with a token" : (node.identity.email ?? node.identity.subject)

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client, session } = context
  const operator = session.kind === "admin"
  const body = h("div", { class: "page-body" })
  let data: Data | undefined

  const search = h("input", {
    type: "search",
    placeholder: "Peer id, identity or label",
    autocomplete: "off",
    spellcheck: "false",
  })
  const roleSelect = h("select", null, h("option", { value: "" }, "Any role"))
  const stateSelect = h(
    "select",
    null,
    h("option", { value: "" }, "Any state"),
    ["admitted", "expired", "banned"].map((s) => h("option", { value: s }, s)),
  )
  const labelInput = h("input", { placeholder: "key or key=value", autocomplete: "off", spellcheck: "false" })
  const summary = h("p", { class: "muted", "aria-live": "polite" })

  const load = async (): Promise<Data> => {
    if (operator) {
      const status = await client.call("adminStatus", "status", {})
      context.setPending(status.counts.pending_enrollments)
      return { nodes: status.nodes, catalog: new Map(status.catalog.map((r) => [r.peer_id, r])) }
    }
    const status = await client.call("user", "status", {})
    return { nodes: status.nodes, catalog: new Map() }
  }

  const matches = (node: Node): boolean => {
    const text = search.value.trim().toLowerCase()
    const label = labelInput.value.trim()
    const labels = labelPairs(node.labels)
    if (roleSelect.value !== "" && node.role !== roleSelect.value) return false
    if (stateSelect.value !== "" && node.state !== stateSelect.value) return false
    if (label !== "" && !labels.some((l) => (label.includes("=") ? l === label : l.startsWith(`${label}=`)))) {
      return false
    }
    if (text === "") return true
    return [node.peer_id, identityOf(node), node.owner ?? "", ...labels].some((v) => v.toLowerCase().includes(text))
  }

  const ban = async (node: Node) => {
    // Banning an OIDC-enrolled node bans the identity behind it: for a user, that is themselves.
    const self = !operator && node.identity !== null
    const sure = await confirm({
      title: "Ban this node?",
      body: [
        h(
          "p",
          null,
          "Node ",
          mono(shortId(node.peer_id), node.peer_id),
          " loses its credential at its next refresh and every router drops it now.",
        ),
        node.identity === null
          ? null
          : h(
              "p",
              null,
              self
                ? "It was enrolled with your own sign-in, so your identity is banned with it: you will be signed out, and only an operator can lift the ban."
                : `The identity ${identityOf(node)} is banned with it.`,
            ),
      ],
      confirmLabel: "Ban node",
      danger: true,
    })
    if (!sure) return
    try {
      if (operator) await client.call("adminNodes", "revoke", { payload: { peer_id: node.peer_id } })
      else await client.call("user", "revoke", { payload: { peer_id: node.peer_id } })
    } catch (error) {
      announce(`Could not ban ${shortId(node.peer_id)}: ${messageOf(error)}`, "error")
      await refresh()
      return
    }
    if (self) {
      context.endSession(
        `You banned ${shortId(node.peer_id)} and, with it, your identity. An operator can lift the ban.`,
      )
      return
    }
    announce(`Banned ${shortId(node.peer_id)}.`)
    await refresh()
  }

  const unban = async (node: Node) => {
    try {
      await client.call("adminNodes", "unban", { path: { peer_id: node.peer_id } })
      announce(`Unbanned ${shortId(node.peer_id)}.`)
    } catch (error) {
      announce(`Could not unban ${shortId(node.peer_id)}: ${messageOf(error)}`, "error")
    }
    await refresh()
  }

  const recoverySwitch = (node: Node) => {
    const input = h("input", {
      type: "checkbox",
      role: "switch",
      class: "toggle",
      checked: node.autonomous_recovery,
      "aria-label": `Autonomous recovery for ${node.peer_id}`,
    })
    const text = h("span", { class: "switch-text", "aria-hidden": "true" }, node.autonomous_recovery ? "On" : "Off")
    input.addEventListener("change", () => {
      const enabled = input.checked
      input.disabled = true
      text.textContent = enabled ? "On" : "Off"
      client
        .call("adminNodes", "autonomousRecovery", { path: { peer_id: node.peer_id }, payload: { enabled } })
        .then(() => announce(`Autonomous recovery ${enabled ? "on" : "off"} for ${shortId(node.peer_id)}.`))
        .catch((error: unknown) => {
          input.checked = !enabled
          text.textContent = enabled ? "Off" : "On"
          announce(`Could not change autonomous recovery: ${messageOf(error)}`, "error")
        })
        .finally(() => {
          input.disabled = false
        })
    })
    return h("label", { class: "switch" }, input, text)
  }

  const services = (node: Node, catalog: ReadonlyMap<string, Report>) => {
    const report = catalog.get(node.peer_id)
    if (report === undefined || report.services.length === 0)
      return h("span", { class: "muted" }, operator ? "none reported" : "—")
    return h(
      "div",
      { class: "chips" },
      report.services.map((s) =>
        chip(`${s.type}://${s.name}`, {
          title: s.description === "" ? `reported ${report.reported_at}` : s.description,
        }),
      ),
    )
  }

  const listView = (): HTMLElement | null => {
    if (data === undefined) return null
    const { nodes, catalog } = data
    const shown = nodes.filter(matches)
    summary.textContent =
      shown.length === nodes.length ? `${nodes.length} nodes` : `${shown.length} of ${nodes.length} nodes match`
    return nodes.length === 0
      ? empty(
          "No nodes yet",
          operator ? "Nodes appear here once they enroll." : "Enroll a machine with one of your tokens.",
        )
      : shown.length === 0
        ? empty("No node matches", "Change or clear the filters.")
        : table(
            "Nodes",
            [
              {
                title: "Node",
                cell: (n) =>
                  h(
                    "div",
                    { class: "stack" },
                    mono(shortId(n.peer_id), n.peer_id),
                    h("span", { class: "muted" }, identityOf(n)),
                  ),
              },
              { title: "Role", cell: (n) => h("span", { title: n.role }, roleName(n.role)) },
              {
                title: "Labels",
                cell: (n) => {
                  const pairs = labelPairs(n.labels)
                  return pairs.length === 0
                    ? h("span", { class: "muted" }, "none")
                    : h(
                        "div",
                        { class: "chips" },
                        pairs.map((p) => chip(p)),
                      )
                },
              },
              {
                title: "State",
                cell: (n) =>
                  h(
                    "div",
                    { class: "stack" },
                    stateBadge(n.state),
                    n.banned_at === null ? null : h("span", { class: "muted" }, time(n.banned_at)),
                  ),
              },
              // Users have no view of the catalog: the column would be empty.
              ...(operator ? [{ title: "Services", cell: (n: Node) => services(n, catalog) }] : []),
              {
                title: "Autonomous recovery",
                cell: (n) => (operator ? recoverySwitch(n) : n.autonomous_recovery ? "on" : "off"),
              },
              { title: "Last refresh", cell: (n) => time(n.refreshed_at ?? n.enrolled_at) },
              {
                title: "Actions",
                className: "actions",
                cell: (n) =>
                  n.state === "banned"
                    ? operator
                      ? button("Unban", () => unban(n), {
                          busyLabel: "Unbanning…",
                          attributes: { "aria-label": `Unban ${n.peer_id}` },
                        })
                      : h("span", { class: "muted" }, "banned")
                    : button("Ban", () => ban(n), {
                        variant: "danger",
                        busyLabel: "Banning…",
                        attributes: { "aria-label": `Ban ${n.peer_id}` },
                      }),
              },
            ],
            shown,
            { rowAttributes: (n) => ({ "data-peer": n.peer_id }) },
          )
  }
  const list = () => fill(body, listView())

  const view = (loaded: Data) => {
    data = loaded
    const roles = [...new Set(loaded.nodes.map((n) => n.role))].sort()
    const selected = roleSelect.value
    fill(
      roleSelect,
      h("option", { value: "" }, "Any role"),
      roles.map((r) => h("option", { value: r }, roleName(r))),
    )
    roleSelect.value = roles.includes(selected) ? selected : ""
    return listView()
  }
  const refresh = () => loadInto(body, load, view, { quiet: data !== undefined }).then(() => undefined)

  for (const control of [search, labelInput]) control.addEventListener("input", list)
  for (const control of [roleSelect, stateSelect]) control.addEventListener("change", list)

  root.append(
    pageHeader(
      operator ? "Nodes" : "Your nodes",
      summary,
      button("Refresh", () => refresh(), { busyLabel: "Refreshing…" }),
    ),
    card(
      null,
      h(
        "div",
        { class: "filters", role: "search" },
        field("Search", search),
        field("Role", roleSelect),
        field("State", stateSelect),
        field("Label", labelInput),
      ),
      body,
    ),
  )
  void refresh()
}
