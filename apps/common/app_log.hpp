#pragma once
// Logging for the apps: installs an spdlog stderr sink behind llaisys::log (plugins included).

#include <string_view>

#include "llaisys/core/log.hpp"

namespace llaisys::app {

// Call once from main(), before anything logs. `level` is "trace".."error" or "off".
void init_logging(std::string_view level);

}  // namespace llaisys::app
