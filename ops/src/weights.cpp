#include "llaisys/ops/weights.hpp"

#include <algorithm>
#include <vector>

#include "cpu/quant.hpp"

namespace llaisys::ops {
namespace {

bool is_float(DType dtype) { return dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32; }

Status check_host_matrix(const TensorView& host) {
  if (host.rank() != 2 || !host.is_contiguous() || host.device() != Device::cpu() || host.data() == nullptr) {
    return make_error(ErrorCode::invalid_argument, "weights: expected a contiguous host matrix, got {}",
                      host.to_string());
  }
  if (!is_float(host.dtype()) && !is_quantized(host.dtype())) {
    return make_error(ErrorCode::unsupported,
                      "weights: dtype {} cannot be read by the kernels (BF16, F16, F32, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                      "Q4_K, Q5_K, Q6_K)",
                      to_string(host.dtype()));
  }
  if (host.dim(1) % dtype_block_elements(host.dtype()) != 0) {
    return make_error(ErrorCode::invalid_argument, "weights: {} rows are not whole {}-element blocks",
                      host.to_string(), dtype_block_elements(host.dtype()));
  }
  return Status();
}

float element(const TensorView& view, std::size_t i) {
  switch (view.dtype()) {
    case DType::bf16: return bf16_to_f32(view.data_as<const bf16_t>()[i]);
    case DType::f16: return f16_to_f32(view.data_as<const f16_t>()[i]);
    default: return view.data_as<const float>()[i];
  }
}

// The rows of several host matrices as one bf16 device matrix (CUDA's GEMMs read bf16): quantized
// ones dequantized exactly (cpu::dequantize), then rounded to bf16 like f32 ones.
Result<Tensor> stack_bf16(DeviceContext& ctx, std::span<const TensorView> matrices) {
  std::size_t count = 0;
  for (const TensorView& m : matrices) count += static_cast<std::size_t>(m.numel());
  LLAISYS_ASSIGN_OR_RETURN(Buffer buffer, ctx.allocate(count * sizeof(bf16_t)));
  std::size_t offset = 0;
  std::vector<bf16_t> converted;
  int64_t rows = 0;
  for (const TensorView& m : matrices) {
    const auto n = static_cast<std::size_t>(m.numel());
    auto* dst = static_cast<bf16_t*>(buffer.data()) + offset;
    if (m.dtype() == DType::bf16) {
      LLAISYS_RETURN_IF_ERROR(ctx.copy_from_host(dst, m.data(), n * sizeof(bf16_t)));
    } else if (is_quantized(m.dtype())) {
      // A few rows at a time: no f32 copy of a whole (embedding-sized) matrix.
      const int64_t cols = m.dim(1);
      const int64_t rows_per_piece = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, cols));
      std::vector<float> values;
      for (int64_t r = 0; r < m.dim(0); r += rows_per_piece) {
        const int64_t piece = std::min(rows_per_piece, m.dim(0) - r) * cols;
        values.resize(static_cast<std::size_t>(piece));
        converted.resize(static_cast<std::size_t>(piece));
        cpu::dequantize(m.dtype(), m.row(r).data(), piece, values.data());
        for (std::size_t i = 0; i < values.size(); ++i) converted[i] = f32_to_bf16(values[i]);
        LLAISYS_RETURN_IF_ERROR(ctx.copy_from_host(dst + r * cols, converted.data(), values.size() * sizeof(bf16_t)));
      }
    } else {
      converted.resize(n);
      for (std::size_t i = 0; i < n; ++i) converted[i] = f32_to_bf16(element(m, i));
      LLAISYS_RETURN_IF_ERROR(ctx.copy_from_host(dst, converted.data(), n * sizeof(bf16_t)));
    }
    offset += n;
    rows += m.dim(0);
  }
  const TensorView view(buffer.data(), DType::bf16, Shape{rows, matrices.front().dim(1)}, ctx.device());
  return Tensor{.view = view, .owner = buffer.owner()};
}

}  // namespace

