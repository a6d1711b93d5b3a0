#include "decoder_lm.hpp"

#include <cmath>
#include <cstring>

#include <boost/json.hpp>

#include "cpu/attention.hpp"
#include "cpu/embedding.hpp"
#include "cpu/linear.hpp"
#include "cpu/linear_bf16.hpp"
#include "cpu/paged_kv.hpp"
#include "cpu/rms_norm.hpp"
#include "cpu/rope.hpp"
#include "cpu/swiglu.hpp"
#include "decoder_options.hpp"
#include "llaisys/core/log.hpp"

namespace llaisys::decoder {
namespace json = boost::json;
namespace {

struct Options {
  cpu::Isa isa = cpu::detect_isa();
  cpu::MatmulPrecision matmul = cpu::MatmulPrecision::f32;
  WeightLoading weights = WeightLoading::automatic;
  DType kv_dtype = DType::f32;
};

Result<cpu::MatmulPrecision> parse_matmul(const json::value& v) {
  const json::string* name = v.if_string();
  const std::string_view text = name ? std::string_view(name->data(), name->size()) : std::string_view();
  if (text == "f32") return cpu::MatmulPrecision::f32;
  if (text == "bf16" || text == "auto") {
    if (cpu::bf16dot::supported()) return cpu::MatmulPrecision::bf16;
    if (text == "auto") return cpu::MatmulPrecision::f32;
    return make_error(ErrorCode::unsupported, "option matmul: bf16 needs AVX512-BF16, which this CPU lacks (use f32 or auto)");
  }
  return make_error(ErrorCode::invalid_argument, "option matmul: expected f32, bf16 or auto, got {}", json::serialize(v));
}

Result<Options> parse_options(const std::string& text) {
  json::error_code ec;
  const json::value value = json::parse(text.empty() ? "{}" : text, ec);
  if (ec || !value.is_object()) {
    return make_error(ErrorCode::invalid_argument, "model options must be a JSON object, got '{}'", text);
  }
  Options options;
  for (const auto& [key, v] : value.as_object()) {
    if (key == "isa") {
      const json::string* name = v.if_string();
      const auto isa = name ? cpu::parse_isa(std::string_view(name->data(), name->size())) : std::nullopt;
      if (!isa) return make_error(ErrorCode::invalid_argument, "option isa: expected auto, avx512, avx2 or scalar, got {}", json::serialize(v));
      if (!cpu::isa_supported(*isa)) {
        return make_error(ErrorCode::unsupported, "option isa: this CPU does not support {}", cpu::to_string(*isa));
      }
      options.isa = *isa;
    } else if (key == "matmul") {
      LLAISYS_ASSIGN_OR_RETURN(options.matmul, parse_matmul(v));
    } else if (key == "kv_dtype") {
      LLAISYS_ASSIGN_OR_RETURN(options.kv_dtype, parse_kv_dtype_option(v));
    } else if (key == "weights") {
      const json::string* name = v.if_string();
      const auto loading = name ? parse_weight_loading(std::string_view(name->data(), name->size())) : std::nullopt;
      if (!loading) return make_error(ErrorCode::invalid_argument, "option weights: expected auto, mmap or memory, got {}", json::serialize(v));
      options.weights = *loading;
    }
    // Other keys belong to other layers (e.g. the engine); ignore them.
  }
  // An explicit "bf16" with an ISA that cannot run it would silently compute in f32 otherwise.
  if (options.matmul == cpu::MatmulPrecision::bf16 && options.isa != cpu::Isa::avx512) {
    const auto it = value.as_object().find("matmul");
    if (it != value.as_object().end() && it->value() == "bf16") {
      return make_error(ErrorCode::invalid_argument, "option matmul: bf16 needs isa avx512, not {}", cpu::to_string(options.isa));
    }
    options.matmul = cpu::MatmulPrecision::f32;  // "auto" with a narrower ISA
  }
  return options;
}

}  // namespace

// Views of one batch's activations inside buffer_.
struct DecoderLM::Activations {
  int64_t num_tokens = 0;
  float* x = nullptr;     // [T, hidden] the residual stream
  float* h = nullptr;     // [T, hidden] normed input of a block
  float* q = nullptr;     // [T, heads * head_dim]
  float* k = nullptr;     // [T, kv_heads * head_dim]
  float* v = nullptr;     // [T, kv_heads * head_dim]
  float* attn = nullptr;  // [T, heads * head_dim]
  float* gate = nullptr;  // [T, intermediate]
  float* up = nullptr;    // [T, intermediate]
  float* cos = nullptr;   // [T, head_dim / 2]
  float* sin = nullptr;   // [T, head_dim / 2]
  float* out_rows = nullptr;  // [num_outputs, hidden]
};

Result<std::unique_ptr<DecoderLM>> DecoderLM::open(const ModelCreateParams& params, const DecoderVariant& variant) {
  if (!params.device.is_cpu()) {
    return make_error(ErrorCode::unsupported, "{}: only the cpu device is implemented, not {}", variant.architecture,
                      params.device.to_string());
  }
  LLAISYS_ASSIGN_OR_RETURN(Options options, parse_options(params.options_json));
  LLAISYS_ASSIGN_OR_RETURN(HfTransformerConfig hf, load_hf_config(params.model_dir));
  LLAISYS_ASSIGN_OR_RETURN(DecoderConfig config, make_decoder_config(hf, variant));
  LLAISYS_ASSIGN_OR_RETURN(WeightStore store, WeightStore::open(params.model_dir, options.weights));
  auto weights = load_decoder_weights(store, config);
  if (!weights.ok()) return std::move(weights).take_status().with_context(params.model_dir.string());
  return std::make_unique<DecoderLM>(std::move(config), std::move(store), std::move(weights).value(),
                                     params.num_threads, options.isa, options.matmul, options.kv_dtype,
                                     variant.architecture);
}

DecoderLM::DecoderLM(DecoderConfig config, WeightStore store, DecoderWeights weights, int32_t num_threads,
                     cpu::Isa isa, cpu::MatmulPrecision matmul, DType kv_dtype, std::string architecture)
    : config_(std::move(config)),
      store_(std::move(store)),
      weights_(std::move(weights)),
      rope_(make_rope_frequencies(config_.head_dim, config_.rope_theta, config_.rope_scaling)),
      pool_(num_threads),
      ctx_{.pool = &pool_, .isa = isa, .matmul = matmul} {
  info_ = ModelInfo{.architecture = std::move(architecture),
                    .vocab_size = config_.vocab_size,
                    .hidden_size = config_.hidden_size,
                    .num_layers = config_.num_layers,
                    .num_kv_heads = config_.num_kv_heads,
                    .head_dim = config_.head_dim,
                    .max_context = config_.max_context,
                    .bos_token_id = config_.bos_token_id,
                    .eos_token_ids = config_.eos_token_ids,
                    .kv_dtype = kv_dtype,
                    .weight_bytes = weights_.bytes_per_decode_step,
                    .kv_bytes_per_token = 2ull * static_cast<uint64_t>(config_.num_layers) *
                                          static_cast<uint64_t>(config_.num_kv_heads) *
                                          static_cast<uint64_t>(config_.head_dim) * dtype_size(kv_dtype)};
  // bf16 products apply where both the ISA and the weights allow them (linear_bf16.hpp).
  const bool bf16_products = matmul == cpu::MatmulPrecision::bf16 && isa == cpu::Isa::avx512;
  log::info("{}: {} layers, hidden {}, {} threads, isa {}, matmul {}, KV cache {}, {:.1f} MB of weights per decode step ({})",
            info_.architecture, config_.num_layers, config_.hidden_size, pool_.num_threads(), cpu::to_string(isa),
            bf16_products ? "bf16 (activations rounded to bf16 for bf16 weights)" : "f32", to_string(kv_dtype),
            static_cast<double>(info_.weight_bytes) / 1e6,
            store_.loading() == WeightLoading::memory ? "read into huge-page memory" : "mapped");
}

Status DecoderLM::init_kv_cache(const KvCacheConfig& config) {
  const uint64_t per_block = info_.kv_bytes_per_token * static_cast<uint64_t>(config.block_size);
  uint64_t total = 0;
  if (__builtin_mul_overflow(per_block, static_cast<uint64_t>(config.num_blocks), &total)) {
    return make_error(ErrorCode::out_of_memory, "KV cache of {} blocks x {} tokens overflows", config.num_blocks,
                      config.block_size);
  }
  kv_pool_ = AlignedBuffer();  // free the old pool first
  kv_pool_ = AlignedBuffer(static_cast<std::size_t>(total));
  kv_config_ = config;
  return Status();
}

std::size_t DecoderLM::kv_block_bytes() const {
  return static_cast<std::size_t>(config_.num_kv_heads) * static_cast<std::size_t>(kv_config_.block_size) *
         static_cast<std::size_t>(config_.head_dim) * dtype_size(info_.kv_dtype);
}

Status DecoderLM::copy_blocks(std::span<const BlockCopy> copies) {
  const std::size_t block_bytes = kv_block_bytes();
  const std::size_t pool_bytes = block_bytes * static_cast<std::size_t>(kv_config_.num_blocks);
  std::byte* base = kv_pool_.data();
  for (const BlockCopy& copy : copies) {
    for (std::size_t half = 0; half < 2 * static_cast<std::size_t>(config_.num_layers); ++half) {
      std::byte* pool = base + half * pool_bytes;
      std::memcpy(pool + static_cast<std::size_t>(copy.dst) * block_bytes,
                  pool + static_cast<std::size_t>(copy.src) * block_bytes, block_bytes);
    }
  }
  return Status();
}

void DecoderLM::run_layer(int32_t layer_index, const cpu::BatchSlots& slots, Activations& a) {
  const DecoderLayerWeights& w = weights_.layers[static_cast<std::size_t>(layer_index)];
  const int64_t t = a.num_tokens;
  const int64_t hidden = config_.hidden_size;
  const int64_t hd = config_.head_dim;
  const int64_t q_dim = config_.num_heads * hd;
  const int64_t kv_dim = config_.num_kv_heads * hd;
  const int64_t inter = config_.intermediate_size;
  const std::size_t pool_bytes = kv_block_bytes() * static_cast<std::size_t>(kv_config_.num_blocks);
  std::byte* layer_kv = kv_pool_.data() + 2 * static_cast<std::size_t>(layer_index) * pool_bytes;
  const cpu::PagedKvLayer kv{.k = layer_kv,
                             .v = layer_kv + pool_bytes,
                             .block_size = kv_config_.block_size,
                             .num_kv_heads = config_.num_kv_heads,
                             .head_dim = hd,
                             .dtype = info_.kv_dtype};
  auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };

