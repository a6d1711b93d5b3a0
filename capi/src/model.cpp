// The model handle (llaisys_model_*): one model opened through the plugin registry as the engine
// opens it (load_registry, PluginRegistry::open_model), driven by hand. Every call checks its
// arguments against the model's info and the KV pool (validate_forward_batch / validate_step, the
// checks a model relies on) before anything reaches the plugin, so bad input is an error, never a
// crash. Calls on one handle take turns on its mutex.

#include <cstring>
#include <optional>

#include "capi_internal.hpp"
#include "llaisys/model/forward_batch.hpp"
#include "llaisys/model/step.hpp"

// The opaque handle of the header.
struct llaisys_model_handle {
  explicit llaisys_model_handle(llaisys::AnyModel m) : model(std::move(m)) {}
  llaisys::AnyModel model;                 // holds its plugin loaded
  std::mutex mutex;                        // one call at a time
  std::optional<llaisys::KvCacheConfig> kv;  // the pool of the latest successful init_kv_cache
};

namespace llaisys::capi {
namespace fs = std::filesystem;
namespace {

constexpr int32_t kMaxKvBlocks = 1 << 24, kMaxBlockSize = 1024, kMaxSeqSlots = 1 << 20;

Status open_model(const char* model_path, const char* options_json, llaisys_model_handle** out) {
  if (model_path == nullptr) return null_argument("model_path");
  if (out == nullptr) return null_argument("model");
  LLAISYS_ASSIGN_OR_RETURN(OpenOptions options, parse_model_open_options(fs::path(model_path), options_json));
  LLAISYS_ASSIGN_OR_RETURN(PluginRegistry registry, load_registry(options));
  const app::ModelLoadOptions& load = options.load;
  LLAISYS_ASSIGN_OR_RETURN(AnyModel model, registry.open_model({.model_dir = load.model_dir,
                                                                .device = load.device,
                                                                .num_threads = load.num_threads,
                                                                .options_json = load.plugin_options_json}));
  *out = new llaisys_model_handle(std::move(model));
  return Status();
}

void fill_props(const ModelInfo& info, llaisys_model_props& out) {
  out = llaisys_model_props{.struct_size = sizeof(llaisys_model_props)};
  std::strncpy(out.architecture, info.architecture.c_str(), sizeof(out.architecture) - 1);
  out.vocab_size = info.vocab_size;
  out.hidden_size = info.hidden_size;
  out.max_context = info.max_context;
  out.num_layers = info.num_layers;
  out.num_kv_heads = info.num_kv_heads;
  out.head_dim = info.head_dim;
  out.bos_token_id = info.bos_token_id;
  const std::size_t num_eos = std::min(info.eos_token_ids.size(), std::size(out.eos_token_ids));
  out.num_eos_token_ids = static_cast<int32_t>(num_eos);
  std::copy_n(info.eos_token_ids.begin(), num_eos, out.eos_token_ids);
  out.sliding_window = info.sliding_window;
  out.kv_bytes_per_token = info.kv_bytes_per_token;
  out.weight_bytes = info.weight_bytes;
}

Status check_range(const char* name, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) return make_error(ErrorCode::invalid_argument, "{} must be in [{}, {}], got {}", name, lo, hi, value);
  return Status();
}

Status init_kv_cache(llaisys_model_handle& handle, int32_t num_blocks, int32_t block_size, int32_t num_seq_slots) {
  LLAISYS_RETURN_IF_ERROR(check_range("num_blocks", num_blocks, 1, kMaxKvBlocks));
  LLAISYS_RETURN_IF_ERROR(check_range("block_size", block_size, 1, kMaxBlockSize));
  LLAISYS_RETURN_IF_ERROR(check_range("num_seq_slots", num_seq_slots, 0, kMaxSeqSlots));
  const KvCacheConfig config{.num_blocks = num_blocks, .block_size = block_size, .num_seq_slots = num_seq_slots};
  handle.kv.reset();  // the previous pool is gone whatever happens next
  LLAISYS_RETURN_IF_ERROR(handle.model.init_kv_cache(config));
  handle.kv = config;
  return Status();
}

Status require_kv(const llaisys_model_handle& handle) {
  if (!handle.kv) {
    return Status(ErrorCode::invalid_argument, "the model has no KV cache: call llaisys_model_init_kv_cache first");
  }
  return Status();
}

Status forward(llaisys_model_handle& handle, const llaisys_model_batch* batch, float* rows_out, size_t rows_capacity) {
  if (batch == nullptr) return null_argument("batch");
  if (batch->struct_size < sizeof(llaisys_model_batch)) {
    return make_error(ErrorCode::invalid_argument, "batch.struct_size is {}: set it to sizeof(llaisys_model_batch) ({})",
                      batch->struct_size, sizeof(llaisys_model_batch));
  }
  LLAISYS_RETURN_IF_ERROR(require_kv(handle));
  const llaisys_forward_batch c{.num_tokens = batch->num_tokens,
                                .token_ids = batch->token_ids,
                                .positions = batch->positions,
                                .seq_indices = batch->seq_indices,
                                .num_seqs = batch->num_seqs,
                                .block_tables = batch->block_tables,
                                .block_table_lens = batch->block_table_lens,
                                .num_outputs = batch->num_outputs,
                                .output_token_indices = batch->output_token_indices,
                                .output_kind = batch->output_kind};
  auto converted = ForwardBatch::from_c(c);  // counts, missing arrays, output kind
  if (!converted.ok()) return Status(converted.status()).with_context("batch");
  const ForwardBatch& fb = *converted;
  const ModelInfo& info = handle.model.info();
  const auto width = static_cast<std::size_t>(info.output_width(fb.output_kind));
  const std::size_t needed = static_cast<std::size_t>(fb.num_outputs()) * width;
  if (needed > 0 && rows_out == nullptr) return null_argument("rows_out");
  if (rows_capacity < needed) {
    return make_error(ErrorCode::invalid_argument,
                      "rows_capacity of {} floats is too small: {} output rows of {} floats need {}", rows_capacity,
                      fb.num_outputs(), width, needed);
  }
  const StepOutput out{.rows = std::span<float>(rows_out, needed)};
  LLAISYS_RETURN_IF_ERROR(validate_forward_batch(fb, info, *handle.kv).with_context("batch"));
  LLAISYS_RETURN_IF_ERROR(validate_step(fb, {}, out, info, *handle.kv).with_context("batch"));
  return handle.model.step(fb, {}, out);
}

Status copy_blocks(llaisys_model_handle& handle, const llaisys_kv_block_copy* copies, int32_t count) {
  if (count < 0) return make_error(ErrorCode::invalid_argument, "count must be >= 0, got {}", count);
  if (count == 0) return Status();
  if (copies == nullptr) return null_argument("copies");
  LLAISYS_RETURN_IF_ERROR(require_kv(handle));
  const int32_t num_blocks = handle.kv->num_blocks;
  std::vector<BlockCopy> checked(static_cast<std::size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    const llaisys_kv_block_copy& copy = copies[i];
    for (const auto& [name, block] : {std::pair{"src", copy.src}, std::pair{"dst", copy.dst}}) {
      if (block < 0 || block >= num_blocks) {
        return make_error(ErrorCode::invalid_argument, "copy {}: {} block {} outside the KV pool of {} blocks", i,
                          name, block, num_blocks);
      }
    }
    checked[static_cast<std::size_t>(i)] = BlockCopy{.src = copy.src, .dst = copy.dst};
  }
  return handle.model.copy_blocks(checked);
}

// Runs `body(handle)` with the handle's mutex held.
template <class Body>
llaisys_status with_model(llaisys_model_handle* model, Body&& body) noexcept {
  return guarded([&]() -> Status {
    if (model == nullptr) return null_argument("model");
    std::lock_guard lock(model->mutex);
    return body(*model);
  });
}

}  // namespace
}  // namespace llaisys::capi

