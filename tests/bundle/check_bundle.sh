#!/usr/bin/env bash
# Checks a bundle made by scripts/gpu-bundle.sh: every binary's shared libraries resolve into the
# bundle or to glibc / the C++ runtime / the CUDA driver and cuBLAS (the GPU machine's own), nothing
# is missing, the test programs, plugins and run-on-gpu.sh are there, and the whole travels to a
# device machine (under 64 MiB).
#
#   check_bundle.sh BUNDLE            or      check_bundle.sh --make BUILD_DIR
# (--make: bundle BUILD_DIR, without building, into a temporary folder and check that; the ctest.)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ ${1:-} == --make ]]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  "$root/scripts/gpu-bundle.sh" --no-build --build-dir "$2" "$tmp/bundle" >/dev/null
  set -- "$tmp/bundle"
fi
bundle=$(cd "$1" && pwd)
system_lib='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnvidia-[a-z-]*)\.so'
fail=0
for f in test_cuda_kernels test_cuda_decoder_ops test_cuda_qwen2 test_cuda_architectures llaisys-bench; do
  [[ -x "$bundle/bin/$f" ]] || { echo "missing program bin/$f"; fail=1; }
done
for f in qwen2 llama qwen3 mistral gemma2; do
  [[ -f "$bundle/lib/llaisys/plugins/libllaisys-$f.so" ]] || { echo "missing plugin $f"; fail=1; }
done
[[ -x "$bundle/run-on-gpu.sh" ]] || { echo "missing run-on-gpu.sh"; fail=1; }
checked=0
# ldd with an empty environment: what the binary's own search path finds. The programs and plugins
# (their DT_RPATH serves their libraries' dependencies too); the copies in lib/ come with them.
while IFS= read -r -d '' f; do
  [[ $(head -c4 "$f" | od -An -c | tr -d ' ') == '177ELF' ]] || continue
  checked=$((checked + 1))
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    if [[ $path == "not" ]]; then echo "$f: $name not found"; fail=1; continue; fi
    [[ $path == "$bundle"/* ]] && continue
    [[ $name =~ $system_lib ]] && continue
    echo "$f: $name resolves outside the bundle ($path)"; fail=1
  done < <(env -i ldd "$f")
done < <(find "$bundle/bin" "$bundle/lib/llaisys/plugins" -type f -print0)
(( checked >= 10 )) || { echo "only $checked binaries found"; fail=1; }
[[ -f "$bundle.tar.gz" ]] || { echo "missing $bundle.tar.gz"; fail=1; }
bytes=$(stat -c %s "$bundle.tar.gz" 2>/dev/null || echo 0)
if (( bytes >= 48 << 20 )); then echo "$bundle.tar.gz is $bytes bytes, over 48 MiB"; fail=1; fi
echo "checked $checked binaries, packed bundle $((bytes >> 20)) MiB"
exit $fail
