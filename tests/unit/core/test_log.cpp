#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/core/log.hpp"

using namespace llaisys;

TEST_CASE("log messages reach the installed sink above the level") {
  std::vector<std::pair<int, std::string>> seen;
  log::set_sink(
      [](void* user, int level, const char* message) {
        static_cast<std::vector<std::pair<int, std::string>>*>(user)->emplace_back(level, message);
      },
      &seen);
  log::set_level(log::Level::info);
  log::debug("hidden {}", 1);
  log::info("shown {}", 2);
  log::error("also {}", "shown");
  log::set_sink(nullptr, nullptr);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == std::pair<int, std::string>{2, "shown 2"});
  CHECK(seen[1] == std::pair<int, std::string>{4, "also shown"});

  log::Level parsed{};
  CHECK(log::parse_level("warning", parsed));
  CHECK(parsed == log::Level::warn);
  CHECK_FALSE(log::parse_level("loud", parsed));
}
