#include "llaisys/model/any_model.hpp"

#include <cstddef>
#include <cstring>

#include "llaisys/core/log.hpp"

namespace llaisys {
namespace {

void host_log(void* /*user*/, int32_t level, const char* message) {
  const int clamped = level < 0 ? 0 : (level > 4 ? 4 : level);
  log::write(static_cast<log::Level>(clamped), message != nullptr ? message : "");
}

Status from_c_error(llaisys_status code, const llaisys_error& error, std::string_view what) {
  ErrorCode ec = ErrorCode::internal;
  if (code > 0 && code <= static_cast<int32_t>(ErrorCode::resource_exhausted)) {
    ec = static_cast<ErrorCode>(code);
  }
  // The plugin promised a NUL-terminated message; don't trust it blindly.
  const std::size_t len = strnlen(error.message, sizeof(error.message));
  std::string message(error.message, len);
  if (message.empty()) message = fmt::format("failed with code {}", code);
  return Status(ec, fmt::format("{}: {}", what, message));
}

Result<ModelInfo> info_from_c(const llaisys_model_info& c) {
  ModelInfo info;
  info.architecture.assign(c.architecture, strnlen(c.architecture, sizeof(c.architecture)));
  info.vocab_size = c.vocab_size;
  info.hidden_size = c.hidden_size;
  info.num_layers = c.num_layers;
  info.num_kv_heads = c.num_kv_heads;
  info.head_dim = c.head_dim;
  info.max_context = c.max_context;
  info.bos_token_id = c.bos_token_id;
  if (c.num_eos_token_ids < 0 || c.num_eos_token_ids > 8) {
    return make_error(ErrorCode::plugin_error, "model info has {} eos ids (0..8 allowed)",
                      c.num_eos_token_ids);
  }
  info.eos_token_ids.assign(c.eos_token_ids, c.eos_token_ids + c.num_eos_token_ids);
  if (c.kv_dtype < 0 || c.kv_dtype > static_cast<int32_t>(DType::u8)) {
    return make_error(ErrorCode::plugin_error, "model info has unknown kv dtype {}", c.kv_dtype);
  }
  info.kv_dtype = static_cast<DType>(c.kv_dtype);
  info.weight_bytes = c.weight_bytes;
  info.kv_bytes_per_token = c.kv_bytes_per_token;
  // Appended to the struct later: a plugin whose struct ends before it has no window.
  if (c.struct_size >= offsetof(llaisys_model_info, sliding_window) + sizeof(c.sliding_window)) {
    if (c.sliding_window < 0) {
      return make_error(ErrorCode::plugin_error, "model info has a negative sliding window {}", c.sliding_window);
    }
    info.sliding_window = c.sliding_window;
  }
  if (info.vocab_size <= 0 || info.hidden_size <= 0 || info.max_context <= 0) {
    return make_error(ErrorCode::plugin_error,
                      "model info is implausible (vocab {}, hidden {}, context {})", info.vocab_size,
                      info.hidden_size, info.max_context);
  }
  return info;
}

}  // namespace

LoadedPlugin::LoadedPlugin(const llaisys_plugin* table, std::shared_ptr<void> library,
                           std::string origin)
    : table_(table), library_(std::move(library)), name_(table->name), origin_(std::move(origin)) {
  for (const char* const* arch = table->architectures; *arch != nullptr; ++arch) {
    architectures_.emplace_back(*arch);
  }
}

Result<AnyModel> AnyModel::create(std::shared_ptr<const LoadedPlugin> plugin,
                                  const ModelCreateParams& params) {
  const std::string model_dir = params.model_dir.string();
  const std::string device = params.device.to_string();
  llaisys_model_params c{};
  c.struct_size = sizeof(c);
  c.model_dir = model_dir.c_str();
  c.device = device.c_str();
  c.num_threads = params.num_threads;
  c.options_json = params.options_json.c_str();
  c.log = &host_log;
  c.log_user = nullptr;

  const llaisys_plugin& table = plugin->table();
  llaisys_error error{};
  llaisys_model* handle = nullptr;
  const std::string what = fmt::format("plugin '{}' loading '{}'", plugin->name(), model_dir);
  if (llaisys_status code = table.create(&c, &handle, &error); code != LLAISYS_OK) {
    return from_c_error(code, error, what);
  }
  if (handle == nullptr) return make_error(ErrorCode::plugin_error, "{}: create returned no model", what);

  llaisys_model_info c_info{};
  if (llaisys_status code = table.get_info(handle, &c_info, &error); code != LLAISYS_OK) {
    table.destroy(handle);
    return from_c_error(code, error, what);
  }
  Result<ModelInfo> info = info_from_c(c_info);
  if (!info.ok()) {
    table.destroy(handle);
    return std::move(info).take_status().with_context(what);
  }
  return AnyModel(std::move(plugin), handle, std::move(info).value());
}

AnyModel::AnyModel(std::shared_ptr<const LoadedPlugin> plugin, llaisys_model* handle, ModelInfo info)
    : plugin_(std::move(plugin)), handle_(handle), info_(std::move(info)) {}

AnyModel::AnyModel(AnyModel&& other) noexcept
    : plugin_(std::move(other.plugin_)),
      handle_(std::exchange(other.handle_, nullptr)),
      info_(std::move(other.info_)),
      c_rows_(std::move(other.c_rows_)) {}

AnyModel& AnyModel::operator=(AnyModel&& other) noexcept {
  if (this != &other) {
    reset();
    plugin_ = std::move(other.plugin_);
    handle_ = std::exchange(other.handle_, nullptr);
    info_ = std::move(other.info_);
    c_rows_ = std::move(other.c_rows_);
  }
  return *this;
}

AnyModel::~AnyModel() { reset(); }

void AnyModel::reset() noexcept {
  if (handle_ != nullptr && plugin_) plugin_->table().destroy(handle_);
  handle_ = nullptr;
}

const std::string& AnyModel::plugin_name() const { return plugin_->name(); }

Status AnyModel::init_kv_cache(const KvCacheConfig& config) {
  llaisys_kv_cache_config c{
      .num_blocks = config.num_blocks, .block_size = config.block_size, .num_seq_slots = config.num_seq_slots};
  llaisys_error error{};
  if (llaisys_status code = plugin_->table().init_kv_cache(handle_, &c, &error); code != LLAISYS_OK) {
    return from_c_error(code, error, "init_kv_cache");
  }
  return Status();
}

Status AnyModel::step(const ForwardBatch& batch, std::span<const SampleRow> sampling, const StepOutput& out) {
  const llaisys_forward_batch c = batch.to_c();
  c_rows_.clear();
  for (const SampleRow& row : sampling) c_rows_.push_back(to_c(row));
  const llaisys_step_output c_out = to_c(out);
  const llaisys_sample_row* rows = sampling.empty() ? nullptr : c_rows_.data();
  llaisys_error error{};
  llaisys_status code = LLAISYS_OK;
  if (out.wait_for_masks != nullptr && waits_for_masks()) {
    // The host's wait crosses the boundary as a C callback; its Status stays on this side.
    struct Wait {
      const std::function<Status()>* fn;
      Status status;
    } wait{out.wait_for_masks, Status()};
    auto ready = [](void* user) -> int32_t {
      auto* w = static_cast<Wait*>(user);
      w->status = (*w->fn)();
      return w->status.ok() ? 0 : 1;
    };
    code = plugin_->table().step_pending_masks(handle_, &c, rows, &c_out, ready, &wait, &error);
    if (!wait.status.ok()) return wait.status;
  } else {
    if (out.wait_for_masks != nullptr) LLAISYS_RETURN_IF_ERROR((*out.wait_for_masks)());
    code = plugin_->table().step(handle_, &c, rows, &c_out, &error);
  }
  if (code != LLAISYS_OK) return from_c_error(code, error, "step");
  return Status();
}

bool AnyModel::waits_for_masks() const {
  const llaisys_plugin& table = plugin_->table();
  return table.struct_size >= offsetof(llaisys_plugin, step_pending_masks) + sizeof(table.step_pending_masks) &&
         table.step_pending_masks != nullptr;
}

Status AnyModel::copy_blocks(std::span<const BlockCopy> copies) {
  static_assert(sizeof(BlockCopy) == sizeof(llaisys_block_copy));
  llaisys_error error{};
  const auto* c = reinterpret_cast<const llaisys_block_copy*>(copies.data());
  if (llaisys_status code =
          plugin_->table().copy_blocks(handle_, c, static_cast<int32_t>(copies.size()), &error);
      code != LLAISYS_OK) {
    return from_c_error(code, error, "copy_blocks");
  }
  return Status();
}

}  // namespace llaisys
