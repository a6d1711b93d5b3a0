// requested_cuda_device (cuda_decoder.hpp): which device a model's create params ask for. Compiled
// with or without CUDA, so a CPU-only build can say clearly that it cannot honour "device": "cuda".

#include <boost/json.hpp>

#include "cuda_decoder.hpp"

namespace llaisys::decoder {
namespace json = boost::json;

Result<std::optional<int>> requested_cuda_device(const ModelCreateParams& params) {
  json::error_code ec;
  const json::value value = json::parse(params.options_json.empty() ? "{}" : params.options_json, ec);
  if (!ec && value.is_object()) {
    if (const json::value* device = value.as_object().if_contains("device")) {
      const json::string* name = device->if_string();
      auto parsed = name ? parse_device(std::string_view(name->data(), name->size()))
                         : Result<Device>(Status(ErrorCode::invalid_argument, "not a string"));
      if (!parsed.ok()) {
        return make_error(ErrorCode::invalid_argument, "option device: expected \"cpu\", \"cuda\" or \"cuda:N\", got {}",
                          json::serialize(*device));
      }
      if (parsed->is_cpu()) return std::optional<int>();
      return std::optional<int>(parsed->index);
    }
  }
  // A malformed options string is the CPU decoder's to report; no "device" key: params.device.
  if (params.device.is_cuda()) return std::optional<int>(params.device.index);
  return std::optional<int>();
}

}  // namespace llaisys::decoder
