/**
 * Other spellings of a request path: the ones a lenient router (case folding, slash forgiveness, percent-decoding,
 * dot segments, `;` parameters, absolute-form targets) would take for the canonical one. Each has a name for
 * failure messages. Send them with `rawHttp`: `fetch` would normalise some of them away.
 */
export interface Spelling {
  readonly name: string
  readonly target: string
}

const encode = (char: string, upper: boolean): string => {
  const hex = char.charCodeAt(0).toString(16)
  return `%${upper ? hex.toUpperCase() : hex}`
}

/** `target` is a canonical path with an optional query (`/enroll/status?peer_id=x`). */
export const spellingsOf = (target: string): ReadonlyArray<Spelling> => {
  const q = target.indexOf("?")
  const path = q === -1 ? target : target.slice(0, q)
  const query = q === -1 ? "" : target.slice(q)
  const [first = "", ...rest] = path.slice(1).split("/")
  const tail = rest.length > 0 ? `/${rest.join("/")}` : ""
  const letter = /[a-z]/.exec(first)
  const spellings: Array<Spelling> = [
    { name: "upper case", target: path.toUpperCase() },
    { name: "capitalised segment", target: `/${first.charAt(0).toUpperCase()}${first.slice(1)}${tail}` },
    { name: "trailing slash", target: `${path}/` },
    { name: "leading doubled slash", target: `/${path}` },
    { name: "dot segment", target: `/.${path}` },
    { name: "parent segment", target: `/x/..${path}` },
    { name: "percent-encoded parent segment", target: `/x/%2e%2e${path}` },
    { name: "semicolon parameter", target: `${path};x=1` },
    { name: "absolute form", target: `http://localhost${path}` },
  ]
  if (letter !== null) {
    const at = letter.index
    for (const upper of [false, true]) {
      spellings.push({
        name: `percent-encoded letter (${upper ? "upper" : "lower"}-case hex)`,
        target: `/${first.slice(0, at)}${encode(first.charAt(at), upper)}${first.slice(at + 1)}${tail}`,
      })
    }
  }
  if (rest.length > 0) {
    spellings.push({ name: "inner doubled slash", target: `/${first}/${tail}` })
    spellings.push({ name: "percent-encoded slash", target: `/${first}%2F${rest.join("/")}` })
  }
  if (path.includes("-")) spellings.push({ name: "percent-encoded hyphen", target: path.replace("-", "%2D") })
  return spellings.map((s) => ({ name: s.name, target: `${s.target}${query}` }))
}