extern "C" {

llaisys_status llaisys_model_open(const char* model_path, const char* options_json, llaisys_model_handle** model) {
  return llaisys::capi::guarded([&] { return llaisys::capi::open_model(model_path, options_json, model); });
}

void llaisys_model_close(llaisys_model_handle* model) {
  delete model;  // ~AnyModel frees the plugin's model (never throws)
}

llaisys_status llaisys_model_get_info(const llaisys_model_handle* model, llaisys_model_props* info) {
  return llaisys::capi::guarded([&]() -> llaisys::Status {
    if (model == nullptr) return llaisys::capi::null_argument("model");
    return llaisys::capi::fill_sized(info, "llaisys_model_props", [&](llaisys_model_props& out) {
      llaisys::capi::fill_props(model->model.info(), out);  // info is fixed: no lock needed
    });
  });
}

llaisys_status llaisys_model_init_kv_cache(llaisys_model_handle* model, int32_t num_blocks, int32_t block_size,
                                           int32_t num_seq_slots) {
  return llaisys::capi::with_model(model, [&](llaisys_model_handle& handle) {
    return llaisys::capi::init_kv_cache(handle, num_blocks, block_size, num_seq_slots);
  });
}

llaisys_status llaisys_model_forward(llaisys_model_handle* model, const llaisys_model_batch* batch, float* rows_out,
                                     size_t rows_capacity) {
  return llaisys::capi::with_model(model, [&](llaisys_model_handle& handle) {
    return llaisys::capi::forward(handle, batch, rows_out, rows_capacity);
  });
}

llaisys_status llaisys_model_copy_blocks(llaisys_model_handle* model, const llaisys_kv_block_copy* copies,
                                         int32_t count) {
  return llaisys::capi::with_model(model, [&](llaisys_model_handle& handle) {
    return llaisys::capi::copy_blocks(handle, copies, count);
  });
}

}  // extern "C"
