/**
 * Which names the node's local API answers to, against DNS rebinding: a web page whose own name the attacker points
 * at 127.0.0.1 reaches the local API with its `Host` and `Origin`, never ours. A request is taken when its `Host`
 * names a loopback address (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`), the host of `--bind-addr`, or a name
 * of `--allowed-hosts` (`*` takes any), and when its `Origin`, if it sends one, names one of those too. The port is
 * not compared: a rebinding page's name is what gives it away, whatever port it asked for.
 */

export interface HostRules {
  /** Lower-case names without port or brackets, besides the loopback names. */
  readonly names: ReadonlySet<string>
  /** `--allowed-hosts *`: the operator turned the check off. */
  readonly any: boolean
}

/** A name as compared: lower case, without the brackets of an IPv6 literal or a final dot. */
const normalize = (name: string): string =>
  name
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")

export const rules = (bindHost: string | undefined, allowed: ReadonlyArray<string>): HostRules => {
  const names = new Set(allowed.filter((name) => name !== "*").map(normalize))
  if (bindHost !== undefined && bindHost.length > 0) names.add(normalize(bindHost))
  return { names, any: allowed.includes("*") }
}

const IPV4_LOOPBACK = /^127(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

const isLoopback = (name: string): boolean =>
  name === "localhost" || name.endsWith(".localhost") || IPV4_LOOPBACK.test(name) || name === "::1"

/** The name of a `Host` value (`name`, `name:port`, `[v6]:port`), or none when it is not one. */
export const hostName = (host: string): string | undefined => {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@]+)(?::\d{1,5})?$/.exec(host.trim())
  return match === null ? undefined : normalize(match[1] as string)
}

/** Whether `--allowed-hosts` may hold `text`: `*`, or a name or address without port or scheme. */
export const isHostName = (text: string): boolean => text === "*" || /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@*]+)$/.test(text)

const nameAllowed = (rules: HostRules, name: string | undefined): boolean =>
  name !== undefined && (rules.any || isLoopback(name) || rules.names.has(name))

/** A request without `Host` (HTTP/1.0 tools) is not a browser's: only a `Host` that names someone else is refused. */
export const hostAllowed = (rules: HostRules, host: string | undefined): boolean =>
  host === undefined || nameAllowed(rules, hostName(host))

/**
 * A request without `Origin` is not a cross-site page's (browsers send it on every cross-origin and every
 * non-GET request); `null` (sandboxed frames, `file:` pages) and anything that is not an http(s) origin of an
 * allowed name is refused.
 */
export const originAllowed = (rules: HostRules, origin: string | undefined): boolean => {
  if (origin === undefined) return true
  if (rules.any) return true
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return false
  }
  return (url.protocol === "http:" || url.protocol === "https:") && nameAllowed(rules, normalize(url.hostname))
}
