#include "cpu_isa.hpp"

#include <cpuid.h>

namespace llaisys::cpu {
namespace {

// XCR0 bits the OS must enable for the register state an ISA uses.
bool os_saves(unsigned mask) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & mask) == mask;
}

bool leaf7(unsigned subleaf, unsigned& ebx, unsigned& ecx, unsigned& edx, unsigned& eax) {
  return __get_cpuid_count(7, subleaf, &eax, &ebx, &ecx, &edx) != 0;
}

}  // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: {
      // The AVX2 paths also convert f16 weights with F16C (every AVX2 CPU has it, a hypervisor
      // may still hide it).
      unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
      const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c && os_saves(0x6);
    }
    case Isa::avx512:
      return isa_supported(Isa::avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && os_saves(0xE6);
  }
  return false;
}

Isa detect_isa() {
  if (isa_supported(Isa::avx512)) return Isa::avx512;
  if (isa_supported(Isa::avx2)) return Isa::avx2;
  return Isa::scalar;
}

bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return isa_supported(Isa::avx512) && leaf7(1, ebx, ecx, edx, eax) && (eax & (1u << 5)) != 0;
}

bool cpu_has_avx512_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  constexpr unsigned kVbmi = 1u << 1, kVnni = 1u << 11, kBitalg = 1u << 12;
  constexpr unsigned kAll = kVbmi | kVnni | kBitalg;
  return isa_supported(Isa::avx512) && leaf7(0, ebx, ecx, edx, eax) && (ecx & kAll) == kAll;
}

bool cpu_has_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return leaf7(0, ebx, ecx, edx, eax) && (edx & (1u << 24)) != 0 && os_saves(0x60000 | 0xE6);
}

bool cpu_is_amd() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  // The vendor string is ebx, edx, ecx: "Auth" "enti" "cAMD".
  return ebx == 0x68747541u && edx == 0x69746E65u && ecx == 0x444D4163u;
}

std::string_view to_string(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  if (name.empty() || name == "auto") return detect_isa();
  if (name == "scalar") return Isa::scalar;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  return std::nullopt;
}

}  // namespace llaisys::cpu
