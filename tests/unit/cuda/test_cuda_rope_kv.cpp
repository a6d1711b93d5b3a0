// rope_kv_write against cpu::rope_tables + cpu::rope_apply + cpu::kv_cache_write.
//
// Tolerance: both sides use the same f32 cos/sin (the table comes from cpu::rope_tables) and
// compute x0 c - x1 s, x1 c + x0 s with unfused f32 operations, so they agree exactly; we allow one
// rounding of each product (2^-23 (|x0 c| + |x1 s|)) in case a CPU path fuses them. A bf16 cache
// holds the round-to-nearest-even of the same value: within 2^-8 of it.

#include <cmath>

#include "cpu/paged_kv.hpp"
#include "cpu/rope.hpp"
#include "cuda/rope_kv.hpp"
#include "cuda_test_util.hpp"

using namespace llaisys;
using namespace llaisys::cuda_test;

TEST_CASE("cuda rope_kv_write matches cpu rope + kv_cache_write", "[cuda][rope]") {
  Fixture f;
  const int64_t D = 64, q_heads = 4, kv_heads = 2, block_size = 16, num_blocks = 6, max_blocks = 3;
  const int64_t table_positions = 48;
  // Sequence 0: a prefill of 20 tokens; sequence 1: three tokens at positions 30..32.
  std::vector<int32_t> positions, seqs;
  for (int32_t p = 0; p < 20; ++p) { positions.push_back(p); seqs.push_back(0); }
  for (int32_t p = 30; p < 33; ++p) { positions.push_back(p); seqs.push_back(1); }
  const std::vector<int32_t> tables = {4, 1, 5, /* seq 1 */ 0, 2, 3};
  const auto T = static_cast<int64_t>(positions.size());

  std::vector<int32_t> all_positions(table_positions);
  for (int32_t p = 0; p < table_positions; ++p) all_positions[p] = p;
  std::vector<float> cos_table(table_positions * D / 2), sin_table(table_positions * D / 2);
  cpu::rope_tables(all_positions.data(), table_positions, D, 1e6, 1.0, cos_table.data(), sin_table.data());

  const auto q = random_floats(static_cast<std::size_t>(T * q_heads * D), 30, -3.0f, 3.0f);
  const auto k = random_floats(static_cast<std::size_t>(T * kv_heads * D), 31, -3.0f, 3.0f);
  const auto v = random_floats(static_cast<std::size_t>(T * kv_heads * D), 32, -3.0f, 3.0f);

  // CPU reference.
  std::vector<float> token_cos(T * D / 2), token_sin(T * D / 2);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < D / 2; ++i) {
      token_cos[t * D / 2 + i] = cos_table[positions[t] * D / 2 + i];
      token_sin[t * D / 2 + i] = sin_table[positions[t] * D / 2 + i];
    }
  }
  std::vector<float> q_ref = q, k_ref = k;
  cpu::rope_apply(f.cpu, q_ref.data(), q_heads * D, T, q_heads, D, token_cos.data(), token_sin.data());
  cpu::rope_apply(f.cpu, k_ref.data(), kv_heads * D, T, kv_heads, D, token_cos.data(), token_sin.data());
  const std::size_t cache_size = num_blocks * kv_heads * block_size * D;
  std::vector<float> k_cache_ref(cache_size, 0.0f), v_cache_ref(cache_size, 0.0f);
  const std::vector<const int32_t*> table_ptrs = {tables.data(), tables.data() + max_blocks};
  const cpu::PagedKvLayer cpu_layer{.k = k_cache_ref.data(), .v = v_cache_ref.data(), .block_size = block_size,
                                    .num_kv_heads = kv_heads, .head_dim = D};
  cpu::kv_cache_write(f.cpu, cpu_layer, {.num_tokens = T, .positions = positions.data(), .seq_indices = seqs.data(),
                                         .block_tables = table_ptrs.data()},
                      k_ref.data(), kv_heads * D, v.data(), kv_heads * D);

  auto dpos = to_device(positions);
  auto dseq = to_device(seqs);
  auto dtables = to_device(tables);
  auto dcos = to_device(cos_table);
  auto dsin = to_device(sin_table);
  auto dk = to_device(k);
  auto dv = to_device(v);
  const cuda::DeviceBatch batch{.num_tokens = T, .positions = dpos.data(), .seq_indices = dseq.data(),
                                .block_tables = dtables.data(), .max_blocks_per_seq = max_blocks};

  auto check_close = [](float got, float want, double bound) { return abs_diff(got, want) <= bound; };
  for (const DType dtype : {DType::f32, DType::bf16}) {
    CAPTURE(to_string(dtype));
    auto dq = to_device(q);
    cuda::DeviceBuffer<float> kc32, vc32;
    cuda::DeviceBuffer<bf16_t> kc16, vc16;
    cuda::DeviceKvLayer layer{.dtype = dtype, .num_blocks = num_blocks, .block_size = block_size,
                              .num_kv_heads = kv_heads, .head_dim = D};
    if (dtype == DType::f32) {
      kc32 = to_device(std::vector<float>(cache_size, 0.0f));
      vc32 = to_device(std::vector<float>(cache_size, 0.0f));
      layer.k = kc32.data();
      layer.v = vc32.data();
    } else {
      kc16 = to_device(std::vector<bf16_t>(cache_size, 0));
      vc16 = to_device(std::vector<bf16_t>(cache_size, 0));
      layer.k = kc16.data();
      layer.v = vc16.data();
    }
    REQUIRE(cuda::rope_kv_write(f.ctx, layer, batch, dq.data(), q_heads * D, q_heads, dk.data(), kv_heads * D,
                                dv.data(), kv_heads * D, dcos.data(), dsin.data(), table_positions)
                .ok());
    const auto q_got = to_host(dq);
    for (std::size_t i = 0; i < q_ref.size(); ++i) {
      INFO("q element " << i);
      REQUIRE(check_close(q_got[i], q_ref[i], 0x1.0p-23 * 2.0 * 3.0));
    }
    const auto k_got = dtype == DType::f32 ? to_host(kc32) : from_bf16(to_host(kc16));
    const auto v_got = dtype == DType::f32 ? to_host(vc32) : from_bf16(to_host(vc16));
    const double rel = dtype == DType::f32 ? 0.0 : kBf16Eps;
    for (std::size_t i = 0; i < cache_size; ++i) {
      INFO("cache element " << i);
      REQUIRE(check_close(k_got[i], k_cache_ref[i], rel * mag(k_cache_ref[i]) + 0x1.0p-23 * 6.0));
      REQUIRE(check_close(v_got[i], v_cache_ref[i], rel * mag(v_cache_ref[i])));
    }
    CHECK(to_host(dk) == k);  // k is read, not rotated in place
  }
}
