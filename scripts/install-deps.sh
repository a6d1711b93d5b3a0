#!/usr/bin/env bash
# Installs the Debian packages in scripts/debian-packages.txt that are missing, then the npm
# packages of every package-lock.json in the project whose node_modules is missing or stale.
# Idempotent, and near-instant when everything is present.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$root/scripts/debian-packages.txt" | grep -v '^$')
# A package counts as present when it is installed, or when an installed package provides it (e.g.
# NodeSource's nodejs provides npm and conflicts with Debian's npm package).
provided=" $(dpkg-query -W -f='${db:Status-Status} ${Provides}\n' 2>/dev/null \
  | sed -n 's/^installed //p' | tr ',' '\n' | sed -e 's/([^)]*)//g' -e 's/[[:space:]]//g' | sort -u | tr '\n' ' ')"
missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "installed" ] || [[ "$provided" == *" $pkg "* ]] || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi

# npm: each folder with a package-lock.json gets `npm ci` when its node_modules is older than the lock.
while IFS= read -r lock; do
  dir=$(dirname "$lock")
  stamp="$dir/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
    echo "install-deps: npm ci in ${dir#$root/}" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done < <(find "$root" -name package-lock.json -not -path '*/node_modules/*' -not -path "$root/build/*" | sort)
