#!/usr/bin/env bash
# Builds a self-contained bundle of the CUDA programs for a GPU machine of another image (the lent
# H100/H200 machines: Ubuntu-like, nvcc 13 and the CUDA libraries, but no Boost, ICU, PCRE2, fmt or
# spdlog). docs/CUDA.md says how to run it.
#
#   scripts/gpu-bundle.sh [--build-dir DIR] [--no-build] [--arch 90] [OUT]     (OUT: ./gpu-bundle)
#
# OUT/bin holds the CUDA tests and the programs, OUT/lib/llaisys/plugins the plugins, OUT/lib every
# shared library they need that is not glibc, libstdc++/libgcc or a CUDA library (CUDA runtime
# included: it is small and tied to the nvcc that built the kernels). The build gives every binary
# the DT_RPATH $ORIGIN/../lib:$ORIGIN/../.. (CMakeLists.txt), so the copies are found first. cuBLASLt
# (540 MB) is not copied: OUT/run-on-gpu.sh finds the GPU machine's own. OUT/run-on-gpu.sh runs the
# whole GPU checklist there. OUT.tar.gz is what travels (carry it; `tar xzf` there). The bundle is
# checked here (tests/bundle/check_bundle.sh): every dependency resolves into the bundle or to an
# allowed system library, and the archive stays under 48 MiB (the device tool carries 64 MiB,
# the checkout included).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build/gpu"
arch=90
do_build=1
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n 2,15p "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "gpu-bundle.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
out=${out:-$root/gpu-bundle}

programs=(test_cuda_kernels test_cuda_decoder_ops test_cuda_qwen2 test_cuda_architectures
          llaisys-bench llaisys-mkmodel llaisys-offline llaisys-server)
plugins=(qwen2 llama qwen3 mistral gemma2)

if [[ $do_build == 1 ]]; then
  command -v nvcc >/dev/null || { echo "gpu-bundle.sh: nvcc not found (the bundle is a CUDA build)" >&2; exit 1; }
  cmake --preset ci -B "$build" -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
  cmake --build "$build" --target "${programs[@]}" "${plugins[@]}"
fi
grep -q '^LLAISYS_HAVE_CUDA\|CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" ||
  { echo "gpu-bundle.sh: $build is not a CUDA build" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/llaisys/plugins" "$out/tools"
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done
for p in "${plugins[@]}"; do cp "$build/lib/llaisys/plugins/libllaisys-$p.so" "$out/lib/llaisys/plugins/"; done

# The system's own: glibc, the C++ runtime and the CUDA driver / cuBLAS (found on the GPU machine).
system_lib='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnvidia-[a-z-]*)\.so'
# Copy every other dependency (by its soname) until nothing new appears: copies have their own deps.
changed=1
while [[ $changed == 1 ]]; do
  changed=0
  while read -r name path; do
    [[ $name =~ $system_lib ]] && continue
    [[ -e "$out/lib/$name" ]] && continue
    [[ -f "$path" ]] || { echo "gpu-bundle.sh: $name not found (ldd: $path)" >&2; exit 1; }
    cp -L "$path" "$out/lib/$name"
    changed=1
  done < <(find "$out/bin" "$out/lib" -type f -print0 | xargs -0 -n1 ldd 2>/dev/null |
             awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* "$out"/lib/llaisys/plugins/*.so 2>/dev/null || true

cp "$root/scripts/gpu/run-on-gpu.sh" "$out/"
cp "$root/apps/bench/hf_throughput.py" "$out/tools/hf_throughput_workload.py"
cp "$root/scripts/gpu/ncu_summary.py" "$root/scripts/gpu/server_smoke.py" "$out/tools/"
for f in hf_reference.py hf_throughput.py; do
  [[ -f "$root/../shared/tools/$f" ]] && cp "$root/../shared/tools/$f" "$out/tools/"
done
{
  echo "llaisys GPU bundle, $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), built $(date -u +%FT%TZ)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "CUDA architectures: $(grep '^CMAKE_CUDA_ARCHITECTURES:' "$build/CMakeCache.txt" | cut -d= -f2)"
} > "$out/MANIFEST"
# What travels to a device machine: one archive (the working tree and it must stay under 64 MiB).
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
echo "bundle: $out ($(du -sm "$out" | cut -f1) MiB), packed: $out.tar.gz ($(du -sm "$out.tar.gz" | cut -f1) MiB)"
