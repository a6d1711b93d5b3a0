#!/usr/bin/env bash
# N llaisys-server replicas behind HAProxy (deploy/haproxy/llaisys.cfg) on loopback: waits until
# every replica is ready and HAProxy has them all UP, prints the URLs, and runs until Ctrl-C or
# SIGTERM, which stops HAProxy and drains every replica (their exit statuses are checked).
#
#   scripts/cluster.sh N [script options] [llaisys-server arguments]
#   e.g. scripts/cluster.sh 3                                   # the tiny Qwen2 (as scripts/run.sh)
#        scripts/cluster.sh 2 --model /models/Qwen2.5-0.5B-Instruct --max-context 8192
#        scripts/cluster.sh 3 --balance roundrobin --base-port 9000 --build-dir build/ci
#
# Script options (also as environment variables):
#   --build-dir DIR   (BUILD_DIR)  the build with bin/llaisys-server; default the first of
#                                  build/release, build/ci, build/default, build/me that has one
#   --balance MODE    (BALANCE)    affinity (default: the conversation's replica, bounded load) or
#                                  roundrobin
#   --base-port P     (BASE_PORT)  HAProxy on P (default 8080), replicas on P+1..P+N, HAProxy's
#                                  stats (/stats, Prometheus /metrics) on P+N+1
#   --log-dir DIR     (LOG_DIR)    where the replicas' and HAProxy's logs and the rendered
#                                  configuration go (default a new directory under /tmp)
# Without --model or --config the replicas serve the tiny Qwen2 (random weights, created once under
# ~/.cache/llaisys). Without --model-threads each replica gets nproc / N compute threads, so the
# replicas do not fight over the cores.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: scripts/cluster.sh N [--build-dir DIR] [--balance affinity|roundrobin] [--base-port P] [--log-dir DIR] [llaisys-server arguments]"
count=${1:?$usage}
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
  echo "cluster: N must be a positive integer, got '$count' ($usage)" >&2
  exit 2
fi
shift

build_dir=${BUILD_DIR:-}
balance=${BALANCE:-affinity}
base_port=${BASE_PORT:-8080}
log_dir=${LOG_DIR:-}
server_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build_dir=${2:?$usage}; shift 2 ;;
    --balance) balance=${2:?$usage}; shift 2 ;;
    --base-port) base_port=${2:?$usage}; shift 2 ;;
    --log-dir) log_dir=${2:?$usage}; shift 2 ;;
    *) server_args+=("$1"); shift ;;
  esac
done
case $balance in
  affinity | roundrobin) ;;
  *) echo "cluster: --balance must be affinity or roundrobin, got '$balance'" >&2; exit 2 ;;
esac
if ! [[ $base_port =~ ^[0-9]+$ ]] || [ "$base_port" -lt 1 ] || [ $((base_port + count + 1)) -gt 65535 ]; then
  echo "cluster: --base-port $base_port leaves no room for $count replicas and the stats port" >&2
  exit 2
fi
# Debian installs haproxy in /usr/sbin, which a normal user's PATH lacks.
haproxy=$(PATH=$PATH:/usr/sbin:/usr/local/sbin:/sbin command -v haproxy || true)
if [ -z "$haproxy" ]; then
  echo "cluster: haproxy is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if [ -z "$build_dir" ]; then
  for candidate in release ci default me; do
    if [ -x "$root/build/$candidate/bin/llaisys-server" ]; then build_dir=$root/build/$candidate; break; fi
  done
fi
server=${build_dir:+$build_dir/bin/llaisys-server}
if [ -z "$server" ] || [ ! -x "$server" ]; then
  looked=${build_dir:-"build/release, build/ci, build/default, build/me"}
  echo "cluster: no bin/llaisys-server in $looked; build one (scripts/run.sh) or pass --build-dir" >&2
  exit 1
fi

has_arg() {
  local arg
  for arg in "${server_args[@]}"; do [ "$arg" = "$1" ] && return 0; done
  return 1
}
if ! has_arg --model && ! has_arg --config; then
  model=${XDG_CACHE_HOME:-$HOME/.cache}/llaisys/tiny-qwen2
  if [ ! -f "$model/config.json" ]; then
    echo "== creating the tiny Qwen2 test model in $model (once)" >&2
    "$build_dir/bin/llaisys-mkmodel" --shape tiny --force "$model" >/dev/null
  fi
  server_args+=(--model "tiny-qwen2=$model")
