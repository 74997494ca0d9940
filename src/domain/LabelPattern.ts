/**
 * Matching a label against one `allowed_labels` pattern (`*`, `key=*`, `key=value`). Dependency-free, so the
 * operator console checks a pending request's labels with the very rule approval applies.
 */
export const matches = (pattern: string, key: string, value: string): boolean =>
  pattern === "*" || pattern === `${key}=*` || pattern === `${key}=${value}`
