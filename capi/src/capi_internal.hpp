#pragma once
// What the C API's translation units share: the engine handle, the per-request record, error
// reporting at the boundary (no exception crosses it) and the conversions between C and C++ values.

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

// ---- options -----------------------------------------------------------------------------------

// llaisys_engine_open's options_json, read into what app::load_served_model takes.
struct OpenOptions {
  app::ModelLoadOptions load;
  std::filesystem::path plugin_dir;  // empty: beside the library
  int32_t max_in_flight = AsyncEngineConfig{}.max_in_flight;
};

Result<OpenOptions> parse_open_options(const std::filesystem::path& model, const char* options_json);

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
