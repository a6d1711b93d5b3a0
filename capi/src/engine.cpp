// The engine handle: a model opened as the apps open it (app::load_served_model: plugin, tokenizer,
// chat template, LLMEngine), run by an AsyncEngine on its own thread. Requests deliver either to a
// callback (from the stream's notifier, on the engine thread) or to llaisys_engine_poll.

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "capi_internal.hpp"
#include "llaisys/core/log.hpp"
#include "llaisys/model/registry.hpp"

namespace llaisys::capi {
namespace fs = std::filesystem;
namespace {

// Any object of this library: dladdr of its address names the library's file.
const char kLibraryAnchor = 0;

// <dir of libllaisys.so>/llaisys/plugins: lib/llaisys/plugins in the build tree and in an install,
// whichever program loaded the library (registry's default_plugin_dir() is relative to the program).
fs::path plugin_dir_beside_library() {
  Dl_info info{};
  if (dladdr(&kLibraryAnchor, &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    std::error_code ec;
    const fs::path library = fs::weakly_canonical(info.dli_fname, ec);
    if (!ec) return library.parent_path() / "llaisys" / "plugins";
  }
  return default_plugin_dir();
}

// Pops everything queued for `record` (waiting for the first per `timeout_ms` when asked) and merges
// it; null when nothing came. The caller holds record.mutex.
llaisys_output* drain(RequestRecord& record, int32_t timeout_ms) {
  std::vector<RequestOutput> outputs;
  std::optional<RequestOutput> first = timeout_ms < 0   ? record.stream.pop()
                                       : timeout_ms > 0 ? record.stream.pop_for(std::chrono::milliseconds(timeout_ms))
                                                        : record.stream.try_pop();
  if (!first) return nullptr;
  outputs.push_back(std::move(*first));
  while (!outputs.back().finished) {
    std::optional<RequestOutput> next = record.stream.try_pop();
    if (!next) break;
    outputs.push_back(std::move(*next));
  }
  llaisys_output* merged = merge_outputs(outputs, record);
  if (record.finished) record.stream = RequestStream();  // finished: dropping it aborts nothing
  return merged;
}

// The notifier of a callback request, on the engine thread after each push. The record holds the
// stream whose state holds this notifier: resetting the stream after the last output breaks that
// cycle (every accepted request gets a last output, also at shutdown).
void deliver_to_callback(const std::shared_ptr<RequestRecord>& record) {
  std::lock_guard lock(record->mutex);  // also waits for submit to have stored the stream
  while (record->stream.valid()) {
    llaisys_output* output = nullptr;
    try {
      output = drain(*record, 0);
    } catch (const std::exception& e) {
      log::error("llaisys C API: request output lost: {}", e.what());
      return;
    }
    if (output == nullptr) return;
    record->callback(record->user, output);
  }
}

}  // namespace

Result<PluginRegistry> load_registry(const OpenOptions& options) {
  std::error_code ec;
  if (!fs::exists(options.load.model_dir, ec)) {
    return make_error(ErrorCode::not_found, "model path '{}' does not exist (a model directory or a GGUF file)",
                      options.load.model_dir.string());
  }
  const fs::path plugin_dir = options.plugin_dir.empty() ? plugin_dir_beside_library() : options.plugin_dir;
  if (!fs::is_directory(plugin_dir, ec)) {
    return make_error(ErrorCode::not_found, "plugin directory '{}' does not exist", plugin_dir.string());
  }
  PluginRegistry registry;
  registry.load_directory(plugin_dir);
  return registry;
}

namespace {

Status open_engine(const char* model_path, const char* options_json, llaisys_engine** out) {
  if (model_path == nullptr) return null_argument("model_path");
  if (out == nullptr) return null_argument("engine");
  const fs::path model(model_path);
  LLAISYS_ASSIGN_OR_RETURN(OpenOptions options, parse_open_options(model, options_json));
  // Plugins stay loaded while the model made from them lives.
  LLAISYS_ASSIGN_OR_RETURN(PluginRegistry registry, load_registry(options));
  LLAISYS_ASSIGN_OR_RETURN(app::ServedModel served, app::load_served_model(registry, options.load));

  auto engine = std::make_unique<llaisys_engine>();
  engine->info = served.info;
  engine->text = {.tokenizer = served.tokenizer,
                  .chat_template = std::move(served.chat_template),
                  .chat_template_status = std::move(served.chat_template_status),
                  .chat_template_source = std::move(served.chat_template_source)};
  LLAISYS_ASSIGN_OR_RETURN(engine->engine,
                           AsyncEngine::start(std::move(served.engine), {.max_in_flight = options.max_in_flight}));
  *out = engine.release();
  return Status();
}

Status submit(llaisys_engine* engine, const llaisys_prompt* prompt, const llaisys_sampling_params* params,
              llaisys_output_callback on_output, void* user, llaisys_request_id* request_id) {
  if (engine == nullptr) return null_argument("engine");
  if (prompt == nullptr) return null_argument("prompt");
  if (request_id == nullptr) return null_argument("request_id");
  LLAISYS_ASSIGN_OR_RETURN(GenerateRequest request, generate_request(params));
  LLAISYS_ASSIGN_OR_RETURN(request.prompt_ids, prompt_ids(engine->text, *prompt));

  auto record = std::make_shared<RequestRecord>();
  record->prompt_ids = request.prompt_ids;
  record->num_top_logprobs = request.sampling.num_logprobs;
  record->callback = on_output;
  record->user = user;
  OutputNotifier notifier;
  if (on_output != nullptr) notifier = [record] { deliver_to_callback(record); };
  // Held across submit: a notifier firing before the stream is stored waits here, then delivers.
  std::unique_lock lock(record->mutex);
  LLAISYS_ASSIGN_OR_RETURN(record->stream, engine->engine->submit(std::move(request), std::move(notifier)));
  const RequestId id = record->stream.id();
  if (on_output == nullptr) {
    std::lock_guard polled_lock(engine->mutex);
    engine->polled.emplace(id, record);
  }
  *request_id = id;
  return Status();
}

Status poll(llaisys_engine* engine, llaisys_request_id request_id, int32_t timeout_ms, llaisys_output** output) {
  if (engine == nullptr) return null_argument("engine");
  if (output == nullptr) return null_argument("output");
  std::shared_ptr<RequestRecord> record;
  {
    std::lock_guard lock(engine->mutex);
    auto it = engine->polled.find(request_id);
    if (it != engine->polled.end()) record = it->second;
  }
  const auto not_found = [&] {
    return make_error(ErrorCode::not_found,
                      "request {} is not waiting to be polled (unknown, delivered through a callback, or its "
                      "last output was already returned)",
                      request_id);
  };
  if (!record) return not_found();
  std::lock_guard consumer(record->mutex);
  if (record->finished) return not_found();  // another poller took the last output meanwhile
  llaisys_output* merged = drain(*record, timeout_ms);
  if (record->finished) {
    std::lock_guard lock(engine->mutex);
    engine->polled.erase(request_id);
  }
  *output = merged;
  return Status();
}

void fill_stats(const AsyncEngine& engine, llaisys_stats& out) {
  const EngineStats stats = engine.stats();
  out = llaisys_stats{.struct_size = sizeof(llaisys_stats),
                      .num_in_flight = engine.num_in_flight(),
                      .num_unfinished_requests = stats.num_unfinished_requests,
                      .num_running_seqs = stats.num_running_seqs,
                      .num_waiting_seqs = stats.num_waiting_seqs,
                      .kv_block_size = stats.kv.block_size,
                      .kv_num_blocks = stats.kv.num_blocks,
                      .kv_num_used_blocks = stats.kv.num_used_blocks(),
                      .kv_num_free_blocks = stats.kv.num_free_blocks,
                      .kv_num_cached_blocks = stats.kv.num_cached_blocks,
                      .kv_usage = stats.kv.usage(),
                      .prefix_query_tokens = stats.prefix_query_tokens,
                      .prefix_hit_tokens = stats.prefix_hit_tokens,
                      .num_preemptions = stats.num_preemptions,
                      .num_generated_tokens = stats.num_generated_tokens,
                      .num_steps = stats.num_steps};
}

void fill_info(const llaisys_engine& engine, llaisys_engine_info& out) {
  out = llaisys_engine_info{.struct_size = sizeof(llaisys_engine_info)};
  const ModelInfo& info = engine.info;
  std::strncpy(out.architecture, info.architecture.c_str(), sizeof(out.architecture) - 1);
  out.vocab_size = info.vocab_size;
  out.max_context = info.max_context;
  out.max_sequence_tokens = engine.engine->max_sequence_tokens();
  out.bos_token_id = info.bos_token_id;
  const std::size_t num_eos = std::min(info.eos_token_ids.size(), std::size(out.eos_token_ids));
  out.num_eos_token_ids = static_cast<int32_t>(num_eos);
  std::copy_n(info.eos_token_ids.begin(), num_eos, out.eos_token_ids);
  out.has_tokenizer = engine.text.tokenizer != nullptr;
  std::strncpy(out.chat_template_source, engine.text.chat_template_source.c_str(),
               sizeof(out.chat_template_source) - 1);
}

}  // namespace
}  // namespace llaisys::capi

using llaisys::capi::guarded;
using llaisys::capi::null_argument;

extern "C" {

llaisys_status llaisys_engine_open(const char* model_path, const char* options_json, llaisys_engine** engine) {
  return guarded([&] { return llaisys::capi::open_engine(model_path, options_json, engine); });
}

void llaisys_engine_close(llaisys_engine* engine) {
  if (engine == nullptr) return;
  try {
    // Every unfinished request gets its final output (callbacks run on the engine thread meanwhile),
    // then the thread ends; polled records and their streams go with the handle.
    engine->engine->shutdown(llaisys::ShutdownMode::abort);
  } catch (...) {
    // shutdown only joins the engine thread; nothing it throws can be reported from a void function.
  }
  delete engine;
}

llaisys_status llaisys_engine_get_info(const llaisys_engine* engine, llaisys_engine_info* info) {
  return guarded([&]() -> llaisys::Status {
    if (engine == nullptr) return null_argument("engine");
    return llaisys::capi::fill_sized(info, "llaisys_engine_info",
                                     [&](llaisys_engine_info& out) { llaisys::capi::fill_info(*engine, out); });
  });
}

llaisys_status llaisys_engine_submit(llaisys_engine* engine, const llaisys_prompt* prompt,
                                     const llaisys_sampling_params* params, llaisys_output_callback on_output,
                                     void* user, llaisys_request_id* request_id) {
  return guarded([&] { return llaisys::capi::submit(engine, prompt, params, on_output, user, request_id); });
}

llaisys_status llaisys_engine_poll(llaisys_engine* engine, llaisys_request_id request_id, int32_t timeout_ms,
                                   llaisys_output** output) {
  return guarded([&] { return llaisys::capi::poll(engine, request_id, timeout_ms, output); });
}

llaisys_status llaisys_engine_abort(llaisys_engine* engine, llaisys_request_id request_id) {
  return guarded([&]() -> llaisys::Status {
    if (engine == nullptr) return null_argument("engine");
    engine->engine->abort(request_id);
    return llaisys::Status();
  });
}

llaisys_status llaisys_engine_stats(const llaisys_engine* engine, llaisys_stats* stats) {
  return guarded([&]() -> llaisys::Status {
    if (engine == nullptr) return null_argument("engine");
    return llaisys::capi::fill_sized(stats, "llaisys_stats",
                                     [&](llaisys_stats& out) { llaisys::capi::fill_stats(*engine->engine, out); });
  });
}

}  // extern "C"
