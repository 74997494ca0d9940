/**
 * A service's name as `mesh-node.yaml` gives it: 1-64 letters, digits, `.`, `_` or `-`, starting with a letter or
 * digit. Its own module, free of imports, so that the rules naming services (tool names, pins, the configuration)
 * can all read it without importing each other.
 */
export const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export const isServiceName = (name: string): boolean => SERVICE_NAME.test(name)
