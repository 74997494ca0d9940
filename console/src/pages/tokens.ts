/**
 * Bootstrap tokens: mint one (the secret is shown once, with a copy button), see the state of each, revoke. A user
 * sees and mints only their own (node tokens within the user limits, unless the policy makes them an admin).
 */
import type { Success } from "../api.js"
import type { PageContext } from "../context.js"
import { fill, h } from "../dom.js"
import { roleName } from "../format.js"
import { rolesOf } from "../policy.js"
import {
  announce,
  button,
  card,
  confirm,
  copyButton,
  empty,
  field,
  loadInto,
  messageOf,
  mono,
  notice,
  pageHeader,
  stateBadge,
  table,
  time,
} from "../ui.js"

type Token = Success<"admin", "listTokens">[number]
type Minted = Success<"admin", "mintToken">

const NODE_ROLE = "mesh:role:node"
const ROUTER_ROLE = "mesh:role:router"
/** The user API's limits for users the policy does not make admins. */
const USER_MAX_TTL_HOURS = 168
const USER_MAX_USAGES = 10

interface Data {
  readonly tokens: ReadonlyArray<Token>
  readonly roles: ReadonlyArray<string>
}

export const render = (root: HTMLElement, context: PageContext): void => {
  const { client, session } = context
  const operator = session.kind === "admin"
  const privileged = operator || session.user.admin
  const body = h("div", { class: "page-body" })
  const minted = h("div", { class: "minted", "aria-live": "polite" })
  const formMessages = h("div", { "aria-live": "polite" })

  const load = async (): Promise<Data> => {
    if (operator) {
      const [tokens, status] = await Promise.all([
        client.call("admin", "listTokens", {}),
        client.call("adminStatus", "status", {}),
      ])
      context.setPending(status.counts.pending_enrollments)
      return { tokens, roles: rolesOf(status.policy.document).map((r) => r.name) }
    }
    const status = await client.call("user", "status", {})
    return { tokens: [...status.bootstrap_tokens].reverse(), roles: [] }
  }
  const refresh = () => loadInto(body, load, view, { quiet: true })

  // The form.
  const roleInput = h("input", {
    value: NODE_ROLE,
    list: "role-options",
    required: true,
    autocomplete: "off",
    spellcheck: "false",
  })
  if (!privileged) roleInput.disabled = true
  const roleOptions = h("datalist", { id: "role-options" })
  const ttlInput = h("input", {
    type: "number",
    value: "24",
    min: "1",
    max: privileged ? "87600" : String(USER_MAX_TTL_HOURS),
    step: "any",
    required: true,
  })
  const usagesInput = h("input", {
    type: "number",
    value: "1",
    min: "1",
    max: privileged ? "100000" : String(USER_MAX_USAGES),
    step: "1",
    required: true,
  })
  const descriptionInput = h("input", {
    maxlength: "1024",
    placeholder: "e.g. build agents in eu-west",
    autocomplete: "off",
  })
  const recoveryInput = h("input", { type: "checkbox", role: "switch" })
  const submit = button("Mint token", null, { type: "submit", variant: "primary" })

  const showMinted = (token: Minted) => {
    const secret = mono(token.token)
    secret.classList.add("secret")
    secret.setAttribute("data-secret", "")
    fill(
      minted,
      h(
        "section",
        { class: "card card-highlight", "aria-labelledby": "minted-title" },
        h("h2", { id: "minted-title" }, "New token: copy it now"),
        h("p", null, "This is the only time the token is shown. It is stored as a hash and cannot be displayed again."),
        h("div", { class: "secret-row" }, secret, copyButton(token.token, secret)),
        h(
          "dl",
          { class: "facts" },
          h("dt", null, "Id"),
          h("dd", null, mono(token.id)),
          h("dt", null, "Role"),
          h("dd", null, token.role),
          h("dt", null, "Uses"),
          h("dd", null, String(token.max_usages)),
          h("dt", null, "Expires"),
          h("dd", null, time(token.expires_at)),
        ),
        button("Done: hide it", () => fill(minted), { variant: "ghost" }),
      ),
    )
    secret.scrollIntoView({ block: "nearest" })
  }

  const wide = (element: HTMLElement) => {
    element.classList.add("span-2")
    return element
  }
  const form = h(
    "form",
    { class: "form-grid", novalidate: true, "aria-label": "Mint a bootstrap token" },
    wide(
      field(
        "Role",
        roleInput,
        privileged ? "The role a node enrolling with it asks for." : "Your tokens enroll nodes.",
      ),
    ),
    roleOptions,
    field("Lifetime (hours)", ttlInput, privileged ? "24 by default." : `At most ${USER_MAX_TTL_HOURS}.`),
    field("Uses", usagesInput, privileged ? "Enrollments it admits." : `At most ${USER_MAX_USAGES}.`),
    wide(field("Description", descriptionInput, "Shown in this list; never part of the token.")),
    privileged
      ? wide(field("Autonomous recovery", recoveryInput, "Its nodes may refresh after a key rotation they missed."))
      : null,
    h("div", { class: "form-actions span-all" }, submit),
  )
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    fill(formMessages)
    const ttl = Number(ttlInput.value)
    const usages = Number(usagesInput.value)
    const problems = [
      roleInput.value.trim() === "" ? "Role is required." : null,
      !(ttl > 0) ? "Lifetime must be more than 0 hours." : null,
      !Number.isInteger(usages) || usages < 1 ? "Uses must be a whole number, 1 or more." : null,
    ].filter((p): p is string => p !== null)
    if (problems.length > 0) {
      fill(formMessages, notice("error", problems.join(" ")))
      return
    }
    const payload = {
      role: roleInput.value.trim(),
      ttl_hours: ttl,
      max_usages: usages,
      description: descriptionInput.value.trim(),
      autonomous_recovery: recoveryInput.checked,
    }
    void (async () => {
      submit.disabled = true
      submit.textContent = "Minting…"
      try {
        const token = operator
          ? await client.call("admin", "mintToken", { payload })
          : await client.call("user", "mintToken", { payload })
        showMinted(token)
        descriptionInput.value = ""
        await refresh()
      } catch (error) {
        fill(formMessages, notice("error", `The token was not minted: ${messageOf(error)}`))
      } finally {
        submit.disabled = false
        submit.textContent = "Mint token"
      }
    })()
  })

  const revoke = async (token: Token) => {
    const sure = await confirm({
      title: "Revoke this token?",
      body: [
        "Token ",
        mono(token.id),
        token.description === "" ? "" : ` (${token.description})`,
        " will admit no more enrollments. Nodes already enrolled with it stay.",
      ],
      confirmLabel: "Revoke token",
      danger: true,
    })
    if (!sure) return
    try {
      await client.call("admin", "revokeToken", { path: { id: token.id } })
      announce(`Revoked ${token.id}.`)
    } catch (error) {
      announce(`Could not revoke ${token.id}: ${messageOf(error)}`, "error")
    }
    await refresh()
  }

  const view = ({ tokens, roles }: Data) => {
    fill(
      roleOptions,
      [...new Set([NODE_ROLE, ROUTER_ROLE, ...roles])].map((r) => h("option", { value: r })),
    )
    if (tokens.length === 0) return empty("No tokens yet", "Mint one above to enroll a node.")
    return table(
      "Bootstrap tokens",
      [
        {
          title: "Token",
          cell: (t) =>
            h(
              "div",
              { class: "stack" },
              mono(t.id),
              t.description === "" ? null : h("span", { class: "muted" }, t.description),
            ),
        },
        { title: "Role", cell: (t) => h("span", { title: t.role }, roleName(t.role)) },
        { title: "State", cell: (t) => stateBadge(t.state) },
        { title: "Uses", className: "num", cell: (t) => `${t.usages_count} / ${t.max_usages}` },
        { title: "Expires", cell: (t) => time(t.expires_at) },
        { title: "Last used", cell: (t) => time(t.last_used_at, "never") },
        { title: "Recovery", cell: (t) => (t.autonomous_recovery ? "autonomous" : "—") },
        ...(operator ? [{ title: "Owner", cell: (t: Token) => t.owner ?? "operator" }] : []),
        ...(operator
          ? [
              {
                title: "Actions",
                className: "actions",
                cell: (t: Token) =>
                  t.revoked
                    ? h("span", { class: "muted" }, ["revoked ", time(t.revoked_at)])
                    : button("Revoke", () => revoke(t), {
                        variant: "danger",
                        busyLabel: "Revoking…",
                        attributes: { "aria-label": `Revoke ${t.id}` },
                      }),
              },
            ]
          : []),
      ],
      tokens,
      { rowAttributes: (t) => ({ "data-token": t.id }) },
    )
  }

  root.append(
    pageHeader(
      operator ? "Bootstrap tokens" : "Your tokens",
      "A token lets a machine enroll as a node of its role",
      button("Refresh", () => refresh().then(() => undefined), { busyLabel: "Refreshing…" }),
    ),
    card("Mint a token", form, formMessages),
    minted,
    card("Tokens", body),
  )
  void loadInto(body, load, view)
}
