#pragma once
// Builds the C plugin table (plugin_abi.h) from a C++ class satisfying llaisys::PluginModel.
//
//   class MyModel { ... };                       // satisfies llaisys::PluginModel
//   static_assert(llaisys::PluginModel<MyModel>);
//   LLAISYS_EXPORT_PLUGIN(MyModel, "my-arch", "0.1", "MyArchForCausalLM")
//
// The adapter owns the boundary rules: arguments are checked, batches are validated against the
// model's info before step() sees them, every exception becomes an error code plus message, and
// the host's log callback becomes this library's log sink.

#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <utility>
#include <vector>

#include "llaisys/core/log.hpp"
#include "llaisys/model/model.hpp"
#include "llaisys/model/plugin_abi.h"

namespace llaisys::plugin {

// Copies `status` into the C error (truncating the message) and returns its code.
llaisys_status write_error(const Status& status, llaisys_error* error) noexcept;
// Runs `body` (returning Status); exceptions become internal / out_of_memory errors.
template <class F>
llaisys_status guarded(llaisys_error* error, F&& body) noexcept {
  try {
    return write_error(std::forward<F>(body)(), error);
  } catch (const std::bad_alloc&) {
    return write_error(Status(ErrorCode::out_of_memory, "out of memory"), error);
  } catch (const std::exception& e) {
    return write_error(Status(ErrorCode::internal, std::string("unexpected exception: ") + e.what()),
                       error);
  } catch (...) {
    return write_error(Status(ErrorCode::internal, "unexpected non-standard exception"), error);
  }
}

Result<ModelCreateParams> params_from_c(const llaisys_model_params* params);
void info_to_c(const ModelInfo& info, llaisys_model_info* out);

// The per-model state the adapter keeps beside the user's object.
template <class M>
struct Handle {
  std::unique_ptr<M> model;
  KvCacheConfig kv_config{};
  bool kv_ready = false;
  std::vector<SampleRow> rows;  // the step's rows in C++ form, kept to avoid an allocation per step
};

template <PluginModel M>
struct Adapter {
  static Handle<M>* handle(llaisys_model* m) { return reinterpret_cast<Handle<M>*>(m); }
  static const Handle<M>* handle(const llaisys_model* m) {
    return reinterpret_cast<const Handle<M>*>(m);
  }

  static llaisys_status create(const llaisys_model_params* params, llaisys_model** out,
                               llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status {
      if (out == nullptr) return Status(ErrorCode::invalid_argument, "create: out is NULL");
      *out = nullptr;
      if (params != nullptr && params->log != nullptr) {
        log::set_sink(params->log, params->log_user);
      }
      LLAISYS_ASSIGN_OR_RETURN(ModelCreateParams cpp_params, params_from_c(params));
      LLAISYS_ASSIGN_OR_RETURN(std::unique_ptr<M> model, M::create(cpp_params));
      auto h = std::make_unique<Handle<M>>();
      h->model = std::move(model);
      *out = reinterpret_cast<llaisys_model*>(h.release());
      return Status();
    });
  }

  static void destroy(llaisys_model* m) noexcept {
    try {
      delete handle(m);
    } catch (...) {
      log::error("exception while destroying a model");
    }
  }

