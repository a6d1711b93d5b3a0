#include "llaisys/model/plugin_export.hpp"

#include <algorithm>

namespace llaisys::plugin {

llaisys_status write_error(const Status& status, llaisys_error* error) noexcept {
  const auto code = static_cast<llaisys_status>(status.code());
  if (error != nullptr) {
    error->code = code;
    const std::string& message = status.message();
    const std::size_t n = std::min(message.size(), sizeof(error->message) - 1);
    std::memcpy(error->message, message.data(), n);
    error->message[n] = '\0';
  }
  return code;
}

Result<ModelCreateParams> params_from_c(const llaisys_model_params* params) {
  if (params == nullptr) return Status(ErrorCode::invalid_argument, "create: params is NULL");
  if (params->struct_size < sizeof(llaisys_model_params)) {
    return make_error(ErrorCode::plugin_error, "create: params struct of {} bytes, plugin needs {}",
                      params->struct_size, sizeof(llaisys_model_params));
  }
  if (params->model_dir == nullptr) return Status(ErrorCode::invalid_argument, "create: model_dir is NULL");
  ModelCreateParams out;
  out.model_dir = params->model_dir;
  LLAISYS_ASSIGN_OR_RETURN(out.device, parse_device(params->device ? params->device : "cpu"));
  out.num_threads = std::max(0, params->num_threads);
  out.options_json = params->options_json ? params->options_json : "{}";
  return out;
}

void info_to_c(const ModelInfo& info, llaisys_model_info* out) {
  *out = llaisys_model_info{};
  out->struct_size = sizeof(llaisys_model_info);
  const std::size_t n = std::min(info.architecture.size(), sizeof(out->architecture) - 1);
  std::memcpy(out->architecture, info.architecture.data(), n);
  out->vocab_size = info.vocab_size;
  out->hidden_size = info.hidden_size;
  out->num_layers = info.num_layers;
  out->num_kv_heads = info.num_kv_heads;
  out->head_dim = info.head_dim;
  out->max_context = info.max_context;
  out->bos_token_id = info.bos_token_id;
  const std::size_t num_eos = std::min<std::size_t>(info.eos_token_ids.size(), 8);
  out->num_eos_token_ids = static_cast<int32_t>(num_eos);
  std::copy_n(info.eos_token_ids.begin(), num_eos, out->eos_token_ids);
  out->kv_dtype = static_cast<int32_t>(info.kv_dtype);
  out->weight_bytes = info.weight_bytes;
  out->kv_bytes_per_token = info.kv_bytes_per_token;
  out->sliding_window = info.sliding_window;
}

}  // namespace llaisys::plugin
