// ConfigReader (llaisys/model/config_reader.hpp): typed reads that name the key, nested objects,
// generation_config.json, the record of keys read, and the file rules (size cap, not a regular file).

#include <catch2/catch.hpp>

#include "llaisys/model/config_reader.hpp"
#include "temp_dir.hpp"

using namespace llaisys;

namespace {

ConfigReader parsed(std::string_view text, std::optional<std::string_view> generation = std::nullopt) {
  auto reader = ConfigReader::parse(text, generation, "m/config.json");
  REQUIRE(reader.ok());
  return std::move(reader).value();
}

}  // namespace

TEST_CASE("config reader: typed reads, fallbacks and messages that name the key", "[weights][config]") {
  const ConfigReader c = parsed(R"({"n": 7, "f": 4096.0, "x": 1.5, "b": true, "s": "silu", "z": null,
                                    "big": 99999999999, "neg": -3, "list": ["a", "b"], "ids": [1, 2], "id": 5})");
  CHECK(c.integer("n").value() == 7);
  CHECK(c.integer("f").value() == 4096);  // an integer written as a float
  CHECK(c.integer("missing", 3).value() == 3);
  CHECK(c.integer("z", 4).value() == 4);  // null is absent
  CHECK_THAT(c.integer("missing").status().message(), Catch::Contains("m/config.json: missing \"missing\""));
  CHECK_THAT(c.integer("x").status().message(), Catch::Contains("\"x\" must be an integer, got 1.5"));
  CHECK_THAT(c.integer("big").status().message(), Catch::Contains("\"big\" = 9223372036854775807 is outside") ||
                                                      Catch::Contains("\"big\" = 99999999999 is outside"));
  CHECK_THAT(c.integer("neg").status().message(), Catch::Contains("\"neg\" = -3 is outside [1,"));
  CHECK(c.integer("neg", std::nullopt, -5).value() == -3);
  CHECK(c.number("x").value() == 1.5);
  CHECK_THAT(c.number("s").status().message(), Catch::Contains("\"s\" must be a number, got \"silu\""));
  CHECK(c.boolean("b").value());
  CHECK_THAT(c.boolean("n").status().message(), Catch::Contains("\"n\" must be true or false"));
  CHECK(c.string("s").value() == std::optional<std::string>("silu"));
  CHECK_FALSE(c.string("z").value().has_value());
  CHECK(c.strings("list").value() == std::vector<std::string>{"a", "b"});
  CHECK_THAT(c.strings("ids").status().message(), Catch::Contains("\"ids\" must hold strings"));
  CHECK(c.integers("ids").value() == std::optional<std::vector<int32_t>>(std::vector<int32_t>{1, 2}));
  CHECK(c.integers("id").value() == std::optional<std::vector<int32_t>>(std::vector<int32_t>{5}));
  CHECK_THAT(c.integers("list").status().message(), Catch::Contains("\"list\" must hold integers"));
  CHECK(c.contains("n"));
  CHECK_FALSE(c.contains("z"));
  CHECK_FALSE(c.contains("nothing"));
  CHECK(c.unsupported("s", "why").code() == ErrorCode::unsupported);
  CHECK_THAT(c.unsupported("s", "why").message(), Catch::Contains("m/config.json: \"s\" = \"silu\" is not supported: why"));
}

TEST_CASE("config reader: unread keys are what no one read or marked", "[weights][config]") {
  const ConfigReader c = parsed(R"({"a": 1, "b": 2, "c": {"d": 3, "e": 4}, "f": null})");
  CHECK(c.unread_keys() == std::vector<std::string>{"a", "b", "c", "f"});
  (void)c.integer("a");
  c.mark_read({"f"});
  const ConfigReader copy = c;  // copies share what was read
  auto nested = copy.object("c");
  REQUIRE(nested.ok());
  REQUIRE(nested->has_value());
  CHECK(c.unread_keys() == std::vector<std::string>{"b"});
  CHECK((*nested)->source() == "m/config.json: c");
  CHECK((*nested)->integer("d").value() == 3);
  CHECK((*nested)->unread_keys() == std::vector<std::string>{"e"});
  CHECK_THAT(c.object("a").status().message(), Catch::Contains("\"a\" must be an object or null"));
}

TEST_CASE("config reader: generation_config.json and the files of a directory", "[weights][config]") {
  const ConfigReader c = parsed(R"({"eos_token_id": 2})", R"({"eos_token_id": [3, 4]})");
  REQUIRE(c.generation() != nullptr);
  CHECK(c.generation()->integers("eos_token_id").value()->size() == 2);
  CHECK_THAT(c.generation()->source(), Catch::Contains("generation_config.json"));

  test::TempDir dir;
  CHECK(ConfigReader::load(dir.path()).status().code() == ErrorCode::not_found);
  CHECK_THAT(ConfigReader::load(dir.path()).status().message(), Catch::Contains("is not a model directory"));
  dir.write("config.json", R"({"a": 1})");
  auto loaded = ConfigReader::load(dir.path());
  REQUIRE(loaded.ok());
  CHECK(loaded->generation() == nullptr);
  dir.write("generation_config.json", "{broken");
  CHECK(ConfigReader::load(dir.path()).status().code() == ErrorCode::parse_error);
  dir.write("generation_config.json", "{}");
  dir.write("config.json", R"({"a": 1, "a": 2})");
  CHECK_THAT(ConfigReader::load(dir.path()).status().message(), Catch::Contains("duplicate key 'a'"));
  dir.write("config.json", "[1, 2]");
  CHECK_THAT(ConfigReader::load(dir.path()).status().message(), Catch::Contains("expected a JSON object"));
  dir.write("config.json", std::string(ConfigReader::kMaxFileBytes + 1, ' '));
  CHECK_THAT(ConfigReader::load(dir.path()).status().message(), Catch::Contains("byte limit"));
  std::filesystem::remove(dir / "config.json");
  std::filesystem::create_directory(dir / "config.json");
  CHECK_THAT(ConfigReader::load(dir.path()).status().message(), Catch::Contains("not a regular file"));
}
