/**
 * The operator console: sign-in, then the shell (navigation by `#/page`) around one page at a time. Whoever is
 * signed in is known only to this module's memory: the admin token or ID token is never written to storage, a
 * cookie or the address bar, and reloading the page signs out.
 */
import "./styles.css"
import { ApiError, type Client, makeClient } from "./api.js"
import type { PageContext, PageDefinition, PageId, Session } from "./context.js"
import { fill, h } from "./dom.js"
import * as Oidc from "./oidc.js"
import * as Approvals from "./pages/approvals.js"
import * as Audit from "./pages/audit.js"
import * as Drift from "./pages/drift.js"
import * as Nodes from "./pages/nodes.js"
import * as Overview from "./pages/overview.js"
import * as Policy from "./pages/policy.js"
import * as Tokens from "./pages/tokens.js"
import * as SignIn from "./signin.js"
import { badge, messageOf } from "./ui.js"

const PAGES: ReadonlyArray<PageDefinition & { readonly users: boolean }> = [
  { id: "overview", title: "Overview", render: Overview.render, users: true },
  { id: "approvals", title: "Approvals", render: Approvals.render, users: false },
  { id: "tokens", title: "Tokens", render: Tokens.render, users: true },
  { id: "nodes", title: "Nodes", render: Nodes.render, users: true },
  { id: "policy", title: "Policy", render: Policy.render, users: false },
  { id: "drift", title: "Tool changes", render: Drift.render, users: false },
  { id: "audit", title: "Audit log", render: Audit.render, users: false },
]

const app = document.getElementById("app") as HTMLElement

let bearer: string | undefined
let session: Session | undefined

const signOut = (message?: string) => {
  bearer = undefined
  session = undefined
  history.replaceState(null, "", "/console")
  SignIn.render(app, client, { withAdminToken }, message)
}

const client: Client = makeClient(
  () => bearer,
  (error: ApiError) =>
    signOut(
      session?.kind === "user"
        ? `Your sign-in has ended (${error.message}). Sign in again.`
        : `The control plane no longer accepts this admin token (${error.message}).`,
    ),
)

const withAdminToken = async (token: string) => {
  const candidate = makeClient(
    () => token,
    () => undefined,
  )
  try {
    await candidate.call("adminStatus", "status", {})
  } catch (error) {
    const refused = error instanceof ApiError && error.status === 401
    // Without a configured token the server says the admin API is off: that, not "wrong token", is the news.
    throw new Error(
      refused && !/disabled/.test(error.message)
        ? "This admin token is not accepted by the control plane."
        : messageOf(error),
    )
  }
  bearer = token
  session = { kind: "admin" }
  showShell()
}

const pageId = (): PageId => {
  const wanted = location.hash.replace(/^#\//, "")
  const page = PAGES.find((p) => p.id === wanted && (session?.kind === "admin" || p.users))
  return page?.id ?? "overview"
}

let pendingBadge: HTMLElement | undefined

const showShell = () => {
  if (session === undefined) return
  const current = session
  const main = h("main", { id: "main", class: "main", tabindex: "-1" })
  pendingBadge = h("span", { class: "nav-count", hidden: true })
  const links = PAGES.filter((p) => current.kind === "admin" || p.users).map((p) =>
    h("a", { href: `#/${p.id}`, "data-page": p.id }, p.title, p.id === "approvals" ? pendingBadge : null),
  )
  const skip = h("a", { class: "skip-link", href: "#/" }, "Skip to content")
  skip.addEventListener("click", (event) => {
    event.preventDefault()
    main.focus()
  })
  const who =
    current.kind === "admin"
      ? [badge("operator", "info"), h("span", { class: "who-name who-operator" }, "Admin token")]
      : [
          badge(current.user.admin ? "admin" : "user", "info"),
          h("span", { class: "who-name" }, current.user.email ?? current.user.subject),
        ]
  const signOutButton = h("button", { type: "button", class: "button button-ghost button-small" }, "Sign out")
  signOutButton.addEventListener("click", () => signOut("Signed out."))

  fill(
    app,
    skip,
    h(
      "header",
      { class: "topbar" },
      h(
        "div",
        { class: "brand" },
        h("span", { class: "brand-mark", "aria-hidden": "true" }),
        "mesh",
        h("span", { class: "brand-sub" }, "console"),
      ),
      h("nav", { class: "nav", "aria-label": "Console pages" }, links),
      h("div", { class: "who" }, who, signOutButton),
    ),
    main,
  )

  const context: PageContext = {
    client,
    session: current,
    setPending: (count) => {
      if (pendingBadge === undefined) return
      pendingBadge.hidden = count === 0
      pendingBadge.textContent = String(count)
      pendingBadge.setAttribute("aria-label", `${count} pending`)
    },
    endSession: signOut,
  }

  const show = (focus: boolean) => {
    if (session !== current) return
    const id = pageId()
    const page = PAGES.find((p) => p.id === id) as PageDefinition
    for (const link of links) {
      if (link.dataset.page === id) link.setAttribute("aria-current", "page")
      else link.removeAttribute("aria-current")
    }
    document.title = `${page.title} · mesh console`
    // What the last page announced is not news on this one.
    document.getElementById("toasts")?.replaceChildren()
    const root = h("div", { class: "page", "data-page": id })
    fill(main, root)
    page.render(root, context)
    if (focus) root.querySelector("h1")?.focus()
  }
  window.onhashchange = () => show(true)
  show(false)
}

const start = async () => {
  let signedIn: Oidc.SignedIn | undefined
  try {
    signedIn = await Oidc.complete(client)
  } catch (error) {
    signOut(messageOf(error))
    return
  }
  if (signedIn === undefined) {
    signOut()
    return
  }
  bearer = signedIn.idToken
  try {
    const status = await client.call("user", "status", {})
    session = { kind: "user", user: status.user, expiresAt: signedIn.expiresAt }
    showShell()
  } catch (error) {
    signOut(`Signed in with the issuer, but the control plane refused: ${messageOf(error)}`)
  }
}

void start()
