#pragma once
// Readers for model options that the CPU decoder (decoder_lm.cpp) and the CUDA decoder
// (cuda_decoder.cpp) share, so that a key means the same and is refused the same way on both.

#include <boost/json/value.hpp>

#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::decoder {

// "kv_dtype": "f32" or "bf16"; anything else is invalid_argument, naming the option and the value.
Result<DType> parse_kv_dtype_option(const boost::json::value& value);

}  // namespace llaisys::decoder