fi
if ! has_arg --model-threads; then
  threads=$(( $(nproc) / count ))
  server_args+=(--model-threads "$(( threads > 0 ? threads : 1 ))")
fi

if [ -z "$log_dir" ]; then log_dir=$(mktemp -d "${TMPDIR:-/tmp}/llaisys-cluster.XXXXXX"); fi
mkdir -p "$log_dir"

replica_pids=()
haproxy_pid=
stopping=
status=0  # 1 once a process has failed: the script's exit status
stop_all() {
  [ -n "$stopping" ] && return
  stopping=1
  trap - INT TERM
  echo "== stopping: HAProxy, then draining the replicas" >&2
  # HAProxy first, so that no new request reaches a draining replica; SIGUSR1 is its soft stop
  # (it lets the requests in flight finish).
  if [ -n "$haproxy_pid" ]; then kill -USR1 "$haproxy_pid" 2>/dev/null || true; fi
  local pid
  for pid in "${replica_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${replica_pids[@]}"; do
    wait "$pid" || { echo "cluster: replica pid $pid exited with status $?" >&2; status=1; }
  done
  if [ -n "$haproxy_pid" ]; then wait "$haproxy_pid" 2>/dev/null || true; fi
  replica_pids=()
  haproxy_pid=
  echo "== stopped (logs in $log_dir)" >&2
  exit $status
}
trap stop_all INT TERM
trap 'stopping=1; kill -KILL "${replica_pids[@]}" $haproxy_pid 2>/dev/null || true' EXIT

# Each child in its own session: a terminal's Ctrl-C reaches only this script, which stops them in
# order (to HAProxy, SIGINT is an immediate stop; to a replica, a second signal cuts its drain short).
echo "== $count x $server ${server_args[*]}" >&2
for i in $(seq 1 "$count"); do
  port=$((base_port + i))
  setsid "$server" --host 127.0.0.1 --port "$port" "${server_args[@]}" >"$log_dir/replica-$i.log" 2>&1 &
  replica_pids+=($!)
  export "LLAISYS_REPLICA_$i=127.0.0.1:$port"
done

# Ready: /ready 200 from every replica (models loaded), then every server UP in HAProxy.
wait_for() {  # wait_for WHAT SECONDS COMMAND...
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    local pid
    for pid in "${replica_pids[@]}" $haproxy_pid; do
      if ! kill -0 "$pid" 2>/dev/null; then echo "cluster: pid $pid exited while waiting for $what (logs in $log_dir)" >&2; exit 1; fi
    done
    if [ $SECONDS -ge $deadline ]; then echo "cluster: $what not within ${seconds}s (logs in $log_dir)" >&2; exit 1; fi
    sleep 0.2
  done
}
replicas_ready() {
  local i
  for i in $(seq 1 "$count"); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((base_port + i))/ready")" = 200 ] || return 1
  done
}
wait_for "the replicas' /ready" 600 replicas_ready

export LLAISYS_LB_BIND=127.0.0.1:$base_port
export LLAISYS_LB_STATS_BIND=127.0.0.1:$((base_port + count + 1))
export LLAISYS_LB_BALANCE=$balance
"$root/deploy/haproxy/render-config.sh" "$count" >"$log_dir/haproxy.cfg"
"$haproxy" -c -q -f "$log_dir/haproxy.cfg"
setsid "$haproxy" -db -f "$log_dir/haproxy.cfg" >"$log_dir/haproxy.log" 2>&1 &
haproxy_pid=$!
all_up() {
  [ "$(curl -s "http://$LLAISYS_LB_STATS_BIND/stats;csv" | grep -c "^llaisys_affinity,r[0-9]*,.*,UP,")" -eq "$count" ]
}
wait_for "HAProxy's health checks" 30 all_up

cat >&2 <<EOF
== $count replicas behind HAProxy ($balance):
   API         http://$LLAISYS_LB_BIND/v1   (web UI http://$LLAISYS_LB_BIND/)
   replicas    $(for i in $(seq 1 "$count"); do printf 'http://127.0.0.1:%s ' $((base_port + i)); done)
   HAProxy     http://$LLAISYS_LB_STATS_BIND/stats   (Prometheus: /metrics)
   logs        $log_dir
   Ctrl-C stops HAProxy and drains the replicas.
EOF

# Until a signal, or until a process dies on its own (then the rest are stopped too).
while true; do
  wait -n || true
  [ -n "$stopping" ] && continue
  echo "cluster: a process exited on its own (logs in $log_dir); stopping the rest" >&2
  status=1
  stop_all
done
