#pragma once
// The CPU's multiply-add rate at its vector peak, measured: `num_threads` threads each running a
// register-only loop of 512-bit FMAs (f32) or vdpbf16ps (bf16). What a compute-bound benchmark is
// judged against in the same run. 0 where the CPU lacks AVX-512 (or AVX512-BF16 for bf16).

namespace llaisys::bench {

double measure_peak_macs(int num_threads, bool bf16);

}  // namespace llaisys::bench
