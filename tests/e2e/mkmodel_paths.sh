#!/usr/bin/env bash
# llaisys-mkmodel's output path: "out/" writes out (not out/.partial), --force replaces it, and the
# current directory or one containing it is refused (--force used to remove it).
set -euo pipefail
mkmodel=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
"$mkmodel" --no-tokenizer out/ > /dev/null || fail "out/ was not written"
[ -f out/config.json ] && [ -f out/model.safetensors ] || fail "out/ lacks the model files: $(ls -A out)"
[ ! -e out/.partial ] && [ ! -e out.partial ] || fail "a staging directory was left behind"
"$mkmodel" --no-tokenizer --shards 2 --force out/ > /dev/null || fail "--force out/ failed"
[ -f out/model.safetensors.index.json ] || fail "--force out/ did not replace the model"
mkdir -p stay && touch stay/precious.txt
for target in . .. ../../"$(basename "$work")"/ ./; do
  if (cd stay && "$mkmodel" --no-tokenizer --force "$target" > /dev/null 2>&1); then fail "'$target' from inside stay/ was accepted"; fi
done
[ -f stay/precious.txt ] || fail "a refused target still removed files"
echo "mkmodel paths: ok"
