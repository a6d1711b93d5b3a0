// The C API's process-wide pieces: versions, status codes and the per-thread last error, buffers,
// logging, and the defaults of the request structs.

#include <cstdlib>
#include <cstring>

#include "capi_internal.hpp"
#include "llaisys/core/log.hpp"
#include "llaisys/engine/request.hpp"

// The header's numbers are llaisys::ErrorCode's and FinishReason's (+ 1: 0 means running).
static_assert(LLAISYS_ERR_INVALID_ARGUMENT == static_cast<int>(llaisys::ErrorCode::invalid_argument));
static_assert(LLAISYS_ERR_NOT_FOUND == static_cast<int>(llaisys::ErrorCode::not_found));
static_assert(LLAISYS_ERR_UNSUPPORTED == static_cast<int>(llaisys::ErrorCode::unsupported));
static_assert(LLAISYS_ERR_OUT_OF_MEMORY == static_cast<int>(llaisys::ErrorCode::out_of_memory));
static_assert(LLAISYS_ERR_IO == static_cast<int>(llaisys::ErrorCode::io_error));
static_assert(LLAISYS_ERR_PARSE == static_cast<int>(llaisys::ErrorCode::parse_error));
static_assert(LLAISYS_ERR_PLUGIN == static_cast<int>(llaisys::ErrorCode::plugin_error));
static_assert(LLAISYS_ERR_INTERNAL == static_cast<int>(llaisys::ErrorCode::internal));
static_assert(LLAISYS_ERR_CANCELLED == static_cast<int>(llaisys::ErrorCode::cancelled));
static_assert(LLAISYS_ERR_RESOURCE_EXHAUSTED == static_cast<int>(llaisys::ErrorCode::resource_exhausted));
static_assert(LLAISYS_FINISH_STOP == 1 + static_cast<int>(llaisys::FinishReason::stop));
static_assert(LLAISYS_FINISH_LENGTH == 1 + static_cast<int>(llaisys::FinishReason::length));
static_assert(LLAISYS_FINISH_ABORT == 1 + static_cast<int>(llaisys::FinishReason::abort));
static_assert(LLAISYS_FINISH_ERROR == 1 + static_cast<int>(llaisys::FinishReason::error));
static_assert(LLAISYS_FINISH_IGNORED == 1 + static_cast<int>(llaisys::FinishReason::ignored));
// The log callback is handed to the framework's sink as it is.
static_assert(std::is_same_v<llaisys_log_callback, llaisys::log::Sink>);

namespace llaisys::capi {
namespace {

// Per thread, so concurrent callers never read each other's message (as errno, dlerror).
thread_local std::string t_last_error;

}  // namespace

llaisys_status report(const Status& status) noexcept {
  if (status.ok()) return LLAISYS_OK;
  try {
    t_last_error = status.message();
  } catch (...) {
    t_last_error.clear();  // no memory for the message: the code still says what happened
  }
  return static_cast<llaisys_status>(status.code());
}

Result<char*> malloc_string(std::string_view bytes) {
  auto* buffer = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (buffer == nullptr) return Status(ErrorCode::out_of_memory, "out of memory");
  if (!bytes.empty()) std::memcpy(buffer, bytes.data(), bytes.size());
  buffer[bytes.size()] = '\0';
  return buffer;
}

}  // namespace llaisys::capi

extern "C" {

uint32_t llaisys_version(void) { return LLAISYS_API_VERSION; }

const char* llaisys_status_name(llaisys_status status) {
  if (status < 0 || status > LLAISYS_ERR_RESOURCE_EXHAUSTED) return "unknown";
  return llaisys::to_string(static_cast<llaisys::ErrorCode>(status)).data();  // static NUL-terminated names
}

const char* llaisys_last_error(void) { return llaisys::capi::t_last_error.c_str(); }

void llaisys_free(void* buffer) { std::free(buffer); }

llaisys_status llaisys_set_log_level(const char* level) {
  return llaisys::capi::guarded([&] {
    llaisys::log::Level parsed{};
    if (level == nullptr || !llaisys::log::parse_level(level, parsed)) {
      return llaisys::make_error(llaisys::ErrorCode::invalid_argument,
                                 "log level '{}' is not one of trace, debug, info, warn, error, off",
                                 level == nullptr ? "(null)" : level);
    }
    llaisys::log::set_level(parsed);
    return llaisys::Status();
  });
}

void llaisys_set_log_callback(llaisys_log_callback callback, void* user) {
  llaisys::log::set_sink(callback, callback == nullptr ? nullptr : user);
}

const char* llaisys_finish_reason_name(int32_t reason) {
  if (reason == LLAISYS_FINISH_NONE) return "running";
  if (reason < LLAISYS_FINISH_STOP || reason > LLAISYS_FINISH_IGNORED) return "unknown";
  return llaisys::to_string(static_cast<llaisys::FinishReason>(reason - 1)).data();
}

void llaisys_sampling_params_init(llaisys_sampling_params* params) {
  if (params == nullptr) return;
  // vLLM's SamplingParams defaults (temperature 1, max_tokens 16).
  *params = llaisys_sampling_params{.struct_size = sizeof(llaisys_sampling_params),
                                    .max_tokens = 16,
                                    .min_tokens = 0,
                                    .n = 1,
                                    .temperature = 1.0f,
                                    .top_p = 1.0f,
                                    .top_k = 0,
                                    .min_p = 0.0f,
                                    .repetition_penalty = 1.0f,
                                    .presence_penalty = 0.0f,
                                    .frequency_penalty = 0.0f,
                                    .seed = -1,
                                    .stop = nullptr,
                                    .num_stop = 0,
                                    .stop_token_ids = nullptr,
                                    .num_stop_token_ids = 0,
                                    .ignore_eos = 0,
                                    .logprobs = -1,
                                    .skip_special_tokens = 1};
}

}  // extern "C"
