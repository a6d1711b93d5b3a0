#pragma once
// Logging with a replaceable sink.
//
// The host (an app) installs a sink once at start-up (apps use spdlog, see apps/common); a plugin's
// export adapter installs the host's callback from llaisys_model_params, so a plugin's messages land
// in the host's log. Without a sink, messages at or above `info` go to stderr. Messages are plain
// text; the sink adds time and level.

#include <string_view>

#include <fmt/format.h>

namespace llaisys::log {

// Numeric values are part of the plugin ABI (llaisys_model_params::log); append only.
enum class Level : int { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 };

using Sink = void (*)(void* user, int level, const char* message);

void set_sink(Sink sink, void* user) noexcept;
void set_level(Level level) noexcept;
Level level() noexcept;
bool enabled(Level level) noexcept;
void write(Level level, std::string_view message) noexcept;
// "trace" ... "error", "off"; returns false for anything else.
bool parse_level(std::string_view text, Level& out) noexcept;

template <class... Args>
void emit(Level lvl, fmt::format_string<Args...> format, Args&&... args) {
  if (!enabled(lvl)) return;
  write(lvl, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::debug, f, std::forward<Args>(a)...);
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::info, f, std::forward<Args>(a)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::warn, f, std::forward<Args>(a)...);
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  emit(Level::error, f, std::forward<Args>(a)...);
}

}  // namespace llaisys::log
