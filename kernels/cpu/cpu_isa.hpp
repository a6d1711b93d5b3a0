#pragma once
// Which vector instruction set the CPU kernels use, chosen at run time.
//
// Every ISA path of every kernel computes bit-identical results: vector code follows one canonical
// order of operations (16 lanes, see simd.hpp) that the scalar and AVX2 paths reproduce exactly. So
// the ISA changes speed only, and tests compare paths with ==.

#include <optional>
#include <string_view>

namespace llaisys::cpu {

enum class Isa {
  scalar = 0,  // portable C++
  avx2 = 1,    // AVX2 + FMA + F16C
  avx512 = 2,  // AVX-512 F/BW/VL/DQ + FMA + F16C
};

// The best ISA this CPU (and OS) supports.
Isa detect_isa();
bool isa_supported(Isa isa);
// What the CPU offers beyond the dispatched ISAs, for reports ("avx512_bf16", "amx_tile").
bool cpu_has_avx512_bf16();
// AVX512-VNNI (vpdpbusd), VBMI (vpermb) and BITALG (vpshufbitqmb), as Ice Lake, Zen 4 and later have:
// what the int8 mode's fast form needs (linear_int8.hpp).
bool cpu_has_avx512_int8();
bool cpu_has_amx();
// Whether the CPU is AMD's (cpuid vendor "AuthenticAMD"): where vdpbf16ps was measured faster than the
// f32 FMAs (Zen 5: 1.3x the prefill), unlike Intel's (Emerald Rapids: 0.85x; docs/BENCHMARKS.md).
bool cpu_is_amd();

std::string_view to_string(Isa isa);
// "scalar", "avx2", "avx512"; "auto" and "" give detect_isa().
std::optional<Isa> parse_isa(std::string_view name);

}  // namespace llaisys::cpu
