// CudaDecoderLM (cuda_decoder.hpp): the shared decoder's forward pass over kernels/cuda.

#include "cuda_decoder.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <boost/json.hpp>

#include "cuda/attention.hpp"
#include "cuda/cublaslt.hpp"
#include "cuda/cuda_status.hpp"
#include "cuda/device_memory.hpp"
#include "cuda/embedding.hpp"
#include "cuda/linear.hpp"
#include "cuda/rms_norm.hpp"
#include "cuda/rope_kv.hpp"
#include "cuda/swiglu.hpp"
#include "decoder_options.hpp"
#include "llaisys/core/log.hpp"
#include "rope_frequencies.hpp"

namespace llaisys::decoder {
namespace json = boost::json;
using cuda::DeviceBuffer;

namespace {

// Device bytes of a bf16 [rows, cols] matrix.
uint64_t bf16_bytes(int64_t rows, int64_t cols) {
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * sizeof(bf16_t);
}

// Copies `m` (bf16, f16 or f32 on the host) as bf16 rows into dst (device) at row `row_offset`.
Status upload_rows(const cpu::WeightMatrix& m, bf16_t* dst, int64_t row_offset) {
  const std::size_t count = static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols);
  bf16_t* target = dst + static_cast<std::size_t>(row_offset) * static_cast<std::size_t>(m.cols);
  if (m.dtype == DType::bf16) {
    return cuda::cuda_status(cudaMemcpy(target, m.data, count * sizeof(bf16_t), cudaMemcpyHostToDevice),
                             "uploading a weight matrix");
  }
  std::vector<bf16_t> converted(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (m.dtype) {
      case DType::f16: converted[i] = f32_to_bf16(f16_to_f32(static_cast<const f16_t*>(m.data)[i])); break;
      case DType::f32: converted[i] = f32_to_bf16(static_cast<const float*>(m.data)[i]); break;
      default: return make_error(ErrorCode::unsupported, "weight dtype {} on the CUDA path", to_string(m.dtype));
    }
  }
  return cuda::cuda_status(cudaMemcpy(target, converted.data(), count * sizeof(bf16_t), cudaMemcpyHostToDevice),
                           "uploading a weight matrix");
}

// The matrices stacked row-wise into one device matrix (q;k;v and gate;up: one GEMM each).
Result<DeviceBuffer<bf16_t>> upload_stacked(std::initializer_list<const cpu::WeightMatrix*> parts) {
  std::size_t count = 0;
  for (const cpu::WeightMatrix* m : parts) count += static_cast<std::size_t>(m->rows * m->cols);
  LLAISYS_ASSIGN_OR_RETURN(DeviceBuffer<bf16_t> buffer, DeviceBuffer<bf16_t>::allocate(count));
  int64_t row = 0;
  for (const cpu::WeightMatrix* m : parts) {
    LLAISYS_RETURN_IF_ERROR(upload_rows(*m, buffer.data(), row));
    row += m->rows;
  }
  return buffer;
}

// The f32 vectors concatenated (empty when the first is: a missing bias).
Result<DeviceBuffer<float>> upload_vectors(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> all;
  for (const std::vector<float>* v : parts) all.insert(all.end(), v->begin(), v->end());
  LLAISYS_ASSIGN_OR_RETURN(DeviceBuffer<float> buffer, DeviceBuffer<float>::allocate(all.size()));
  if (!all.empty()) {
    LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.data(), all.data(), all.size() * sizeof(float),
                                            cudaMemcpyHostToDevice));
  }
  return buffer;
}

struct Options {
  DType kv_dtype = DType::bf16;
};

Result<Options> parse_options(const std::string& text) {
  json::error_code ec;
  const json::value value = json::parse(text.empty() ? "{}" : text, ec);
  if (ec || !value.is_object()) {
    return make_error(ErrorCode::invalid_argument, "model options must be a JSON object, got '{}'", text);
  }
  Options options;
  if (const json::value* kv = value.as_object().if_contains("kv_dtype")) {
    LLAISYS_ASSIGN_OR_RETURN(options.kv_dtype, parse_kv_dtype_option(*kv));
  }
  return options;
}

}  // namespace

struct DeviceLayer {
  DeviceBuffer<float> input_norm, post_norm;
  DeviceBuffer<bf16_t> qkv, o, gate_up, down;  // qkv = [Wq; Wk; Wv], gate_up = [Wgate; Wup]
  DeviceBuffer<float> qkv_bias, o_bias, gate_up_bias, down_bias;  // empty without biases
};

