#pragma once
// Weights on a device: typed tensors, prepared once at load in the form the device's kernels read.
//
// A CPU model keeps its matrices where they are (views into the mapped or loaded safetensors or GGUF
// files, bf16/f16/f32 or quantized blocks q8_0/q4_0/q4_1/q5_0/q5_1/q4_k/q5_k/q6_k: the kernels read each dtype
// exactly, a quantized matrix as its dequantization, kernels/cpu/quant.hpp), so `owner` (the weight
// store) keeps the files alive. A CUDA model uploads them as bf16 (f16/f32 rounded once, quantized
// ones dequantized, then rounded). Vectors (norm weights, biases) become f32 copies on the device.
// New weight types plug in here and at the ops that read them, never in the decoder.

#include <memory>
#include <span>
#include <vector>

#include "llaisys/ops/device_context.hpp"

namespace llaisys::ops {

// A [rows, cols] matrix for linear/embedding on the context's device. `host` lives on the CPU;
// unsupported for a dtype the device's kernels cannot read (named); a quantized matrix's rows must be
// whole blocks.
Result<Tensor> upload_matrix(DeviceContext& ctx, const TensorView& host, std::shared_ptr<const void> owner);
// A host matrix [rows, cols] of BF16, F16 or F32 quantized to `dtype` (Q8_0, Q4_0, ...; cols a whole
// number of blocks) into host memory of its own, as llama.cpp's reference quantizers do. CPU only.
Result<Tensor> quantize_matrix(DeviceContext& ctx, const TensorView& host, DType dtype);
// A [n] vector as f32 on the device, each element + add (Gemma's RMSNorm multiplies by 1 + w: add = 1,
// computed in f32 as transformers does).
Result<Tensor> upload_vector(DeviceContext& ctx, const TensorView& host, float add = 0.0f);

// The weights of one linear op: y = x W^T + b, where W is the row-wise concatenation of `parts` (one
// matrix, or q;k;v or gate;up read by one op) and b the concatenation of their biases. Each device
// stores it its own way (the CPU keeps the parts and splits its threads over all of them; CUDA one
// stacked matrix for one GEMM).
struct LinearWeight {
  std::vector<Tensor> parts;  // [N_i, K] each
  Tensor bias;                // [N] f32, or empty
  int64_t in_features = 0;    // K
  int64_t out_features = 0;   // N = sum of N_i

  uint64_t bytes() const;     // of the matrices as stored (what a decode step reads; quantized: the blocks)
};

// `matrices`: host views [N_i, K]; `biases`: empty, or one host view [N_i] per matrix.
Result<LinearWeight> prepare_linear(DeviceContext& ctx, std::span<const TensorView> matrices,
                                    std::span<const TensorView> biases, std::shared_ptr<const void> owner);
// A weight already on the device (a tied lm head reading the embedding table), without bias.
LinearWeight linear_weight_of(const Tensor& matrix);

}  // namespace llaisys::ops
