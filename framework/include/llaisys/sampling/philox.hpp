#pragma once
// Counter-based randomness: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC'11). A draw is a pure function of (key, counter), so a sequence's sampled tokens
// depend on its seed and the position being sampled, never on which other sequences share the step,
// on the order rows are processed in, or on the device (the same function runs on CUDA).
// Header-only and constexpr-friendly so device code can include it.

#include <array>
#include <cstdint>

#if defined(__CUDACC__)
#define LLAISYS_HOST_DEVICE __host__ __device__
#else
#define LLAISYS_HOST_DEVICE
#endif

namespace llaisys {

// Ten rounds of Philox4x32 on `counter` (four 32-bit words) with a 64-bit key.
LLAISYS_HOST_DEVICE inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kMul0} * counter[0];
    const uint64_t p1 = uint64_t{kMul1} * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ k0, static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

// SplitMix64's finaliser: derives independent seeds from one (choices, speculation's streams).
LLAISYS_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The seed of choice `choice` of a request seeded with `seed`: choice 0 keeps it, the others get
// independent, reproducible ones.
LLAISYS_HOST_DEVICE inline uint64_t choice_seed(uint64_t seed, uint32_t choice) {
  return choice == 0 ? seed : splitmix64(seed ^ splitmix64(choice));
}

// A uniform double in [0, 1) with 53 random bits from (seed, counter).
LLAISYS_HOST_DEVICE inline double counter_uniform01(uint64_t seed, uint64_t counter) {
  const std::array<uint32_t, 4> r =
      philox4x32_10({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}, seed);
  const uint64_t bits = (uint64_t{r[0]} << 32) | r[1];
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace llaisys
