#include <catch2/catch.hpp>

#include "llaisys/core/config.hpp"
#include "temp_dir.hpp"

using namespace llaisys;

TEST_CASE("TOML config: typed lookups with clear errors") {
  auto table = config::parse(R"(
[server]
port = 8080
host = "127.0.0.1"
cors = true
[sampling]
temperature = 1
top_p = 0.9
)", "test.toml");
  REQUIRE(table.ok());
  CHECK(config::get<int64_t>(*table, "server.port").value() == 8080);
  CHECK(config::get<std::string>(*table, "server.host").value() == "127.0.0.1");
  CHECK(config::get<bool>(*table, "server.cors").value() == true);
  CHECK(config::get<double>(*table, "sampling.temperature").value() == 1.0);  // int accepted as float
  CHECK(config::get<double>(*table, "sampling.top_p").value() == 0.9);
  CHECK_FALSE(config::get<int64_t>(*table, "server.missing").value().has_value());
  CHECK(config::get_or<int64_t>(*table, "server.threads", 4).value() == 4);

  auto wrong = config::get<int64_t>(*table, "server.host");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() == "config key 'server.host': expected integer, found string");
}

TEST_CASE("TOML config: syntax errors name file, line and column") {
  auto bad = config::parse("a = 1\nb = = 2\n", "broken.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::parse_error);
  CHECK_THAT(bad.status().message(), Catch::StartsWith("broken.toml:2:"));

  test::TempDir dir;
  auto file = dir.write("x.toml", "[model]\nname = \"tiny\"\n");
  auto loaded = config::load_file(file);
  REQUIRE(loaded.ok());
  CHECK(config::get<std::string>(*loaded, "model.name").value() == "tiny");
  CHECK(config::load_file(dir / "missing.toml").status().code() == ErrorCode::io_error);
}