struct CudaDecoderLM::Impl {
  DecoderConfig config;
  ModelInfo info;
  int device = 0;
  int num_sms = 1;
  cuda::Stream stream;
  cuda::CublasLt blas;
  cuda::CudaContext ctx;

  DeviceBuffer<bf16_t> embed;
  DeviceBuffer<bf16_t> lm_head;  // empty when tied to the embedding
  DeviceBuffer<float> final_norm;
  std::vector<DeviceLayer> layers;
  DeviceBuffer<float> rope_cos, rope_sin;  // [max_context, head_dim / 2]
  int64_t rope_positions = 0;

  DType kv_dtype = DType::bf16;
  KvCacheConfig kv_config;
  DeviceBuffer<std::byte> kv_pool;  // [layers][K, V][num_blocks, kv_heads, block_size, head_dim]

  // Per-batch state, grown to the largest batch seen.
  std::vector<int32_t> host_ints;
  cuda::PinnedBuffer<int32_t> staging;
  DeviceBuffer<int32_t> batch_ints;  // ids, positions, seq indices, output indices, block tables
  cuda::AttentionPlan plan;
  cuda::AttentionWorkspace attention;
  DeviceBuffer<float> x, qkv, gate_up, out_rows, out;
  DeviceBuffer<bf16_t> h, attn, act, out_h;

  int64_t q_dim() const { return int64_t{config.num_heads} * config.head_dim; }
  int64_t kv_dim() const { return int64_t{config.num_kv_heads} * config.head_dim; }
  std::size_t kv_elem_bytes() const { return kv_dtype == DType::bf16 ? sizeof(bf16_t) : sizeof(float); }
  std::size_t kv_half_bytes() const {
    return static_cast<std::size_t>(kv_config.num_blocks) * static_cast<std::size_t>(kv_config.block_size) *
           static_cast<std::size_t>(kv_dim()) * kv_elem_bytes();
  }
  cuda::DeviceKvLayer kv_layer(int32_t layer) const {
    std::byte* base = kv_pool.data() + 2 * static_cast<std::size_t>(layer) * kv_half_bytes();
    return {.k = base,
            .v = base + kv_half_bytes(),
            .dtype = kv_dtype,
            .num_blocks = kv_config.num_blocks,
            .block_size = kv_config.block_size,
            .num_kv_heads = config.num_kv_heads,
            .head_dim = config.head_dim};
  }

  Status load(const DecoderWeights& w);
  Status reserve(int64_t tokens, int64_t outputs, int64_t out_width, std::size_t ints);
  Status run_layer(int32_t index, const cuda::DeviceBatch& batch, int64_t t);
  Status forward(const ForwardBatch& batch, std::span<float> out);
};

Status CudaDecoderLM::Impl::load(const DecoderWeights& w) {
  const DecoderConfig& c = config;
  LLAISYS_ASSIGN_OR_RETURN(embed, upload_stacked({&w.embed}));
  if (!c.tie_word_embeddings) {
    LLAISYS_ASSIGN_OR_RETURN(lm_head, upload_stacked({&w.lm_head}));
  }
  LLAISYS_ASSIGN_OR_RETURN(final_norm, upload_vectors({&w.final_norm}));
  uint64_t bytes = bf16_bytes(c.vocab_size, c.hidden_size);  // the lm head
  for (const DecoderLayerWeights& lw : w.layers) {
    DeviceLayer d;
    LLAISYS_ASSIGN_OR_RETURN(d.input_norm, upload_vectors({&lw.input_norm}));
    LLAISYS_ASSIGN_OR_RETURN(d.post_norm, upload_vectors({&lw.post_norm}));
    LLAISYS_ASSIGN_OR_RETURN(d.qkv, upload_stacked({&lw.q, &lw.k, &lw.v}));
    LLAISYS_ASSIGN_OR_RETURN(d.o, upload_stacked({&lw.o}));
    LLAISYS_ASSIGN_OR_RETURN(d.gate_up, upload_stacked({&lw.gate, &lw.up}));
    LLAISYS_ASSIGN_OR_RETURN(d.down, upload_stacked({&lw.down}));
    LLAISYS_ASSIGN_OR_RETURN(d.qkv_bias, upload_vectors({&lw.q_bias, &lw.k_bias, &lw.v_bias}));
    LLAISYS_ASSIGN_OR_RETURN(d.o_bias, upload_vectors({&lw.o_bias}));
    LLAISYS_ASSIGN_OR_RETURN(d.gate_up_bias, upload_vectors({&lw.gate_bias, &lw.up_bias}));
    LLAISYS_ASSIGN_OR_RETURN(d.down_bias, upload_vectors({&lw.down_bias}));
    bytes += (d.qkv.size() + d.o.size() + d.gate_up.size() + d.down.size()) * sizeof(bf16_t);
    layers.push_back(std::move(d));
  }
  info.weight_bytes = bytes;

  // cos/sin for every position of the context, once (every rope kind is in the table).
  rope_positions = std::max<int64_t>(1, c.max_context);
  const RopeFrequencies freq = make_rope_frequencies(c.head_dim, c.rope_theta, c.rope_scaling);
  std::vector<int32_t> positions(static_cast<std::size_t>(rope_positions));
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int32_t>(i);
  const std::size_t table = positions.size() * static_cast<std::size_t>(c.head_dim / 2);
  std::vector<float> cos(table), sin(table);
  fill_rope_tables(freq, positions.data(), rope_positions, cos.data(), sin.data());
  LLAISYS_ASSIGN_OR_RETURN(rope_cos, upload_vectors({&cos}));
  LLAISYS_ASSIGN_OR_RETURN(rope_sin, upload_vectors({&sin}));
  return Status();
}

