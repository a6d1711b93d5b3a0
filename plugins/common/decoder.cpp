#include "decoder.hpp"

#include <chrono>
#include <cmath>

#include "llaisys/core/log.hpp"
#include "llaisys/ops/activation.hpp"
#include "llaisys/ops/attention.hpp"
#include "llaisys/ops/elementwise.hpp"
#include "llaisys/ops/embedding.hpp"
#include "llaisys/ops/linear.hpp"
#include "llaisys/ops/rms_norm.hpp"
#include "llaisys/ops/rope_kv.hpp"

namespace llaisys::decoder {
namespace {

// A [rows, cols] view of rows `stride` elements apart.
TensorView rows_view(void* data, DType dtype, int64_t rows, int64_t cols, int64_t stride, Device device) {
  return TensorView(data, dtype, Shape{rows, cols}, Shape{stride, 1}, device);
}

// A [tokens, heads, head_dim] view of heads inside rows `stride` elements apart.
TensorView heads_view(float* data, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, Device device) {
  return TensorView(data, DType::f32, Shape{tokens, heads, head_dim}, Shape{stride, head_dim, 1}, device);
}

using Clock = std::chrono::steady_clock;
uint64_t nanoseconds(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// Carves consecutive, 64-byte aligned regions out of the workspace.
class Carver {
 public:
  explicit Carver(std::byte* base) : next_(base) {}
  void* take(std::size_t bytes) {
    std::byte* p = next_;
    next_ += (bytes + 63) / 64 * 64;
    return p;
  }
  std::size_t used(const std::byte* base) const { return static_cast<std::size_t>(next_ - base); }

 private:
  std::byte* next_;
};

}  // namespace

// Views of one batch's activations inside the workspace.
struct Decoder::Activations {
  int64_t num_tokens = 0;
  int64_t num_outputs = 0;
  TensorView x;        // [T, hidden] f32: the residual stream
  TensorView h;        // [T, hidden] act: a block's normed input
  TensorView qkv;      // [T, q + 2 kv] f32
  TensorView q, k, v;  // [T, heads, head_dim] views of qkv
  TensorView attn;     // [T, q] act
  TensorView branch;   // [T, hidden] f32: a block's output before its post-norm (Gemma 2)
  TensorView gate_up;  // [T, 2 intermediate] f32
  TensorView gate, up; // [T, intermediate] views of gate_up
  TensorView act;      // [T, intermediate] act: the gate itself when act is f32
  TensorView out_rows; // [O, hidden] f32
  TensorView out_h;    // [O, hidden] act: out_rows itself when act is f32
  TensorView out;      // [O, width] f32 on the device: rows to sample, or to copy back (CUDA)
};

Result<std::unique_ptr<Decoder>> Decoder::open(const ModelCreateParams& params, DecoderSpec spec) {
  LLAISYS_ASSIGN_OR_RETURN(DecoderOptions options, parse_decoder_options(params));
  std::unique_ptr<ops::DeviceContext> ctx;
  if (options.device.is_cpu()) {
    LLAISYS_ASSIGN_OR_RETURN(ctx, ops::make_cpu_context({.num_threads = params.num_threads,
                                                         .isa = options.isa,
                                                         .matmul = options.matmul}));
  } else {
    ops::CudaOptions cuda_options{.device = options.device.index};
    if (options.cuda_graphs) cuda_options.graphs = *options.cuda_graphs;  // else the ops' default ("on")
    auto cuda = ops::make_cuda_context(cuda_options);
    if (!cuda.ok()) return std::move(cuda).take_status().with_context(spec.architecture);
    ctx = std::move(cuda).value();
  }
  // A CUDA model reads the files once to upload them; a CPU model keeps them (mapped or in memory).
  // Quantizing on load reads each matrix once: mapping the files costs no private copy of them.
  const WeightLoading loading = !ctx->device().is_cpu() ? WeightLoading::map
                                : options.weights_dtype && options.weights == WeightLoading::automatic
                                    ? WeightLoading::map
                                    : options.weights;
  LLAISYS_ASSIGN_OR_RETURN(WeightStore opened, WeightStore::open(params.model_dir, loading));
  auto store = std::make_shared<const WeightStore>(std::move(opened));
  auto weights = load_decoder_weights(*ctx, store, spec, options.weights_dtype);
  if (!weights.ok()) return std::move(weights).take_status().with_context(params.model_dir.string());
  const ops::RopeFrequencies frequencies = make_rope_frequencies(spec.head_dim, spec.rope);
  LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<ops::Rope> rope, ctx->make_rope(frequencies, spec.max_context));
  const DType kv_dtype = options.kv_dtype.value_or(ctx->default_kv_dtype());
  const char* loaded = !ctx->device().is_cpu()                        ? "uploaded"
                       : store->loading() == WeightLoading::memory ? "read into huge-page memory"
                                                                   : "mapped";
  auto decoder = std::make_unique<Decoder>(std::move(spec), std::move(ctx), std::move(weights).value(), std::move(rope),
                                           kv_dtype);
  const ModelInfo& info = decoder->info();
  log::info("{}: {} layers, hidden {}, {}, KV cache {}, {:.1f} MB of weights per decode step ({})", info.architecture,
            info.num_layers, info.hidden_size, decoder->ctx_->describe(), to_string(kv_dtype),
            static_cast<double>(info.weight_bytes) / 1e6, loaded);
  return decoder;
}

Decoder::Decoder(DecoderSpec spec, std::unique_ptr<ops::DeviceContext> ctx, DecoderWeights weights,
                 std::unique_ptr<ops::Rope> rope, DType kv_dtype)
    : spec_(std::move(spec)), ctx_(std::move(ctx)), weights_(std::move(weights)), rope_(std::move(rope)) {
  kv_shape_ = ops::KvShape{.num_layers = spec_.num_layers,
                           .num_kv_heads = spec_.num_kv_heads,
                           .head_dim = spec_.head_dim,
                           .dtype = kv_dtype};
  info_ = ModelInfo{.architecture = spec_.architecture,
                    .vocab_size = spec_.vocab_size,
                    .hidden_size = spec_.hidden_size,
                    .num_layers = spec_.num_layers,
                    .num_kv_heads = spec_.num_kv_heads,
                    .head_dim = spec_.head_dim,
                    .max_context = spec_.max_context,
                    .bos_token_id = spec_.bos_token_id,
                    .eos_token_ids = spec_.eos_token_ids,
                    .kv_dtype = kv_dtype,
                    .weight_bytes = weights_.bytes_per_decode_step,
                    .kv_bytes_per_token = kv_shape_.bytes_per_token(),
                    .sliding_window = spec_.kv_window()};
}

Status Decoder::init_kv_cache(const KvCacheConfig& config) {
  kv_ = ops::KvCache();  // free the old pool first
  LLAISYS_ASSIGN_OR_RETURN(kv_, ops::KvCache::create(*ctx_, kv_shape_, config));
  if (!sampler_) {
    LLAISYS_ASSIGN_OR_RETURN(sampler_, ops::make_sampler(*ctx_, spec_.vocab_size));
  }
  return sampler_->init_slots(config.num_seq_slots);
}

Status Decoder::copy_blocks(std::span<const BlockCopy> copies) { return kv_.copy_blocks(*ctx_, copies); }

// out_width: the columns of a.out (0: the rows go straight into the caller's memory).
Status Decoder::reserve(int64_t t, int64_t o, int64_t out_width, Activations& a) {
  const Device device = ctx_->device();
  const DType act = ctx_->activation_dtype();
  const bool act_is_f32 = act == DType::f32;
  const std::size_t act_size = dtype_size(act);
  const int64_t hidden = spec_.hidden_size;
  const int64_t hd = spec_.head_dim;
  const int64_t q_dim = int64_t{spec_.num_heads} * hd;
  const int64_t kv_dim = int64_t{spec_.num_kv_heads} * hd;
  const int64_t qkv_width = q_dim + 2 * kv_dim;
  const int64_t inter = spec_.intermediate_size;
  const bool branch = spec_.post_attention_norm || spec_.post_ffn_norm;
  auto bytes = [](int64_t rows, int64_t cols, std::size_t size) {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * size;
  };
  // Sizes in the order carved below (each rounded up to 64 bytes).
  const std::size_t sizes[] = {bytes(t, hidden, 4),          bytes(t, hidden, act_size),
                               bytes(t, qkv_width, 4),       bytes(t, q_dim, act_size),
                               branch ? bytes(t, hidden, 4) : 0, bytes(t, 2 * inter, 4),
                               act_is_f32 ? 0 : bytes(t, inter, act_size), bytes(o, hidden, 4),
                               act_is_f32 ? 0 : bytes(o, hidden, act_size), bytes(o, out_width, 4)};
  std::size_t total = 0;
  for (std::size_t size : sizes) total += (size + 63) / 64 * 64;
  if (workspace_.bytes() < total) {
    workspace_ = ops::Buffer();
    LLAISYS_ASSIGN_OR_RETURN(workspace_, ctx_->allocate(total));
  }
  Carver carve(static_cast<std::byte*>(workspace_.data()));
  a.num_tokens = t;
  a.num_outputs = o;
  a.x = rows_view(carve.take(sizes[0]), DType::f32, t, hidden, hidden, device);
  a.h = rows_view(carve.take(sizes[1]), act, t, hidden, hidden, device);
  auto* qkv = static_cast<float*>(carve.take(sizes[2]));
  a.qkv = rows_view(qkv, DType::f32, t, qkv_width, qkv_width, device);
  a.q = heads_view(qkv, t, spec_.num_heads, hd, qkv_width, device);
  a.k = heads_view(qkv + q_dim, t, spec_.num_kv_heads, hd, qkv_width, device);
  a.v = heads_view(qkv + q_dim + kv_dim, t, spec_.num_kv_heads, hd, qkv_width, device);
  a.attn = rows_view(carve.take(sizes[3]), act, t, q_dim, q_dim, device);
  if (branch) a.branch = rows_view(carve.take(sizes[4]), DType::f32, t, hidden, hidden, device);
  auto* gate_up = static_cast<float*>(carve.take(sizes[5]));
  a.gate_up = rows_view(gate_up, DType::f32, t, 2 * inter, 2 * inter, device);
  a.gate = rows_view(gate_up, DType::f32, t, inter, 2 * inter, device);
  a.up = rows_view(gate_up + inter, DType::f32, t, inter, 2 * inter, device);
  a.act = act_is_f32 ? a.gate : rows_view(carve.take(sizes[6]), act, t, inter, inter, device);
  a.out_rows = rows_view(carve.take(sizes[7]), DType::f32, o, hidden, hidden, device);
  a.out_h = act_is_f32 ? a.out_rows : rows_view(carve.take(sizes[8]), act, o, hidden, hidden, device);
  if (out_width > 0) a.out = rows_view(carve.take(sizes[9]), DType::f32, o, out_width, out_width, device);
  return Status();
}

Status Decoder::run_layer(int32_t index, const ops::Pass& pass, const Activations& a) {
  ops::DeviceContext& ctx = *ctx_;
  const LayerWeights& w = weights_.layers[static_cast<std::size_t>(index)];
  const ops::KvLayer kv = kv_.layer(index);
  const float eps = spec_.norm_eps;

  // Attention block.
  LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.x, w.attn_norm, eps, a.h));
  LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.h, w.qkv, a.qkv));
  if (spec_.qk_norm) {
    LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.q, w.q_norm, eps, a.q));
    LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.k, w.k_norm, eps, a.k));
  }
  LLAISYS_RETURN_IF_ERROR(ops::rope_write_kv(ctx, pass, kv, a.q, a.k, a.v));
  const float scale =
      spec_.attention_scale > 0 ? spec_.attention_scale : 1.0f / std::sqrt(static_cast<float>(spec_.head_dim));
  const ops::AttentionParams params{.scale = scale, .softcap = spec_.attention_softcap, .window = spec_.window_of(index)};
  LLAISYS_RETURN_IF_ERROR(ops::attention(ctx, pass, kv, a.q, params, a.attn));
  if (spec_.post_attention_norm) {
    LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.attn, w.o, a.branch));
    LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.branch, w.post_attn_norm, eps, a.branch));
    LLAISYS_RETURN_IF_ERROR(ops::add(ctx, a.x, a.branch));
  } else {
    LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.attn, w.o, a.x, /*accumulate=*/true));
  }

  // MLP block.
  LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.x, w.ffn_norm, eps, a.h));
  LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.h, w.gate_up, a.gate_up));
  LLAISYS_RETURN_IF_ERROR(ops::gated_activation(ctx, spec_.activation, a.gate, a.up, a.act));
  if (spec_.post_ffn_norm) {
    LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.act, w.down, a.branch));
    LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.branch, w.post_ffn_norm, eps, a.branch));
    return ops::add(ctx, a.x, a.branch);
  }
  return ops::linear(ctx, a.act, w.down, a.x, /*accumulate=*/true);
}