uint64_t LinearWeight::bytes() const {
  uint64_t total = 0;
  for (const Tensor& part : parts) total += part.view.nbytes();
  return total;
}

Result<Tensor> upload_matrix(DeviceContext& ctx, const TensorView& host, std::shared_ptr<const void> owner) {
  LLAISYS_RETURN_IF_ERROR(check_host_matrix(host));
  if (ctx.device().is_cpu()) return Tensor{.view = host, .owner = std::move(owner)};  // read in place
  return stack_bf16(ctx, std::span(&host, 1));
}

Result<Tensor> upload_vector(DeviceContext& ctx, const TensorView& host, float add) {
  if (host.rank() != 1 || !host.is_contiguous() || host.device() != Device::cpu() || !is_float(host.dtype())) {
    return make_error(ErrorCode::invalid_argument, "weights: expected a host vector of BF16, F16 or F32, got {}",
                      host.to_string());
  }
  const auto n = static_cast<std::size_t>(host.numel());
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = element(host, i) + add;
  LLAISYS_ASSIGN_OR_RETURN(Buffer buffer, ctx.allocate(n * sizeof(float)));
  LLAISYS_RETURN_IF_ERROR(ctx.copy_from_host(buffer.data(), values.data(), n * sizeof(float)));
  return Tensor{.view = TensorView(buffer.data(), DType::f32, Shape{static_cast<int64_t>(n)}, ctx.device()),
                .owner = buffer.owner()};
}

Result<LinearWeight> prepare_linear(DeviceContext& ctx, std::span<const TensorView> matrices,
                                    std::span<const TensorView> biases, std::shared_ptr<const void> owner) {
  if (matrices.empty()) return Status(ErrorCode::invalid_argument, "prepare_linear: no matrices");
  if (!biases.empty() && biases.size() != matrices.size()) {
    return make_error(ErrorCode::invalid_argument, "prepare_linear: {} biases for {} matrices", biases.size(),
                      matrices.size());
  }
  LinearWeight w;
  w.in_features = matrices.front().rank() == 2 ? matrices.front().dim(1) : 0;
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    LLAISYS_RETURN_IF_ERROR(check_host_matrix(matrices[i]));
    if (matrices[i].dim(1) != w.in_features) {
      return make_error(ErrorCode::invalid_argument, "prepare_linear: matrices of {} and {} columns",
                        w.in_features, matrices[i].dim(1));
    }
    if (!biases.empty() && (biases[i].rank() != 1 || biases[i].dim(0) != matrices[i].dim(0))) {
      return make_error(ErrorCode::invalid_argument, "prepare_linear: bias {} for a matrix of {} rows",
                        biases[i].to_string(), matrices[i].dim(0));
    }
    w.out_features += matrices[i].dim(0);
  }
  if (ctx.device().is_cpu()) {
    for (const TensorView& m : matrices) w.parts.push_back(Tensor{.view = m, .owner = owner});
  } else {
    LLAISYS_ASSIGN_OR_RETURN(Tensor stacked, stack_bf16(ctx, matrices));
    w.parts.push_back(std::move(stacked));
  }
  if (!biases.empty()) {
    // One f32 vector for all parts (upload_vector of a concatenation).
    std::vector<float> all;
    for (const TensorView& b : biases) {
      if (!is_float(b.dtype()) || !b.is_contiguous()) {
        return make_error(ErrorCode::unsupported, "prepare_linear: bias of dtype {}", to_string(b.dtype()));
      }
      for (std::size_t i = 0; i < static_cast<std::size_t>(b.numel()); ++i) all.push_back(element(b, i));
    }
    const TensorView view(all.data(), DType::f32, Shape{static_cast<int64_t>(all.size())});
    LLAISYS_ASSIGN_OR_RETURN(w.bias, upload_vector(ctx, view));
  }
  return w;
}

LinearWeight linear_weight_of(const Tensor& matrix) {
  return LinearWeight{.parts = {matrix}, .bias = {}, .in_features = matrix.dim(1), .out_features = matrix.dim(0)};
}

}  // namespace llaisys::ops
