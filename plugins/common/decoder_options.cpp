#include "decoder_options.hpp"

#include <boost/json.hpp>

namespace llaisys::decoder {

Result<DType> parse_kv_dtype_option(const boost::json::value& value) {
  const boost::json::string* name = value.if_string();
  if (name != nullptr && *name == "f32") return DType::f32;
  if (name != nullptr && *name == "bf16") return DType::bf16;
  return make_error(ErrorCode::invalid_argument, "option kv_dtype: expected \"f32\" or \"bf16\", got {}",
                    boost::json::serialize(value));
}

}  // namespace llaisys::decoder