Status CudaDecoderLM::Impl::reserve(int64_t t, int64_t o, int64_t out_width, std::size_t ints) {
  const auto n = [](int64_t a, int64_t b) { return static_cast<std::size_t>(a * b); };
  const int64_t hidden = config.hidden_size;
  const int64_t inter = config.intermediate_size;
  LLAISYS_RETURN_IF_ERROR(x.reserve(n(t, hidden)));
  LLAISYS_RETURN_IF_ERROR(h.reserve(n(t, hidden)));
  LLAISYS_RETURN_IF_ERROR(qkv.reserve(n(t, q_dim() + 2 * kv_dim())));
  LLAISYS_RETURN_IF_ERROR(attn.reserve(n(t, q_dim())));
  LLAISYS_RETURN_IF_ERROR(gate_up.reserve(n(t, 2 * inter)));
  LLAISYS_RETURN_IF_ERROR(act.reserve(n(t, inter)));
  LLAISYS_RETURN_IF_ERROR(out_rows.reserve(n(o, hidden)));
  LLAISYS_RETURN_IF_ERROR(out_h.reserve(n(o, hidden)));
  LLAISYS_RETURN_IF_ERROR(out.reserve(n(o, out_width)));
  LLAISYS_RETURN_IF_ERROR(batch_ints.reserve(ints));
  if (staging.size() < ints) {
    staging.reset();
    LLAISYS_ASSIGN_OR_RETURN(staging, cuda::PinnedBuffer<int32_t>::allocate(std::max<std::size_t>(ints, 4096)));
  }
  return Status();
}

