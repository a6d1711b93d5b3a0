#!/usr/bin/env bash
# Writes deploy/haproxy/llaisys.cfg (or CONFIG) to standard output with N replicas in each backend:
# the lines between a "# replicas: TEMPLATE" comment and "# end of replicas" are replaced by TEMPLATE
# for i = 1..N ({i} replaced by i). HAProxy has no loops, and the rest of the file stays one
# reviewed copy. The rendered servers read their addresses from LLAISYS_REPLICA_1..N. A
# hash-balance-factor below 100 x N / (N - 1) is raised to it (said on standard error): below that,
# requests refused by a draining replica find no other eligible one (llaisys.cfg, README.md).
#
#   deploy/haproxy/render-config.sh N [CONFIG] > haproxy.cfg
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage="usage: deploy/haproxy/render-config.sh N [CONFIG]"
count=${1:?$usage}
config=${2:-$here/llaisys.cfg}
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
  echo "render-config: N must be a positive integer, got '$count' ($usage)" >&2
  exit 2
fi
awk -v n="$count" '
  /^[ \t]*hash-balance-factor[ \t]+[0-9]+/ && n > 1 {
    least = int((100 * n + n - 2) / (n - 1))  # ceil(100 n / (n - 1))
    if ($2 + 0 < least) {
      printf "render-config: hash-balance-factor %d raised to %d for %d replicas\n", $2, least, n > "/dev/stderr"
      sub(/[0-9]+/, least)
    }
  }
  /^[ \t]*# replicas: / {
    print
    indent = $0; sub(/#.*/, "", indent)
    template = $0; sub(/^[ \t]*# replicas: /, "", template)
    for (i = 1; i <= n; ++i) { line = template; gsub(/\{i\}/, i, line); print indent line }
    blocks++; skipping = 1; next
  }
  /^[ \t]*# end of replicas/ { skipping = 0 }
  !skipping { print }
  END { if (blocks == 0 || skipping) { print "render-config: no complete \"# replicas:\" block" > "/dev/stderr"; exit 1 } }
' "$config"
