// WeightStore: model directories with one file or shards, what the model needs and how it is laid out.

#include <fstream>

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "llaisys/model/safetensors.hpp"
#include "safetensors_builder.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

void write_file(const TempDir& dir, const std::string& name, const std::vector<std::byte>& bytes) {
  dir.write(name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// a: bf16 [2, 2] (data bytes 1, 8, 15, ...), b: f32 [3].
std::vector<std::byte> two_tensors() {
  return safetensors_image(header_of({entry("a", "BF16", "2,2", 0, 8), entry("b", "F32", "3", 8, 20)}), 20);
}

}  // namespace

TEST_CASE("weight store: a single model.safetensors", "[weights][store]") {
  TempDir dir;
  write_file(dir, "model.safetensors", two_tensors());
  auto store = WeightStore::open(dir.path());
  REQUIRE(store.ok());
  CHECK(store->num_files() == 1);
  CHECK(store->num_tensors() == 2);
  CHECK(store->total_tensor_bytes() == 20);
  CHECK(store->names() == std::vector<std::string>{"a", "b"});
  auto a = store->require("a", Shape{2, 2});
  REQUIRE(a.ok());
  CHECK(a->dtype() == DType::bf16);
  // Element 0 holds the first two data bytes, little-endian: 0x01, 0x08.
  CHECK(a->data_as<const uint16_t>()[0] == 0x0801);

  SECTION("a tensor the model needs is missing") {
    const Status s = store->require("c", Shape{2}).status();
    CHECK(s.code() == ErrorCode::not_found);
    CHECK_THAT(s.message(), Catch::Contains("missing tensor 'c'"));
  }
  SECTION("a tensor with the wrong shape for the config") {
    const Status s = store->require("a", Shape{4}).status();
    CHECK(s.code() == ErrorCode::invalid_argument);
    CHECK_THAT(s.message(), Catch::Contains("'a' has the wrong shape [2, 2]") && Catch::Contains("needs [4]"));
  }
}

TEST_CASE("weight store: misaligned tensors are copied to aligned memory", "[weights][store]") {
  TempDir dir;
  // A 1-byte tensor first puts the bf16 one at an odd file offset.
  std::string header = header_of({entry("odd", "U8", "1", 0, 1), entry("w", "BF16", "2", 1, 5)});
  header.append((8 - header.size() % 8) % 8, ' ');
  const auto file = safetensors_image(header, 5);
  write_file(dir, "model.safetensors", file);
  auto store = WeightStore::open(dir.path());
  REQUIRE(store.ok());
  auto w = store->require("w", Shape{2});
  REQUIRE(w.ok());
  CHECK(reinterpret_cast<uintptr_t>(w->data()) % 2 == 0);
  const std::size_t data = 8 + header.size();
  CHECK(w->data_as<const uint16_t>()[0] ==
        (static_cast<uint16_t>(file[data + 1]) | static_cast<uint16_t>(static_cast<uint16_t>(file[data + 2]) << 8)));
}

TEST_CASE("weight store: sharded models follow model.safetensors.index.json", "[weights][store]") {
  TempDir dir;
  write_file(dir, "s1.safetensors", safetensors_image(header_of({entry("a", "BF16", "2,2", 0, 8)}), 8));
  write_file(dir, "s2.safetensors", safetensors_image(header_of({entry("b", "F32", "3", 0, 12)}), 12));
  const std::string good_index = R"({"metadata": {"total_size": 20}, "weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})";

  SECTION("a consistent index") {
    dir.write("model.safetensors.index.json", good_index);
    auto store = WeightStore::open(dir.path());
    REQUIRE(store.ok());
    CHECK(store->num_files() == 2);
    CHECK(store->names() == std::vector<std::string>{"a", "b"});
  }

  auto open_error = [&](const std::string& index) {
    dir.write("model.safetensors.index.json", index);
    auto store = WeightStore::open(dir.path());
    REQUIRE_FALSE(store.ok());
    return store.status();
  };
  SECTION("index that is not JSON") {
    CHECK_THAT(open_error("{\"weight_map\": ").message(), Catch::Contains("invalid JSON"));
  }
  SECTION("index without a weight map") {
    CHECK_THAT(open_error(R"({"metadata": {}})").message(), Catch::Contains("no \"weight_map\""));
  }
  SECTION("index naming a shard that does not exist") {
    const Status s = open_error(R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})");
    CHECK(s.code() == ErrorCode::not_found);
    CHECK_THAT(s.message(), Catch::Contains("index names shard 's3.safetensors'"));
  }
  SECTION("index naming a file outside the model directory") {
    CHECK_THAT(open_error(R"({"weight_map": {"a": "../s1.safetensors"}})").message(),
               Catch::Contains("not a file name in the model directory"));
  }
  SECTION("index listing a tensor its shard lacks") {
    CHECK_THAT(open_error(R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors", "c": "s2.safetensors"}})")
                   .message(),
               Catch::Contains("index lists tensor 'c'") && Catch::Contains("has no such tensor"));
  }
  SECTION("a shard holding a tensor the index puts in another shard") {
    write_file(dir, "s2.safetensors",
               safetensors_image(header_of({entry("b", "F32", "3", 0, 12), entry("a", "BF16", "2,2", 12, 20)}), 20));
    CHECK_THAT(open_error(good_index).message(), Catch::Contains("holds tensor 'a' which the index does not list"));
  }
  SECTION("index with a duplicate key") {
    CHECK_THAT(open_error(R"({"weight_map": {"a": "s1.safetensors", "a": "s2.safetensors"}})").message(),
               Catch::Contains("duplicate key 'a'"));
  }
  SECTION("a corrupt shard names itself") {
    write_file(dir, "s2.safetensors", safetensors_image(header_of({entry("b", "F32", "3", 0, 12)}), 14));
    CHECK_THAT(open_error(good_index).message(), Catch::Contains("s2.safetensors") && Catch::Contains("trailing bytes"));
  }
}

TEST_CASE("weight store: directories without weights, and files that are not files", "[weights][store]") {
  TempDir dir;
  auto store = WeightStore::open(dir.path());
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == ErrorCode::not_found);
  CHECK_THAT(store.status().message(), Catch::Contains("no model.safetensors or model.safetensors.index.json"));

  std::filesystem::create_directories(dir / "model.safetensors");
  auto on_directory = WeightStore::open(dir.path());
  REQUIRE_FALSE(on_directory.ok());
  CHECK_THAT(on_directory.status().message(), Catch::Contains("not a regular file"));
  std::filesystem::remove(dir / "model.safetensors");

  // A named pipe with no writer: opening it for reading would wait for a writer forever.
  REQUIRE(mkfifo((dir / "model.safetensors").c_str(), 0600) == 0);
  for (WeightLoading loading : {WeightLoading::map, WeightLoading::memory, WeightLoading::automatic}) {
    auto on_fifo = WeightStore::open(dir.path(), loading);
    REQUIRE_FALSE(on_fifo.ok());
    CHECK_THAT(on_fifo.status().message(), Catch::Contains("not a regular file"));
  }
  std::filesystem::remove(dir / "model.safetensors");
  dir.write("model.safetensors", "");
  auto empty = WeightStore::open(dir.path());
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(empty.status().message(), Catch::Contains("too short"));
}
