#include "llaisys/core/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace llaisys::log {
namespace {

struct SinkState {
  Sink sink = nullptr;
  void* user = nullptr;
};

std::atomic<int> g_level{static_cast<int>(Level::info)};
std::mutex g_mutex;
SinkState g_sink;  // guarded by g_mutex

constexpr std::string_view level_name(Level lvl) {
  switch (lvl) {
    case Level::trace: return "trace";
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
    case Level::off: return "off";
  }
  return "?";
}

}  // namespace

void set_sink(Sink sink, void* user) noexcept {
  std::lock_guard lock(g_mutex);
  g_sink = {sink, user};
}

void set_level(Level lvl) noexcept { g_level.store(static_cast<int>(lvl), std::memory_order_relaxed); }

Level level() noexcept { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }

bool enabled(Level lvl) noexcept {
  return lvl != Level::off && static_cast<int>(lvl) >= g_level.load(std::memory_order_relaxed);
}

void write(Level lvl, std::string_view message) noexcept {
  try {
    std::lock_guard lock(g_mutex);
    if (g_sink.sink != nullptr) {
      const std::string text(message);
      g_sink.sink(g_sink.user, static_cast<int>(lvl), text.c_str());
      return;
    }
    std::fprintf(stderr, "[llaisys %.*s] %.*s\n", static_cast<int>(level_name(lvl).size()),
                 level_name(lvl).data(), static_cast<int>(message.size()), message.data());
  } catch (...) {
    // Logging must never take the process down.
  }
}

bool parse_level(std::string_view text, Level& out) noexcept {
  for (Level lvl : {Level::trace, Level::debug, Level::info, Level::warn, Level::error, Level::off}) {
    if (text == level_name(lvl)) {
      out = lvl;
      return true;
    }
  }
  if (text == "warning") {
    out = Level::warn;
    return true;
  }
  return false;
}

}  // namespace llaisys::log
