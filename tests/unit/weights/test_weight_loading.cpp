// How a model file's bytes come into memory (WeightLoading): mapped from the page cache, or read
// into private huge-page-aligned memory. Both must give the same bytes, the same tensors and the
// same errors; the memory copy must be read-only and aligned to 2 MiB; `auto` must not read a file
// into memory that cannot hold it.

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "llaisys/core/host_memory.hpp"
#include "llaisys/model/safetensors.hpp"
#include "safetensors_builder.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

void write_file(const TempDir& dir, const std::string& name, const std::vector<std::byte>& bytes) {
  dir.write(name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::vector<std::byte> read_back(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// The permissions column ("r--p", "rw-p", ...) of the mapping of /proc/self/maps holding `address`.
std::string permissions_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &begin, &end, perms) == 3 && begin <= at && at < end) return perms;
  }
  return "";
}

// A valid file of one bf16 tensor a little over one huge page, so the copy's rounding shows.
std::vector<std::byte> big_file(std::string* header_out = nullptr) {
  const std::size_t elements = kHugePage / 2 + 4096;
  const std::string header = header_of({entry("w", "BF16", std::to_string(elements), 0, 2 * elements)});
  if (header_out != nullptr) *header_out = header;
  return safetensors_image(header, 2 * elements);
}

}  // namespace

TEST_CASE("weight loading: names", "[weights][loading]") {
  for (WeightLoading mode : {WeightLoading::automatic, WeightLoading::map, WeightLoading::memory}) {
    CHECK(parse_weight_loading(to_string(mode)) == mode);
  }
  CHECK(to_string(WeightLoading::map) == "mmap");
  CHECK_FALSE(parse_weight_loading("Memory").has_value());
  CHECK_FALSE(parse_weight_loading("").has_value());
  CHECK(available_memory_bytes() > 0);
}

TEST_CASE("weight loading: mapped and in-memory files hold the file's bytes", "[weights][loading]") {
  TempDir dir;
  write_file(dir, "model.safetensors", big_file());
  const auto expected = read_back(dir / "model.safetensors");

  auto mapped = MappedFile::open(dir / "model.safetensors", WeightLoading::map);
  auto copied = MappedFile::open(dir / "model.safetensors", WeightLoading::memory);
  REQUIRE(mapped.ok());
  REQUIRE(copied.ok());
  CHECK(mapped->loading() == WeightLoading::map);
  CHECK(copied->loading() == WeightLoading::memory);
  REQUIRE(mapped->bytes().size() == expected.size());
  REQUIRE(copied->bytes().size() == expected.size());
  CHECK(std::memcmp(mapped->bytes().data(), expected.data(), expected.size()) == 0);
  CHECK(std::memcmp(copied->bytes().data(), expected.data(), expected.size()) == 0);
  // The copy starts on a huge page and is read-only, like the map.
  CHECK(reinterpret_cast<uintptr_t>(copied->bytes().data()) % kHugePage == 0);
  CHECK(permissions_of(copied->bytes().data()).substr(0, 3) == "r--");
  CHECK(permissions_of(mapped->bytes().data()).substr(0, 3) == "r--");

  // Moving keeps the bytes; the moved-from file is empty (and releasing it twice is harmless).
  const std::byte* where = copied->bytes().data();
  MappedFile moved = std::move(copied).value();
  CHECK(moved.bytes().data() == where);
  MappedFile other;
  other = std::move(moved);
  CHECK(other.bytes().data() == where);
  CHECK(moved.bytes().empty());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
}

TEST_CASE("weight loading: every mode gives the same tensors and the same errors", "[weights][loading]") {
  TempDir dir;
  std::string header;
  write_file(dir, "model.safetensors", big_file(&header));
  const auto file = read_back(dir / "model.safetensors");
  const std::size_t elements = kHugePage / 2 + 4096;

  for (WeightLoading mode : {WeightLoading::map, WeightLoading::memory, WeightLoading::automatic}) {
    INFO("loading " << to_string(mode));
    auto store = WeightStore::open(dir.path(), mode);
    REQUIRE(store.ok());
    // A small file with plenty of memory free: auto reads it into memory.
    CHECK(store->loading() == (mode == WeightLoading::map ? WeightLoading::map : WeightLoading::memory));
    auto w = store->require("w", Shape{static_cast<int64_t>(elements)});
    REQUIRE(w.ok());
    CHECK(std::memcmp(w->data(), file.data() + 8 + header.size(), 2 * elements) == 0);
  }

  // A shard with trailing bytes: the same message whichever way it was loaded.
  write_file(dir, "s1.safetensors", safetensors_image(header_of({entry("a", "BF16", "2,2", 0, 8)}), 8));
  write_file(dir, "s2.safetensors", safetensors_image(header_of({entry("b", "F32", "3", 0, 12)}), 14));
  dir.write("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
  std::filesystem::remove(dir / "model.safetensors");
  std::string first_message;
  for (WeightLoading mode : {WeightLoading::map, WeightLoading::memory}) {
    auto store = WeightStore::open(dir.path(), mode);
    REQUIRE_FALSE(store.ok());
    CHECK_THAT(store.status().message(), Catch::Contains("s2.safetensors") && Catch::Contains("trailing bytes"));
    if (first_message.empty()) first_message = store.status().message();
    CHECK(store.status().message() == first_message);
  }
  // And a good sharded model loads in memory, each shard on its own huge page.
  write_file(dir, "s2.safetensors", safetensors_image(header_of({entry("b", "F32", "3", 0, 12)}), 12));
  auto sharded = WeightStore::open(dir.path(), WeightLoading::memory);
  REQUIRE(sharded.ok());
  CHECK(sharded->num_files() == 2);
  CHECK(reinterpret_cast<uintptr_t>(sharded->find("a")->data()) % kHugePage == 8 + header_of({entry("a", "BF16", "2,2", 0, 8)}).size());
}

TEST_CASE("weight loading: an empty file is empty in every mode", "[weights][loading]") {
  TempDir dir;
  dir.write("empty", "");
  for (WeightLoading mode : {WeightLoading::map, WeightLoading::memory}) {
    auto file = MappedFile::open(dir / "empty", mode);
    REQUIRE(file.ok());
    CHECK(file->bytes().empty());
  }
}

TEST_CASE("weight loading: a file larger than the available memory is never read into memory", "[weights][loading]") {
  TempDir dir;
  // A sparse file (no disk blocks) a gigabyte larger than the memory available now.
  const uint64_t size = available_memory_bytes() + (uint64_t{1} << 30);
  {
    std::ofstream touch(dir / "model.safetensors");
  }
  if (::truncate((dir / "model.safetensors").c_str(), static_cast<off_t>(size)) != 0) {
    WARN("this file system cannot hold a sparse file of " << size << " bytes: not tested here");
    return;
  }
  auto copied = MappedFile::open(dir / "model.safetensors", WeightLoading::memory);
  REQUIRE_FALSE(copied.ok());
  CHECK(copied.status().code() == ErrorCode::out_of_memory);
  CHECK_THAT(copied.status().message(), Catch::Contains("do not fit") && Catch::Contains("mmap"));
  // auto maps it instead, and the parser then rejects its zero bytes like any corrupt header.
  auto store = WeightStore::open(dir.path(), WeightLoading::automatic);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == ErrorCode::parse_error);
}
