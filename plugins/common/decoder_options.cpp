#include "decoder_options.hpp"

#include <boost/json.hpp>

#include "llaisys/model/model_options.hpp"

namespace llaisys::decoder {
namespace json = boost::json;

Result<DecoderOptions> parse_decoder_options(const ModelCreateParams& params) {
  DecoderOptions options;
  options.device = params.device;
  bool cpu_only_option = false;
  std::string weights = "auto";
  const OptionReader readers[] = {
      {"device",
       [&](const json::value& v) -> Status {
         const json::string* name = v.if_string();
         auto device = name ? parse_device(std::string_view(name->data(), name->size()))
                            : Result<Device>(Status(ErrorCode::invalid_argument, "not a string"));
         if (!device.ok()) {
           return make_error(ErrorCode::invalid_argument, "option device: expected \"cpu\", \"cuda\" or \"cuda:N\", got {}",
                             json::serialize(v));
         }
         options.device = *device;
         return Status();
       }},
      {"isa",
       [&](const json::value& v) {
         cpu_only_option = true;
         return read_option_choice(v, "isa", {"auto", "avx512", "avx2", "scalar"}, options.isa);
       }},
      {"matmul",
       [&](const json::value& v) {
         cpu_only_option = cpu_only_option || v != "f32";
         return read_option_choice(v, "matmul", {"f32", "bf16", "int8", "auto"}, options.matmul);
       }},
      {"kv_dtype",
       [&](const json::value& v) -> Status {
         const json::string* name = v.if_string();
         if (name != nullptr && *name == "f32") {
           options.kv_dtype = DType::f32;
         } else if (name != nullptr && *name == "bf16") {
           options.kv_dtype = DType::bf16;
         } else {
           return make_error(ErrorCode::invalid_argument, "option kv_dtype: expected \"f32\" or \"bf16\", got {}",
                             json::serialize(v));
         }
         return Status();
       }},
      {"weights", [&](const json::value& v) { return read_option_choice(v, "weights", {"auto", "mmap", "memory"}, weights); }},
      {"cuda_graphs",
       [&](const json::value& v) {
         options.cuda_graphs.emplace();
         return read_option_choice(v, "cuda_graphs", {"off", "on", "plans"}, *options.cuda_graphs);
       }},
      {"weights_dtype",
       [&](const json::value& v) -> Status {
         cpu_only_option = true;
         std::string name;
         LLAISYS_RETURN_IF_ERROR(read_option_choice(v, "weights_dtype", {"q8_0", "q4_0"}, name));
         options.weights_dtype = parse_dtype(name);
         return Status();
       }},
  };
  LLAISYS_RETURN_IF_ERROR(read_model_options(params.options_json, readers));
  options.weights = *parse_weight_loading(weights);
  if (cpu_only_option && !options.device.is_cpu()) {
    return make_error(ErrorCode::invalid_argument, "options isa, matmul and weights_dtype apply to the cpu device, not {}",
                      options.device.to_string());
  }
  if (options.cuda_graphs && *options.cuda_graphs != "off" && options.device.is_cpu()) {
    return Status(ErrorCode::invalid_argument, "option cuda_graphs applies to a cuda device, not cpu");
  }
  return options;
}

}  // namespace llaisys::decoder
