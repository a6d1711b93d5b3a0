#pragma once
// What the C API's translation units share: the engine handle, the per-request record, error
// reporting at the boundary (no exception crosses it) and the conversions between C and C++ values.

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "llaisys/engine/async_engine.hpp"
#include "llaisys/llaisys.h"
#include "llaisys/text/chat_template.hpp"
#include "llaisys/text/tokenizer.hpp"
#include "served_model.hpp"

namespace llaisys::capi {

// ---- errors ------------------------------------------------------------------------------------

// Records a failed status as this thread's last error; returns its code (0 for ok).
llaisys_status report(const Status& status) noexcept;

// Runs `body` (returning a Status) so that nothing escapes into C: exceptions become out_of_memory or
// internal errors with their message.
template <class Body>
llaisys_status guarded(Body&& body) noexcept {
  try {
    return report(body());
  } catch (const std::bad_alloc&) {
    return report(Status(ErrorCode::out_of_memory, "out of memory"));
  } catch (const std::exception& e) {
    return report(Status(ErrorCode::internal, std::string("internal error: ") + e.what()));
  } catch (...) {
    return report(Status(ErrorCode::internal, "internal error"));
  }
}

inline Status null_argument(const char* name) {
  return make_error(ErrorCode::invalid_argument, "'{}' must not be NULL", name);
}

// Output structs: the caller's struct_size says how much it has room for; a larger one than this
// library knows gets the known prefix (struct_size then says how much was filled).
template <class T, class Fill>
Status fill_sized(T* out, const char* name, Fill&& fill) {
  if (out == nullptr) return null_argument(name);
  if (out->struct_size < sizeof(uint32_t)) {
    return make_error(ErrorCode::invalid_argument, "{}.struct_size must be set (to sizeof({}))", name, name);
  }
  T full{};
  fill(full);
  const std::size_t bytes = std::min<std::size_t>(out->struct_size, sizeof(T));
  std::memcpy(out, &full, bytes);
  out->struct_size = static_cast<uint32_t>(bytes);
  return Status();
}

// ---- options -----------------------------------------------------------------------------------

// llaisys_engine_open's options_json, read into what app::load_served_model takes.
struct OpenOptions {
  app::ModelLoadOptions load;
  std::filesystem::path plugin_dir;  // empty: beside the library
  int32_t max_in_flight = AsyncEngineConfig{}.max_in_flight;
};

Result<OpenOptions> parse_open_options(const std::filesystem::path& model, const char* options_json);

// The engine options that concern the model alone (llaisys_model_open takes these and no others).
inline constexpr const char* kModelOptionKeys[] = {"threads", "device", "model_options", "plugin_dir"};
// parse_open_options, refusing every key outside kModelOptionKeys by name.
Result<OpenOptions> parse_model_open_options(const std::filesystem::path& model, const char* options_json);

// Checks that options.load.model_dir exists and loads the plugins of options.plugin_dir (default:
// beside this library): what llaisys_engine_open and llaisys_model_open both open a model through.
Result<PluginRegistry> load_registry(const OpenOptions& options);

// ---- requests and outputs ----------------------------------------------------------------------

// One submitted request as the C side tracks it until its last output is delivered.
struct RequestRecord {
  std::mutex mutex;                    // one consumer at a time (a poller, or the engine's notifier)
  RequestStream stream;                // set right after submit, reset after the last output
  std::vector<TokenId> prompt_ids;     // handed out with the first output, then emptied
  bool prompt_delivered = false;
  int32_t num_top_logprobs = -1;       // the request's `logprobs`
  bool finished = false;               // the last output was delivered
  llaisys_output_callback callback = nullptr;
  void* user = nullptr;
};

// Merges the outputs popped for `record` (in order) into one C output; the first one delivered
// carries the prompt ids. Sets record.finished when the last output is among them.
llaisys_output* merge_outputs(std::vector<RequestOutput>& outputs, RequestRecord& record);

// The model's text side, fixed at open.
struct EngineText {
  std::shared_ptr<const text::Tokenizer> tokenizer;  // null: the model has none
  std::optional<text::ChatTemplate> chat_template;
  Status chat_template_status;                       // why there is none
  std::string chat_template_source;
  Status require_tokenizer() const;
  Result<std::string> render(const boost::json::value& messages, const text::ChatRenderOptions& options) const;
};

// The prompt of a request as token ids: text encoded, messages rendered and encoded, ids checked by
// the engine later.
Result<std::vector<TokenId>> prompt_ids(const EngineText& model_text, const llaisys_prompt& prompt);
// The engine's GenerateRequest fields from the C sampling parameters (ranges are the engine's checks).
Result<GenerateRequest> generate_request(const llaisys_sampling_params* params);

// Copies `bytes` into a NUL-terminated malloc'ed buffer (freed by llaisys_free).
Result<char*> malloc_string(std::string_view bytes);

}  // namespace llaisys::capi

// The opaque handle of the header.
struct llaisys_engine {
  llaisys::ModelInfo info;
  llaisys::capi::EngineText text;
  std::unique_ptr<llaisys::AsyncEngine> engine;
  mutable std::mutex mutex;  // guards `polled`
  std::unordered_map<llaisys::RequestId, std::shared_ptr<llaisys::capi::RequestRecord>> polled;
};
