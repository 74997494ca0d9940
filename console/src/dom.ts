/**
 * Building DOM without HTML strings: the page runs under Trusted Types with no policy, so markup is never parsed from
 * text. `h("button", { class: "primary", onclick: save }, "Save")` makes an element; children may be nodes, text or
 * nested arrays, and `false`, `null` and `undefined` are skipped.
 */

export type Child = Node | string | number | null | undefined | false | ReadonlyArray<Child>

type Handler = (event: Event) => void

export type Attributes = Readonly<Record<string, string | number | boolean | null | undefined | Handler>>

const append = (parent: Node, child: Child): void => {
  if (child === null || child === undefined || child === false) return
  if (Array.isArray(child)) {
    for (const c of child as ReadonlyArray<Child>) append(parent, c)
  } else if (child instanceof Node) {
    parent.appendChild(child)
  } else {
    parent.appendChild(document.createTextNode(String(child)))
  }
}

export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes | null = null,
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === null || value === undefined || value === false) continue
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value)
    } else if (name === "value" && "value" in element) {
      ;(element as HTMLInputElement).value = String(value)
    } else if (name === "checked" && element instanceof HTMLInputElement) {
      element.checked = value === true
    } else {
      element.setAttribute(name, value === true ? "" : String(value))
    }
  }
  append(element, children)
  return element
}

/** Replaces what `parent` holds. */
export const fill = (parent: Element, ...children: ReadonlyArray<Child>): void => {
  parent.replaceChildren()
  append(parent, children)
}

/** A unique id for label/field pairs. */
let next = 0
export const uid = (prefix: string): string => `${prefix}-${++next}`