Status CudaDecoderLM::Impl::run_layer(int32_t index, const cuda::DeviceBatch& batch, int64_t t) {
  const DeviceLayer& w = layers[static_cast<std::size_t>(index)];
  const int64_t hidden = config.hidden_size;
  const int64_t hd = config.head_dim;
  const int64_t q = q_dim();
  const int64_t kv = kv_dim();
  const int64_t qkv_width = q + 2 * kv;
  const int64_t inter = config.intermediate_size;
  const cuda::DeviceKvLayer layer = kv_layer(index);
  auto bias = [](const DeviceBuffer<float>& b) -> const float* { return b.size() == 0 ? nullptr : b.data(); };
  auto matrix = [](const DeviceBuffer<bf16_t>& m, int64_t rows, int64_t cols) {
    return cuda::DeviceMatrix{.data = m.data(), .rows = rows, .cols = cols};
  };

  // Attention block.
  LLAISYS_RETURN_IF_ERROR(cuda::add_rms_norm(ctx, x.data(), hidden, nullptr, 0, t, hidden, w.input_norm.data(),
                                             config.rms_norm_eps, h.data(), hidden));
  LLAISYS_RETURN_IF_ERROR(cuda::linear(ctx, h.data(), hidden, t, hidden, matrix(w.qkv, qkv_width, hidden),
                                       bias(w.qkv_bias), qkv.data(), qkv_width, false));
  float* q_rows = qkv.data();
  LLAISYS_RETURN_IF_ERROR(cuda::rope_kv_write(ctx, layer, batch, q_rows, qkv_width, config.num_heads, q_rows + q,
                                              qkv_width, q_rows + q + kv, qkv_width, rope_cos.data(), rope_sin.data(),
                                              rope_positions));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  LLAISYS_RETURN_IF_ERROR(cuda::paged_attention(ctx, layer, batch, plan, attention, q_rows, qkv_width,
                                                config.num_heads, scale, attn.data(), q));
  LLAISYS_RETURN_IF_ERROR(
      cuda::linear(ctx, attn.data(), q, t, q, matrix(w.o, hidden, q), bias(w.o_bias), x.data(), hidden, true));

  // MLP block.
  LLAISYS_RETURN_IF_ERROR(cuda::add_rms_norm(ctx, x.data(), hidden, nullptr, 0, t, hidden, w.post_norm.data(),
                                             config.rms_norm_eps, h.data(), hidden));
  LLAISYS_RETURN_IF_ERROR(cuda::linear(ctx, h.data(), hidden, t, hidden, matrix(w.gate_up, 2 * inter, hidden),
                                       bias(w.gate_up_bias), gate_up.data(), 2 * inter, false));
  LLAISYS_RETURN_IF_ERROR(
      cuda::swiglu(ctx, gate_up.data(), 2 * inter, gate_up.data() + inter, 2 * inter, t, inter, act.data(), inter));
  return cuda::linear(ctx, act.data(), inter, t, inter, matrix(w.down, hidden, inter), bias(w.down_bias), x.data(),
                      hidden, true);
}

Status CudaDecoderLM::Impl::forward(const ForwardBatch& batch, std::span<float> result) {
  if (kv_pool.size() == 0) return Status(ErrorCode::invalid_argument, "forward before init_kv_cache");
  const int64_t t = batch.num_tokens();
  const int64_t o = batch.num_outputs();
  if (t == 0) return Status();
  const int64_t hidden = config.hidden_size;
  const int64_t out_width = info.output_width(batch.output_kind);
  if (result.size() != static_cast<std::size_t>(o * out_width)) {
    return make_error(ErrorCode::invalid_argument, "forward: output of {} floats for {} rows of {}", result.size(), o,
                      out_width);
  }
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));

  // The batch's integer arrays, packed: ids, positions, seq indices, output indices, then the block
  // tables as one dense [num_seqs, max_blocks] array. One pinned staging buffer, one upload.
  int64_t max_blocks = 1;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) max_blocks = std::max<int64_t>(max_blocks, batch.block_table_lens[static_cast<std::size_t>(s)]);
  const std::size_t ints = static_cast<std::size_t>(3 * t + o + batch.num_seqs() * max_blocks);
  LLAISYS_RETURN_IF_ERROR(reserve(t, o, out_width, ints));
  int32_t* packed = staging.data();
  std::memcpy(packed, batch.token_ids.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  std::memcpy(packed + t, batch.positions.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  std::memcpy(packed + 2 * t, batch.seq_indices.data(), static_cast<std::size_t>(t) * sizeof(int32_t));
  if (o > 0) std::memcpy(packed + 3 * t, batch.output_token_indices.data(), static_cast<std::size_t>(o) * sizeof(int32_t));
  int32_t* tables = packed + 3 * t + o;
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const std::span<const BlockId> table = batch.block_table(s);
    int32_t* row = tables + static_cast<std::size_t>(s) * static_cast<std::size_t>(max_blocks);
    std::copy(table.begin(), table.end(), row);
    std::fill(row + table.size(), row + max_blocks, 0);
  }
  LLAISYS_RETURN_IF_ERROR(batch_ints.upload(packed, ints, ctx.stream));
  const int32_t* d = batch_ints.data();
  const cuda::DeviceBatch device_batch{.num_tokens = t,
                                       .positions = d + t,
                                       .seq_indices = d + 2 * t,
                                       .block_tables = d + 3 * t + o,
                                       .max_blocks_per_seq = max_blocks};
  LLAISYS_ASSIGN_OR_RETURN(plan, cuda::plan_attention(batch.positions, batch.seq_indices, config.num_heads,
                                                      config.num_kv_heads, kv_config.block_size, num_sms));
  LLAISYS_RETURN_IF_ERROR(attention.prepare(plan, config.num_heads, config.head_dim, ctx.stream));

  const cuda::DeviceMatrix embed_matrix{.data = embed.data(), .rows = config.vocab_size, .cols = hidden};
  LLAISYS_RETURN_IF_ERROR(cuda::embedding(ctx, embed_matrix, d, t, x.data(), hidden));
  for (int32_t layer = 0; layer < config.num_layers; ++layer) LLAISYS_RETURN_IF_ERROR(run_layer(layer, device_batch, t));

  if (o > 0) {
    LLAISYS_RETURN_IF_ERROR(cuda::gather_rows(ctx, x.data(), hidden, t, d + 3 * t, o, hidden, out_rows.data(), hidden));
    if (batch.output_kind == OutputKind::hidden) {
      LLAISYS_RETURN_IF_ERROR(cuda::add_rms_norm(ctx, out_rows.data(), hidden, nullptr, 0, o, hidden,
                                                 final_norm.data(), config.rms_norm_eps, out.data(), hidden));
    } else {
      LLAISYS_RETURN_IF_ERROR(cuda::add_rms_norm(ctx, out_rows.data(), hidden, nullptr, 0, o, hidden,
                                                 final_norm.data(), config.rms_norm_eps, out_h.data(), hidden));
      const cuda::DeviceMatrix head{.data = lm_head.size() ? lm_head.data() : embed.data(),
                                    .rows = config.vocab_size,
                                    .cols = hidden};
      LLAISYS_RETURN_IF_ERROR(cuda::linear(ctx, out_h.data(), hidden, o, hidden, head, nullptr, out.data(),
                                           config.vocab_size, false));
    }
    LLAISYS_RETURN_IF_ERROR(out.download(result.data(), result.size(), ctx.stream));
  }
  // Kernel faults surface here; the pinned staging buffer and the plan are free again after it.
  return stream.synchronize();
}