  // Attention block.
  cpu::rms_norm(ctx_, a.x, hidden, t, hidden, w.input_norm.data(), config_.rms_norm_eps, a.h, hidden);
  const cpu::LinearJob qkv[] = {
      {.weight = w.q, .bias = bias(w.q_bias), .y = a.q, .y_stride = q_dim},
      {.weight = w.k, .bias = bias(w.k_bias), .y = a.k, .y_stride = kv_dim},
      {.weight = w.v, .bias = bias(w.v_bias), .y = a.v, .y_stride = kv_dim},
  };
  cpu::linear(ctx_, a.h, hidden, t, hidden, qkv);
  cpu::rope_apply(ctx_, a.q, q_dim, t, config_.num_heads, hd, a.cos, a.sin);
  cpu::rope_apply(ctx_, a.k, kv_dim, t, config_.num_kv_heads, hd, a.cos, a.sin);
  cpu::kv_cache_write(ctx_, kv, slots, a.k, kv_dim, a.v, kv_dim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  cpu::paged_attention(ctx_, kv, slots, a.q, q_dim, config_.num_heads, scale, a.attn, q_dim);
  const cpu::LinearJob o_proj{.weight = w.o, .bias = bias(w.o_bias), .y = a.x, .y_stride = hidden, .accumulate = true};
  cpu::linear(ctx_, a.attn, q_dim, t, q_dim, std::span(&o_proj, 1));

  // MLP block.
  cpu::rms_norm(ctx_, a.x, hidden, t, hidden, w.post_norm.data(), config_.rms_norm_eps, a.h, hidden);
  const cpu::LinearJob gate_up[] = {
      {.weight = w.gate, .bias = bias(w.gate_bias), .y = a.gate, .y_stride = inter},
      {.weight = w.up, .bias = bias(w.up_bias), .y = a.up, .y_stride = inter},
  };
  cpu::linear(ctx_, a.h, hidden, t, hidden, gate_up);
  cpu::swiglu(ctx_, a.gate, inter, a.up, inter, t, inter, a.gate, inter);
  const cpu::LinearJob down{.weight = w.down, .bias = bias(w.down_bias), .y = a.x, .y_stride = hidden, .accumulate = true};
  cpu::linear(ctx_, a.gate, inter, t, inter, std::span(&down, 1));
}

Status DecoderLM::forward(const ForwardBatch& batch, std::span<float> out) {
  if (kv_pool_.empty()) return Status(ErrorCode::invalid_argument, "forward before init_kv_cache");
  const int64_t t = batch.num_tokens();
  const int64_t num_outputs = batch.num_outputs();
  if (t == 0) return Status();
  const int64_t hidden = config_.hidden_size;
  const int64_t hd = config_.head_dim;
  const int64_t q_dim = config_.num_heads * hd;
  const int64_t kv_dim = config_.num_kv_heads * hd;
  const int64_t inter = config_.intermediate_size;

  // Carve the activations out of one buffer.
  const int64_t floats = t * (2 * hidden + 2 * q_dim + 2 * kv_dim + 2 * inter + hd) + num_outputs * hidden;
  if (buffer_.size() < static_cast<std::size_t>(floats)) buffer_.resize(static_cast<std::size_t>(floats));
  float* next = buffer_.data();
  auto take = [&next](int64_t n) {
    float* p = next;
    next += n;
    return p;
  };
  Activations a;
  a.num_tokens = t;
  a.x = take(t * hidden);
  a.h = take(t * hidden);
  a.q = take(t * q_dim);
  a.k = take(t * kv_dim);
  a.v = take(t * kv_dim);
  a.attn = take(t * q_dim);
  a.gate = take(t * inter);
  a.up = take(t * inter);
  a.cos = take(t * hd / 2);
  a.sin = take(t * hd / 2);
  a.out_rows = take(num_outputs * hidden);

  cpu::embedding(ctx_, weights_.embed, batch.token_ids.data(), t, a.x, hidden);
  fill_rope_tables(rope_, batch.positions.data(), t, a.cos, a.sin);
  const cpu::BatchSlots slots{.num_tokens = t,
                              .positions = batch.positions.data(),
                              .seq_indices = batch.seq_indices.data(),
                              .block_tables = batch.block_tables.data()};
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) run_layer(layer, slots, a);

  if (num_outputs == 0) return Status();
  for (int64_t r = 0; r < num_outputs; ++r) {
    const int64_t token = batch.output_token_indices[static_cast<std::size_t>(r)];
    std::memcpy(a.out_rows + r * hidden, a.x + token * hidden, static_cast<std::size_t>(hidden) * sizeof(float));
  }
  if (batch.output_kind == OutputKind::hidden) {
    cpu::rms_norm(ctx_, a.out_rows, hidden, num_outputs, hidden, weights_.final_norm.data(), config_.rms_norm_eps,
                  out.data(), hidden);
    return Status();
  }
  cpu::rms_norm(ctx_, a.out_rows, hidden, num_outputs, hidden, weights_.final_norm.data(), config_.rms_norm_eps,
                a.out_rows, hidden);
  const cpu::LinearJob lm_head{.weight = weights_.lm_head, .y = out.data(), .y_stride = config_.vocab_size};
  cpu::linear(ctx_, a.out_rows, hidden, num_outputs, hidden, std::span(&lm_head, 1));
  return Status();
}

}  // namespace llaisys::decoder
