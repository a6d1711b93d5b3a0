#!/usr/bin/env bash
# The device tool sends every tracked file with the carried bundle, 64 MiB in all. The checkout's
# tracked files are 51 MiB since the GGUF fixtures came (tests/data/tiny-llama-gguf,
# tests/data/qwen2-vocab-gguf: 36 MiB), which leaves too little for gpu-bundle.tar.gz (26 MiB); the
# GPU checklist reads neither. This takes them out of git's index for the run (the files stay on
# disk, ignored through .git/info/exclude) and puts them back afterwards:
#
#   scripts/gpu/travel-light.sh            # before run(...): prints what will travel
#   scripts/gpu/travel-light.sh --restore  # after it: the index as it was
#
# Never commit in between (the fixtures would be deleted from the repository): the script refuses to
# start with anything staged, and --restore is idempotent.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
paths=(tests/data/tiny-llama-gguf tests/data/qwen2-vocab-gguf)
exclude=.git/info/exclude

tracked_mib() {
  git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {printf "%.1f", s / 1048576}'
}

if [[ ${1:-} == --restore ]]; then
  git reset -q -- "${paths[@]}"
  for p in "${paths[@]}"; do sed -i "\\|^/$p/\$|d" "$exclude"; done
  echo "travel-light: restored; tracked files: $(tracked_mib) MiB"
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: scripts/gpu/travel-light.sh [--restore]" >&2; exit 2; }
if ! git diff --cached --quiet; then
  echo "travel-light: something is staged; commit or unstage it first" >&2
  exit 1
fi
git rm -r -q --cached -- "${paths[@]}"
for p in "${paths[@]}"; do echo "/$p/" >> "$exclude"; done
bundle=0
[[ -f gpu-bundle.tar.gz ]] && bundle=$(stat -c %s gpu-bundle.tar.gz)
echo "travel-light: tracked files now $(tracked_mib) MiB, gpu-bundle.tar.gz $((bundle >> 20)) MiB (the tool carries 64 MiB);" \
     "run scripts/gpu/travel-light.sh --restore after the run"
