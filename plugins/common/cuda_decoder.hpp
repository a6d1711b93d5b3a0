#pragma once
// CudaDecoderLM: the forward pass of the shared Llama-family decoder (decoder_lm.hpp) on a CUDA
// device, over the kernels of kernels/cuda (docs/CUDA.md).
//
// Chosen by the model option {"device": "cuda"} (or "cuda:N"), or by ModelCreateParams::device
// being a CUDA device. Same config mapping, tensor names and Model contract as the CPU decoder:
//   x = embed(ids)                                          (f32 residual stream)
//   per layer: h = rms_norm(x) (bf16); qkv = h [Wq;Wk;Wv]^T + b (one GEMM, f32);
//              rope(q, k) fused with the write of k, v into their paged slots;
//              attn = paged_attention(q, cache) (bf16); x += attn Wo^T (+ b)   (beta = 1 GEMM)
//              h = rms_norm(x); gu = h [Wgate;Wup]^T (+ b) (one GEMM); a = swiglu(gu) (bf16);
//              x += a Wdown^T (+ b)
//   output rows: gathered, rms_norm -> hidden states, or bf16 -> lm head GEMM -> logits.
// Weights live on the device in bf16 (f16/f32 checkpoints are rounded once at load; the host
// mapping is released after the upload). The KV cache is bf16 by default ({"kv_dtype": "f32"}
// keeps the CPU's f32 cache); init_kv_cache refuses a pool that does not fit the device's free
// memory, naming how many blocks would (cuda_kv_blocks_that_fit sizes a pool from free memory).
//
// Not on the device yet: sampling stays on the host (the Model API returns logits; the device
// sampler of kernels/cuda/sampling.hpp needs an API that returns token ids), and decode steps are
// not captured in CUDA graphs (docs/CUDA.md).
//
// This header has no CUDA include: the plugins include it whether or not the build has CUDA; a
// build without CUDA compiles cuda_decoder_stub.cpp, whose open() says so.

#include <memory>
#include <optional>
#include <span>

#include "decoder_weights.hpp"
#include "llaisys/model/model.hpp"

namespace llaisys::decoder {

// The CUDA device the params ask for: options_json's "device" ("cpu", "cuda", "cuda:N"), else
// params.device; nullopt for the CPU. invalid_argument for a malformed "device" value.
Result<std::optional<int>> requested_cuda_device(const ModelCreateParams& params);

class CudaDecoderLM {
 public:
  // unsupported when the build has no CUDA, when no device is visible or when `device` is out of range.
  static Result<std::unique_ptr<CudaDecoderLM>> open(const ModelCreateParams& params, const DecoderVariant& variant,
                                                     int device);
  ~CudaDecoderLM();
  CudaDecoderLM(const CudaDecoderLM&) = delete;
  CudaDecoderLM& operator=(const CudaDecoderLM&) = delete;

  const ModelInfo& info() const;
  Status init_kv_cache(const KvCacheConfig& config);
  Status forward(const ForwardBatch& batch, std::span<float> out);
  Status copy_blocks(std::span<const BlockCopy> copies);

  struct Impl;
  explicit CudaDecoderLM(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

static_assert(Model<CudaDecoderLM>);

// KV blocks of `block_size` tokens that fit in `fraction` of the current device's free memory for a
// model with `info` (0 without CUDA or a device). What an engine on this device should pass as
// num_kv_blocks after opening the model (its weights are then already resident).
int32_t cuda_kv_blocks_that_fit(const ModelInfo& info, int32_t block_size, double fraction);

}  // namespace llaisys::decoder
