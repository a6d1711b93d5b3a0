#include "app_log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace llaisys::app {
namespace {

void spdlog_sink(void* user, int level, const char* message) {
  auto* logger = static_cast<spdlog::logger*>(user);
  const spdlog::level::level_enum spd_level = [level] {
    switch (static_cast<log::Level>(level)) {
      case log::Level::trace: return spdlog::level::trace;
      case log::Level::debug: return spdlog::level::debug;
      case log::Level::info: return spdlog::level::info;
      case log::Level::warn: return spdlog::level::warn;
      case log::Level::error: return spdlog::level::err;
      case log::Level::off: return spdlog::level::off;
    }
    return spdlog::level::info;
  }();
  logger->log(spd_level, "{}", message);
}

}  // namespace

void init_logging(std::string_view level) {
  log::Level parsed = log::Level::info;
  if (!log::parse_level(level, parsed)) parsed = log::Level::info;
  static std::shared_ptr<spdlog::logger> logger = spdlog::stderr_color_mt("llaisys");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(spdlog::level::trace);  // llaisys::log filters first
  log::set_level(parsed);
  log::set_sink(&spdlog_sink, logger.get());
}

}  // namespace llaisys::app