Result<std::unique_ptr<CudaDecoderLM>> CudaDecoderLM::open(const ModelCreateParams& params,
                                                           const DecoderVariant& variant, int device) {
  const int devices = cuda::device_count();
  if (devices == 0) {
    return make_error(ErrorCode::unsupported, "{}: device cuda:{} requested, but no CUDA device is visible",
                      variant.architecture, device);
  }
  if (device < 0 || device >= devices) {
    return make_error(ErrorCode::unsupported, "{}: device cuda:{} requested; {} CUDA device(s) visible",
                      variant.architecture, device, devices);
  }
  LLAISYS_ASSIGN_OR_RETURN(Options options, parse_options(params.options_json));
  LLAISYS_ASSIGN_OR_RETURN(HfTransformerConfig hf, load_hf_config(params.model_dir));
  LLAISYS_ASSIGN_OR_RETURN(DecoderConfig config, make_decoder_config(hf, variant));
  if (config.head_dim % 32 != 0 || config.head_dim > 256 || config.num_heads % config.num_kv_heads != 0 ||
      config.num_heads / config.num_kv_heads > 16) {
    return make_error(ErrorCode::unsupported,
                      "{}: the CUDA attention needs head_dim a multiple of 32 up to 256 and at most 16 query heads "
                      "per kv head (head_dim {}, {} heads, {} kv heads)",
                      variant.architecture, config.head_dim, config.num_heads, config.num_kv_heads);
  }

  auto impl = std::make_unique<Impl>();
  impl->device = device;
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&impl->num_sms, cudaDevAttrMultiProcessorCount, device));
  LLAISYS_ASSIGN_OR_RETURN(impl->stream, cuda::Stream::create());
  LLAISYS_ASSIGN_OR_RETURN(impl->blas, cuda::CublasLt::create());
  impl->ctx = cuda::CudaContext{.stream = impl->stream.get(), .blas = &impl->blas};
  impl->kv_dtype = options.kv_dtype;
  {
    // The host weights (mapped files) are only needed until they are on the device.
    LLAISYS_ASSIGN_OR_RETURN(WeightStore store, WeightStore::open(params.model_dir));
    auto weights = load_decoder_weights(store, config);
    if (!weights.ok()) return std::move(weights).take_status().with_context(params.model_dir.string());
    impl->config = config;
    LLAISYS_RETURN_IF_ERROR(impl->load(weights.value()).with_context("uploading the weights to cuda"));
  }
  const uint64_t kv_elem = impl->kv_elem_bytes();
  impl->info = ModelInfo{.architecture = variant.architecture,
                         .vocab_size = config.vocab_size,
                         .hidden_size = config.hidden_size,
                         .num_layers = config.num_layers,
                         .num_kv_heads = config.num_kv_heads,
                         .head_dim = config.head_dim,
                         .max_context = config.max_context,
                         .bos_token_id = config.bos_token_id,
                         .eos_token_ids = config.eos_token_ids,
                         .kv_dtype = impl->kv_dtype,
                         .weight_bytes = impl->info.weight_bytes,
                         .kv_bytes_per_token = 2ull * static_cast<uint64_t>(config.num_layers) *
                                               static_cast<uint64_t>(impl->kv_dim()) * kv_elem};
  cudaDeviceProp prop{};
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  log::info("{}: {} layers, hidden {}, on cuda:{} ({}, {} SMs), {:.1f} MB of bf16 weights per decode step, {} KV cache",
            impl->info.architecture, config.num_layers, config.hidden_size, device, prop.name, impl->num_sms,
            static_cast<double>(impl->info.weight_bytes) / 1e6, to_string(impl->kv_dtype));
  return std::make_unique<CudaDecoderLM>(std::move(impl));
}

