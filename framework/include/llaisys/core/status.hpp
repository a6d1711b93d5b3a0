#pragma once
// Status / Result: the error currency of llaisys.
//
// Contract: functions whose failure is caused by their input (files, requests, plugins, configs)
// return Status or Result<T>; they do not throw. Exceptions are reserved for programming errors and
// allocation failure, and never cross a plugin boundary (see model/plugin_export.hpp) or a server
// handler (the server turns them into a 500).

#include <cassert>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace llaisys {

// Numeric values are part of the plugin ABI (llaisys_error::code); append only.
enum class ErrorCode : int {
  ok = 0,
  invalid_argument = 1,   // the caller's input is wrong (request field, batch, option)
  not_found = 2,          // a file, tensor, model, route or plugin that should exist does not
  unsupported = 3,        // valid input this build cannot handle (dtype, rope kind, device)
  out_of_memory = 4,      // allocation or KV capacity exhausted
  io_error = 5,           // the OS said no (open, read, mmap, dlopen)
  parse_error = 6,        // malformed bytes: JSON, TOML, safetensors, tokenizer, template
  plugin_error = 7,       // a plugin is unusable (missing entry point, ABI mismatch, conflict)
  internal = 8,           // a bug in llaisys; the process keeps serving
  cancelled = 9,          // the work was aborted on request
  resource_exhausted = 10,// a limit was reached (queue, concurrency, context length)
};

std::string_view to_string(ErrorCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status success() noexcept { return {}; }

  bool ok() const noexcept { return code_ == ErrorCode::ok; }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // Prefixes the message with where it happened: "loading config.json: expected an object".
  Status& with_context(std::string_view context) & {
    if (!ok()) message_ = fmt::format("{}: {}", context, message_);
    return *this;
  }
  Status&& with_context(std::string_view context) && { return std::move(with_context(context)); }

  // "parse_error: loading config.json: expected an object"
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::ok;
  std::string message_;
};

template <class... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

// A value or the Status that explains why there is none. Never holds an ok Status.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cvref_t<T>, Status>, "use Status for Result<void>");

 public:
  Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}  // NOLINT implicit
  Result(Status error) : storage_(std::in_place_index<1>, std::move(error)) {  // NOLINT implicit
    assert(!std::get<1>(storage_).ok() && "Result constructed from an ok Status");
    if (std::get<1>(storage_).ok()) {
      std::get<1>(storage_) = Status(ErrorCode::internal, "Result built from an ok Status");
    }
  }

  bool ok() const noexcept { return storage_.index() == 0; }

  T& value() & { return std::get<0>(storage_); }
  const T& value() const& { return std::get<0>(storage_); }
  T&& value() && { return std::get<0>(std::move(storage_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error; an ok Status when a value is held.
  Status status() const { return ok() ? Status() : std::get<1>(storage_); }
  Status&& take_status() && { return std::get<1>(std::move(storage_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> storage_;
};

}  // namespace llaisys

#define LLAISYS_CONCAT_INNER(a, b) a##b
#define LLAISYS_CONCAT(a, b) LLAISYS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) failed.
#define LLAISYS_RETURN_IF_ERROR(expr)                                  \
  do {                                                                 \
    ::llaisys::Status llaisys_status_tmp_ = (expr);                    \
    if (!llaisys_status_tmp_.ok()) return llaisys_status_tmp_;         \
  } while (false)

// `LLAISYS_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its Status.
#define LLAISYS_ASSIGN_OR_RETURN(lhs, expr)                                          \
  LLAISYS_ASSIGN_OR_RETURN_IMPL(LLAISYS_CONCAT(llaisys_result_, __LINE__), lhs, expr)
#define LLAISYS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
