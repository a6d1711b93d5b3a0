#pragma once
// DecoderOptions: the create options of every plugin built on the shared decoder, parsed once from
// ModelCreateParams::options_json. An unknown key, or a value of the wrong type, is an error naming
// the key (and, for an unknown key, listing the valid ones).
//
//   "device":   "cpu" | "cuda" | "cuda:N"   (default: ModelCreateParams::device)
//   "isa":      "auto" | "avx512" | "avx2" | "scalar"   CPU only: forces an ISA path (all give the same
//               bits; for testing and comparison)
//   "matmul":   "auto" (default) | "bf16" | "int8" | "f32"   CPU only: "bf16": activations rounded to
//               bf16 for the products with bf16 and quantized weights (AVX512-BF16 vdpbf16ps,
//               quantized weights dequantized and rounded to bf16); "int8": activations rounded to
//               8-bit blocks for Q8_0, Q4_0 and Q5_0 weights, integer dot products (AVX512-VNNI/VBMI/BITALG, as
//               llama.cpp), the other weights exact; "f32": f32 activations and exact products
//               (bit-identical on every CPU; what the parity tests name). "auto": bf16 on AMD CPUs
//               with AVX512-BF16 (where it measured faster), exact otherwise; and int8 for Q8_0,
//               Q4_0 and Q5_0 weights where those instructions run it. f16/f32 weights always
//               take the exact path
//   "cuda_graphs": "on" (default) | "off" | "plans"   CUDA only: decode passes of up to 64 sequences
//               recorded as CUDA graphs and replayed ("plans": the same launch shapes, unrecorded;
//               what tests compare "on" with; "off": launched one by one). docs/CUDA.md
//   "kv_dtype": "f32" | "bf16"   the KV cache (default: f32 on the CPU, bf16 on CUDA); bf16 halves its
//               memory and the bytes attention reads; batch invariance holds within the setting
//   "weights":  "auto" (default) | "mmap" | "memory"   how the safetensors files come into memory
//               (WeightLoading, llaisys/model/safetensors.hpp); CUDA reads them once to upload
//   "weights_dtype": "q8_0" | "q4_0"   CPU only: quantize the model's BF16/F16/F32 matrices (every
//               linear layer, the embedding and the lm head) once at load, as llama.cpp's Q8_0 / Q4_0
//               files hold them: about 1.9x / 3.6x fewer bytes than bf16 per decode step. Matrices
//               already quantized (GGUF files) stay as they are. Default: the file's types

#include <optional>
#include <string>

#include "llaisys/model/model.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys::decoder {

struct DecoderOptions {
  Device device = Device::cpu();
  std::string isa = "auto";
  std::string matmul = "auto";
  std::optional<DType> kv_dtype;
  WeightLoading weights = WeightLoading::automatic;
  std::optional<DType> weights_dtype;  // quantize on load
  std::optional<std::string> cuda_graphs;  // unset: "on" (a cuda device)
};

Result<DecoderOptions> parse_decoder_options(const ModelCreateParams& params);

}  // namespace llaisys::decoder