  static llaisys_status get_info(const llaisys_model* m, llaisys_model_info* info,
                                 llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status {
      if (m == nullptr || info == nullptr) {
        return Status(ErrorCode::invalid_argument, "get_info: NULL argument");
      }
      info_to_c(handle(m)->model->info(), info);
      return Status();
    });
  }

  static llaisys_status init_kv_cache(llaisys_model* m, const llaisys_kv_cache_config* config,
                                      llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status {
      if (m == nullptr || config == nullptr) {
        return Status(ErrorCode::invalid_argument, "init_kv_cache: NULL argument");
      }
      if (config->num_blocks <= 0 || config->block_size <= 0) {
        return make_error(ErrorCode::invalid_argument,
                          "init_kv_cache: need positive num_blocks and block_size, got {} and {}",
                          config->num_blocks, config->block_size);
      }
      Handle<M>* h = handle(m);
      h->kv_ready = false;
      if (config->num_seq_slots < 0) {
        return make_error(ErrorCode::invalid_argument, "init_kv_cache: {} sequence slots", config->num_seq_slots);
      }
      const KvCacheConfig cpp{.num_blocks = config->num_blocks,
                              .block_size = config->block_size,
                              .num_seq_slots = config->num_seq_slots};
      LLAISYS_RETURN_IF_ERROR(h->model->init_kv_cache(cpp));
      h->kv_config = cpp;
      h->kv_ready = true;
      return Status();
    });
  }

  static llaisys_status step(llaisys_model* m, const llaisys_forward_batch* batch,
                             const llaisys_sample_row* sampling, const llaisys_step_output* out,
                             llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status { return run_step(m, batch, sampling, out, nullptr); });
  }

  static llaisys_status step_pending_masks(llaisys_model* m, const llaisys_forward_batch* batch,
                                           const llaisys_sample_row* sampling, const llaisys_step_output* out,
                                           int32_t (*masks_ready)(void*), void* masks_user,
                                           llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status {
      if (masks_ready == nullptr) return Status(ErrorCode::invalid_argument, "step_pending_masks: NULL masks_ready");
      // Once the host says the masks are written, they are checked like step's (the rows converted
      // by run_step sit in the handle).
      const std::function<Status()> wait = [&]() -> Status {
        if (masks_ready(masks_user) != 0) return Status(ErrorCode::internal, "the host could not make the allowed masks");
        return validate_masks(handle(m)->rows, handle(m)->model->info());
      };
      return run_step(m, batch, sampling, out, &wait);
    });
  }

  static Status run_step(llaisys_model* m, const llaisys_forward_batch* batch, const llaisys_sample_row* sampling,
                         const llaisys_step_output* out, const std::function<Status()>* wait_for_masks) {
    if (m == nullptr || batch == nullptr || out == nullptr) {
      return Status(ErrorCode::invalid_argument, "step: NULL argument");
    }
    Handle<M>* h = handle(m);
    if (!h->kv_ready) return Status(ErrorCode::invalid_argument, "step before init_kv_cache");
    const ModelInfo& info = h->model->info();
    LLAISYS_ASSIGN_OR_RETURN(ForwardBatch cpp_batch, ForwardBatch::from_c(*batch));
    LLAISYS_ASSIGN_OR_RETURN(StepOutput cpp_out, step_output_from_c(*out, cpp_batch.num_outputs(), sampling != nullptr));
    cpp_out.wait_for_masks = wait_for_masks;
    std::vector<SampleRow>& rows = h->rows;
    rows.clear();
    if (sampling != nullptr) {
      for (int32_t r = 0; r < cpp_batch.num_outputs(); ++r) {
        LLAISYS_ASSIGN_OR_RETURN(SampleRow row, sample_row_from_c(sampling[r], info.vocab_size));
        rows.push_back(row);
      }
    }
    LLAISYS_RETURN_IF_ERROR(validate_step(cpp_batch, rows, cpp_out, info, h->kv_config));
    return h->model->step(cpp_batch, rows, cpp_out);
  }

  static llaisys_status copy_blocks(llaisys_model* m, const llaisys_block_copy* copies,
                                    int32_t num_copies, llaisys_error* error) noexcept {
    return guarded(error, [&]() -> Status {
      if (m == nullptr || num_copies < 0 || (copies == nullptr && num_copies > 0)) {
        return Status(ErrorCode::invalid_argument, "copy_blocks: bad arguments");
      }
      Handle<M>* h = handle(m);
      if (!h->kv_ready) return Status(ErrorCode::invalid_argument, "copy_blocks before init_kv_cache");
      for (int32_t i = 0; i < num_copies; ++i) {
        const auto& c = copies[i];
        if (c.src < 0 || c.dst < 0 || c.src >= h->kv_config.num_blocks ||
            c.dst >= h->kv_config.num_blocks) {
          return make_error(ErrorCode::invalid_argument,
                            "copy_blocks: block {} -> {} outside the pool of {} blocks", c.src, c.dst,
                            h->kv_config.num_blocks);
        }
      }
      static_assert(sizeof(BlockCopy) == sizeof(llaisys_block_copy));
      return h->model->copy_blocks(std::span<const BlockCopy>(
          reinterpret_cast<const BlockCopy*>(copies), static_cast<std::size_t>(num_copies)));
    });
  }

  static llaisys_plugin make_table(const char* name, const char* version,
                                   const char* const* architectures) {
    llaisys_plugin table{};
    table.abi_version = LLAISYS_PLUGIN_ABI_VERSION;
    table.struct_size = sizeof(llaisys_plugin);
    table.name = name;
    table.version = version;
    table.architectures = architectures;
    table.create = &Adapter::create;
    table.destroy = &Adapter::destroy;
    table.get_info = &Adapter::get_info;
    table.init_kv_cache = &Adapter::init_kv_cache;
    table.step = &Adapter::step;
    table.copy_blocks = &Adapter::copy_blocks;
    if constexpr (waits_for_masks<M>()) table.step_pending_masks = &Adapter::step_pending_masks;
    return table;
  }
};

}  // namespace llaisys::plugin

#define LLAISYS_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

// Defines the plugin's entry point. The trailing arguments are the HF architectures it serves.
#define LLAISYS_EXPORT_PLUGIN(ModelClass, plugin_name, plugin_version, ...)                       \
  LLAISYS_PLUGIN_EXPORT const llaisys_plugin* llaisys_plugin_entry(void) {                         \
    static const char* const architectures[] = {__VA_ARGS__, nullptr};                             \
    static const llaisys_plugin table =                                                            \
        ::llaisys::plugin::Adapter<ModelClass>::make_table(plugin_name, plugin_version,            \
                                                           architectures);                         \
    return &table;                                                                                 \
  }