CudaDecoderLM::CudaDecoderLM(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaDecoderLM::~CudaDecoderLM() {
  if (impl_) (void)cudaSetDevice(impl_->device);
}

const ModelInfo& CudaDecoderLM::info() const { return impl_->info; }

Status CudaDecoderLM::init_kv_cache(const KvCacheConfig& config) {
  Impl& m = *impl_;
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.device));
  const uint64_t per_block = m.info.kv_bytes_per_token * static_cast<uint64_t>(config.block_size);
  uint64_t total = 0;
  if (config.num_blocks <= 0 || config.block_size <= 0 ||
      __builtin_mul_overflow(per_block, static_cast<uint64_t>(config.num_blocks), &total)) {
    return make_error(ErrorCode::invalid_argument, "KV cache of {} blocks x {} tokens", config.num_blocks,
                      config.block_size);
  }
  m.kv_pool.reset();  // free the old pool first
  m.kv_config = KvCacheConfig{};
  std::size_t free_bytes = 0, total_bytes = 0;
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (total > free_bytes) {
    return make_error(ErrorCode::out_of_memory,
                      "KV cache of {} blocks x {} tokens needs {} MiB; cuda:{} has {} MiB free ({} blocks fit)",
                      config.num_blocks, config.block_size, total >> 20, m.device, free_bytes >> 20,
                      free_bytes / std::max<uint64_t>(per_block, 1));
  }
  LLAISYS_ASSIGN_OR_RETURN(m.kv_pool, DeviceBuffer<std::byte>::allocate(static_cast<std::size_t>(total)));
  m.kv_config = config;
  return Status();
}

Status CudaDecoderLM::forward(const ForwardBatch& batch, std::span<float> out) {
  Status status = impl_->forward(batch, out);
  // A failed pass may have left copies from the pinned staging buffer in flight: drain them.
  if (!status.ok()) (void)cudaStreamSynchronize(impl_->ctx.stream);
  return status;
}

Status CudaDecoderLM::copy_blocks(std::span<const BlockCopy> copies) {
  Impl& m = *impl_;
  if (m.kv_pool.size() == 0) return Status(ErrorCode::invalid_argument, "copy_blocks before init_kv_cache");
  LLAISYS_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.device));
  const std::size_t block_bytes = m.kv_half_bytes() / static_cast<std::size_t>(m.kv_config.num_blocks);
  for (const BlockCopy& copy : copies) {
    for (std::size_t half = 0; half < 2 * static_cast<std::size_t>(m.config.num_layers); ++half) {
      std::byte* pool = m.kv_pool.data() + half * m.kv_half_bytes();
      LLAISYS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pool + static_cast<std::size_t>(copy.dst) * block_bytes,
                                                   pool + static_cast<std::size_t>(copy.src) * block_bytes,
                                                   block_bytes, cudaMemcpyDeviceToDevice, m.ctx.stream));
    }
  }
  return m.stream.synchronize();
}

int32_t cuda_kv_blocks_that_fit(const ModelInfo& info, int32_t block_size, double fraction) {
  if (cuda::device_count() == 0 || block_size <= 0 || info.kv_bytes_per_token == 0) return 0;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  const double usable = static_cast<double>(free_bytes) * std::clamp(fraction, 0.0, 1.0);
  const double blocks = usable / (static_cast<double>(info.kv_bytes_per_token) * block_size);
  return static_cast<int32_t>(std::min(blocks, 2147483647.0));
}

}  // namespace llaisys::decoder