Status Decoder::run_step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
  const auto start = Clock::now();
  ops::DeviceContext& ctx = *ctx_;
  const int64_t t = batch.num_tokens();
  const int64_t o = batch.num_outputs();
  if (t == 0) return Status();
  const int64_t width = info_.output_width(batch.output_kind);
  const bool sample = !sampling.empty();
  if (!sample && out.rows.size() != static_cast<std::size_t>(o * width)) {
    return make_error(ErrorCode::invalid_argument, "step: output of {} floats for {} rows of {}", out.rows.size(), o,
                      width);
  }
  // Rows to sample stay on the device; unsampled rows go straight into the caller's memory on the CPU,
  // through a device buffer elsewhere.
  const Device device = ctx.device();
  const bool direct = !sample && device.is_cpu();
  Activations a;
  LLAISYS_RETURN_IF_ERROR(reserve(t, o, direct ? 0 : width, a));
  const ops::PassShape shape{.num_q_heads = spec_.num_heads,
                             .num_kv_heads = spec_.num_kv_heads,
                             .head_dim = spec_.head_dim,
                             .block_size = kv_.config().block_size,
                             .rope = rope_.get(),
                             .window = spec_.kv_window()};
  LLAISYS_ASSIGN_OR_RETURN(const ops::Pass* pass, ctx.begin_pass(batch, shape));

  // The forward, from the token ids to the output rows: only ops that enqueue work, so that a device
  // may record it once per shape and replay it (CUDA graphs; DeviceContext::run_forward).
  const TensorView result = direct ? rows_view(out.rows.data(), DType::f32, o, width, width, device) : a.out;
  const auto forward = [&]() -> Status {
    LLAISYS_RETURN_IF_ERROR(ops::embedding(ctx, *pass, weights_.embed, a.x));
    if (spec_.embedding_scale != 1.0f) LLAISYS_RETURN_IF_ERROR(ops::scale(ctx, a.x, spec_.embedding_scale));
    for (int32_t layer = 0; layer < spec_.num_layers; ++layer) LLAISYS_RETURN_IF_ERROR(run_layer(layer, *pass, a));
    if (o == 0) return Status();
    LLAISYS_RETURN_IF_ERROR(ops::gather_rows(ctx, *pass, a.x, a.out_rows));
    if (batch.output_kind == OutputKind::hidden) {
      return ops::rms_norm(ctx, a.out_rows, weights_.final_norm, spec_.norm_eps, result);
    }
    LLAISYS_RETURN_IF_ERROR(ops::rms_norm(ctx, a.out_rows, weights_.final_norm, spec_.norm_eps, a.out_h));
    LLAISYS_RETURN_IF_ERROR(ops::linear(ctx, a.out_h, weights_.lm_head, result));
    if (spec_.final_softcap > 0) return ops::softcap(ctx, result, spec_.final_softcap);
    return Status();
  };
  const ops::ForwardKey key{.activations = workspace_.data(),
                            .kv_cache = kv_.layer(0).k,
                            .num_outputs = o,
                            .output_width = width,
                            .output_kind = static_cast<int>(batch.output_kind)};
  LLAISYS_RETURN_IF_ERROR(ctx.run_forward(key, forward));
  if (o == 0) {
    LLAISYS_RETURN_IF_ERROR(ctx.synchronize());
    if (out.timings != nullptr) *out.timings = StepTimings{.forward_ns = nanoseconds(Clock::now() - start)};
    return Status();
  }
  if (!sample) {
    if (!direct) LLAISYS_RETURN_IF_ERROR(ctx.copy_to_host(out.rows.data(), result.data(), out.rows.size_bytes()));
    if (out.timings != nullptr) *out.timings = StepTimings{.forward_ns = nanoseconds(Clock::now() - start)};
    return Status();
  }
  if (out.wait_for_masks != nullptr) LLAISYS_RETURN_IF_ERROR((*out.wait_for_masks)());
  const auto sampling_start = Clock::now();
  LLAISYS_RETURN_IF_ERROR(sampler_->sample(result, sampling, out));
  if (out.timings != nullptr) {
    out.timings->forward_ns = nanoseconds(sampling_start - start);
    out.timings->sample_ns = nanoseconds(Clock::now() - sampling_start);
  }
  return Status();
}

Status Decoder::step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
  if (kv_.empty()) return Status(ErrorCode::invalid_argument, "step before init_kv_cache");
  Status status = run_step(batch, sampling, out);
  // A failed pass may leave work in flight (copies from staging buffers on CUDA): drain it.
  if (!status.ok()) (void)ctx_->synchronize();
  return status;
}

}  // namespace llaisys::decoder
