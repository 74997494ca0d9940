#!/bin/sh
# The container's entry point: one image runs every mesh program, picked by the first argument. Before it hands
# over (exec, so the program gets the signals), it writes where that program answers /healthz to $MESH_HEALTH_FILE,
# which healthcheck.mjs probes: each program serves its health route elsewhere (see docs/deploy.md).
set -eu

bin_dir="${MESH_BIN_DIR:-/app/dist/bin}"
health_file="${MESH_HEALTH_FILE:-/tmp/mesh-health}"

usage() {
  cat <<'USAGE'
usage: control-plane [flags]                   the control plane (mesh-control-plane)
       control-plane admin ban|unban --peer ID  ban or unban a node in the database
       router [flags]                          a router (mesh-router)
       node join|run [flags]                   a node (mesh-node)
       one [flags]                             the development mesh on loopback (mesh-one)
Add --help after a command for its flags.
USAGE
}

# flag_value NAME ARGS...: prints the last value given to --NAME (as `--NAME value` or `--NAME=value`);
# fails when the flag is absent.
flag_value() {
  name="--$1"
  shift
  found=no
  value=
  while [ "$#" -gt 0 ]; do
    case "$1" in
      "$name")
        if [ "$#" -gt 1 ]; then
          value=$2
          found=yes
          shift
        fi
        ;;
      "$name="*)
        value=${1#*=}
        found=yes
        ;;
    esac
    shift
  done
  [ "$found" = yes ] || return 1
  printf '%s\n' "$value"
}

# setting FLAG ENV DEFAULT ARGS...: the flag's value, else the environment variable's (when set, even empty),
# else the default: the precedence every mesh program applies.
setting() {
  flag=$1
  env_name=$2
  default=$3
  shift 3
  if flag_value "$flag" "$@"; then return 0; fi
  printenv "$env_name" || printf '%s\n' "$default"
}

# health_url HOST:PORT: the URL of /healthz on a listen address, from inside the container.
health_url() {
  port=${1##*:}
  host=${1%:*}
  case "$host" in
    "" | 0.0.0.0) host=127.0.0.1 ;;
    "[::]") host="[::1]" ;;
  esac
  printf 'http://%s:%s/healthz\n' "$host" "$port"
}

absolute() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
  esac
}

# A node's health target: its Unix socket (no token, no TLS), else its metrics listener, else its TCP listener
# when that is plain HTTP. None when only a TLS listener is left.
node_health() {
  data_dir=$(setting data-dir MESH_DATA_DIR .mesh-node "$@")
  socket=$(setting socket-path MESH_SOCKET_PATH "$data_dir/mesh.sock" "$@")
  if [ -n "$socket" ]; then
    printf 'unix:%s\n' "$(absolute "$socket")"
    return 0
  fi
  metrics=$(setting metrics-addr MESH_METRICS_ADDR "" "$@")
  if [ -n "$metrics" ]; then
    health_url "$metrics"
    return 0
  fi
  bind=$(setting bind-addr MESH_BIND_ADDR 127.0.0.1:8080 "$@")
  tls=$(setting tls-cert MESH_TLS_CERT "" "$@")
  if [ -n "$bind" ] && [ -z "$tls" ]; then health_url "$bind"; fi
}

if [ "$#" -eq 0 ]; then
  usage >&2
  exit 2
fi
role=$1
shift

health=
case "$role" in
  control-plane)
    program=mesh-control-plane
    if [ "${1:-}" != admin ]; then
      health=$(health_url "$(setting bind-address MESH_BIND_ADDRESS 0.0.0.0:8080 "$@")")
    fi
    ;;
  router)
    program=mesh-router
    # The router serves /healthz only on its metrics listener: open one unless the operator chose an address.
    if ! flag_value metrics-addr "$@" >/dev/null && [ -z "${MESH_METRICS_ADDR:-}" ]; then
      export MESH_METRICS_ADDR=0.0.0.0:9090
    fi
    metrics=$(setting metrics-addr MESH_METRICS_ADDR "" "$@")
    health=$(health_url "$metrics")
    ;;
  node)
    program=mesh-node
    if [ "${1:-}" = run ]; then
      shift
      health=$(node_health "$@")
      set -- run "$@"
    fi
    ;;
  one)
    program=mesh-one
    # mesh-one listens on loopback only; its control plane's port has no environment variable.
    health=$(health_url "127.0.0.1:$(flag_value port "$@" || echo 8080)")
    ;;
  help | -h | --help)
    usage
    exit 0
    ;;
  *)
    printf 'unknown command "%s"\n' "$role" >&2
    usage >&2
    exit 2
    ;;
esac

rm -f "$health_file"
if [ -n "$health" ]; then
  printf '%s\n' "$health" >"$health_file"
fi
exec node "$bin_dir/$program.js" "$@"
