// The GGUF corrupted-file suite: every truncation of a complete file, and one hand-built file per way
// a GGUF file can be wrong, each refused with its own words (llaisys/model/gguf.hpp lists them).

#include <limits>
#include <string>

#include <catch2/catch.hpp>

#include "gguf_builder.hpp"
#include "llaisys/model/gguf.hpp"

using namespace llaisys;
using namespace llaisys::gguf;
using namespace llaisys::test::gguf_values;
using llaisys::test::GgufBytes;

namespace {

constexpr uint64_t kHuge = ~uint64_t{0};

// Parses `file` and returns the error (failing the test if it parsed).
Status parse_error_of(const std::vector<std::byte>& file) {
  auto result = File::parse(file, "test.gguf");
  REQUIRE_FALSE(result.ok());
  return result.status();
}

void check_error(const std::vector<std::byte>& file, ErrorCode code, const std::string& words) {
  const Status s = parse_error_of(file);
  INFO(s.to_string());
  CHECK(s.code() == code);
  CHECK_THAT(s.message(), Catch::Contains(words) && Catch::Contains("test.gguf"));
}

// A header and one F32 [8] tensor `name` at offset 0, with its 32 bytes of data.
std::vector<std::byte> one_tensor_file(std::string_view name) {
  GgufBytes b;
  b.header(1, 0).tensor(name, {8}, 0, 0).pad_to(32).zeros(32);
  return b.bytes();
}

// A file with one tensor info (and 4 KiB of data after the padding).
std::vector<std::byte> tensor_file(std::initializer_list<uint64_t> dims, uint32_t type, uint64_t offset) {
  GgufBytes b;
  b.header(1, 0).tensor("t", dims, type, offset).pad_to(32).zeros(4096);
  return b.bytes();
}

}  // namespace

TEST_CASE("gguf: every truncation of a complete file is refused", "[weights][gguf]") {
  SECTION("a file that ends where its last tensor does") {
    const std::vector<std::byte> image = small_file();
    REQUIRE(File::parse(image, "test.gguf").ok());
    for (std::size_t size = 0; size < image.size(); ++size) {
      const std::vector<std::byte> prefix(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(size));
      auto result = File::parse(prefix, "test.gguf");
      INFO("prefix of " << size << " of " << image.size() << " bytes");
      REQUIRE_FALSE(result.ok());
      const Status status = result.status();
      INFO(status.message());
      CHECK(status.code() == ErrorCode::parse_error);
      CHECK_THAT(status.message(), Catch::Contains("test.gguf") && (Catch::Contains("not a GGUF file") ||
                                                                    Catch::Contains("truncated") ||
                                                                    Catch::Contains("out of range")));
    }
  }
  SECTION("only the padding after the last tensor may be missing") {
    Writer writer;
    REQUIRE(writer.add_tensor("t", {3}, type_id(TensorType::F32), pattern(12, 0)).ok());
    const std::vector<std::byte> padded = writer.bytes();
    const std::size_t end = padded.size() - 20;  // 12 bytes of data, then 20 of padding
    for (std::size_t size = 0; size <= padded.size(); ++size) {
      const std::vector<std::byte> prefix(padded.begin(), padded.begin() + static_cast<std::ptrdiff_t>(size));
      INFO("prefix of " << size);
      CHECK(File::parse(prefix, "test.gguf").ok() == (size >= end));
    }
  }
}

TEST_CASE("gguf: each corruption has its own error", "[weights][gguf]") {
  SECTION("not a GGUF file") {
    check_error({}, ErrorCode::parse_error, "not a GGUF file");
    GgufBytes short_file;
    short_file.raw("GGUF").u32(3).u64(0);
    check_error(short_file.bytes(), ErrorCode::parse_error, "not a GGUF file");
    GgufBytes bad_magic;
    bad_magic.raw("GGUX").u32(3).u64(0).u64(0);
    check_error(bad_magic.bytes(), ErrorCode::parse_error, "not a GGUF file");
    GgufBytes safetensors_like;
    safetensors_like.u64(16).raw("{\"a\":1}         ").zeros(8);
    check_error(safetensors_like.bytes(), ErrorCode::parse_error, "not a GGUF file");
  }
  SECTION("versions other than 2 and 3") {
    for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu, 0x03000000u}) {
      INFO("version " << version);
      GgufBytes b;
      b.header(0, 0, version);
      check_error(b.bytes(), ErrorCode::unsupported, "version");
    }
  }
  SECTION("counts near 2^64") {
    for (uint64_t count : {kHuge, kHuge - 1, uint64_t{1} << 63, uint64_t{1} << 62, uint64_t{1} << 60}) {
      INFO("count " << count);
      GgufBytes tensors;
      tensors.header(count, 0).zeros(64);
      check_error(tensors.bytes(), ErrorCode::parse_error, "truncated");
      GgufBytes entries;
      entries.header(0, count).zeros(64);
      check_error(entries.bytes(), ErrorCode::parse_error, "truncated");
      GgufBytes key_length;
      key_length.header(0, 1).u64(count).zeros(64);
      check_error(key_length.bytes(), ErrorCode::parse_error, "truncated");
      GgufBytes string_length;
      string_length.header(0, 1).key("k", 8).u64(count).zeros(64);
      check_error(string_length.bytes(), ErrorCode::parse_error, "truncated");
      GgufBytes name_length;
      name_length.header(1, 0).u64(count).zeros(64);
      check_error(name_length.bytes(), ErrorCode::parse_error, "truncated");
      for (uint32_t element_type : {0u, 6u, 8u, 9u, 12u}) {
        GgufBytes array_count;
        array_count.header(0, 1).key("k", 9).u32(element_type).u64(count).zeros(64);
        check_error(array_count.bytes(), ErrorCode::parse_error, "truncated");
      }
      GgufBytes inner_count;
      inner_count.header(0, 1).key("k", 9).u32(9).u64(1).u32(0).u64(count).zeros(64);
      check_error(inner_count.bytes(), ErrorCode::parse_error, "truncated");
    }
    // An array count that fits the bytes left only for a narrower element type.
    GgufBytes wide;
    wide.header(0, 1).key("k", 9).u32(10).u64(8).zeros(63);
    check_error(wide.bytes(), ErrorCode::parse_error, "truncated");
  }
  SECTION("unknown value types") {
    for (uint32_t type : {13u, 99u, 0xFFFFFFFFu}) {
      GgufBytes value;
      value.header(0, 1).key("k", type).zeros(16);
      check_error(value.bytes(), ErrorCode::parse_error, "value type");
      GgufBytes element;
      element.header(0, 1).key("k", 9).u32(type).u64(0);
      check_error(element.bytes(), ErrorCode::parse_error, "value type");
    }
  }
  SECTION("a boolean other than 0 or 1") {
    GgufBytes b;
    b.header(0, 1).key("flag", 7).put<uint8_t>(2);
    check_error(b.bytes(), ErrorCode::parse_error, "boolean");
    GgufBytes in_array;
    in_array.header(0, 1).key("flags", 9).u32(7).u64(2).put<uint8_t>(1).put<uint8_t>(0xFF);
    check_error(in_array.bytes(), ErrorCode::parse_error, "boolean");
  }
  SECTION("keys, names and strings over their limits") {
    GgufBytes key;
    key.header(0, 1).str(std::string(kMaxNameBytes + 1, 'k')).u32(0).put<uint8_t>(0);
    check_error(key.bytes(), ErrorCode::parse_error, "too long");
    GgufBytes name;
    name.header(1, 0).tensor(std::string(kMaxNameBytes + 1, 'n'), {8}, 0, 0).pad_to(32).zeros(32);
    check_error(name.bytes(), ErrorCode::parse_error, "too long");
    GgufBytes at_limit;
    at_limit.header(0, 1).str(std::string(kMaxNameBytes, 'k')).u32(0).put<uint8_t>(0);
    CHECK(File::parse(at_limit.bytes(), "test.gguf").ok());
  }
  SECTION("duplicate keys") {
    GgufBytes b;
    b.header(0, 3).kv_u32("a", 1).kv_string("b", "x").kv_u32("a", 1);
    check_error(b.bytes(), ErrorCode::parse_error, "duplicate key 'a'");
  }
  SECTION("general.alignment not a u32 power of two") {
    for (uint32_t alignment : {0u, 3u, 48u, 0xFFFFFFFFu}) {
      INFO("alignment " << alignment);
      GgufBytes b;
      b.header(0, 1).kv_u32("general.alignment", alignment);
      check_error(b.bytes(), ErrorCode::parse_error, "alignment");
    }
    GgufBytes u64;
    u64.header(0, 1).key("general.alignment", 10).u64(32);
    check_error(u64.bytes(), ErrorCode::parse_error, "alignment");
    GgufBytes text;
    text.header(0, 1).kv_string("general.alignment", "32");
    check_error(text.bytes(), ErrorCode::parse_error, "alignment");
    GgufBytes one;  // 1 is a power of two: no padding at all
    one.header(1, 1).kv_u32("general.alignment", 1).tensor("t", {3}, 0, 0).zeros(12);
    CHECK(File::parse(one.bytes(), "test.gguf").ok());
  }
  SECTION("tensor dims") {
    GgufBytes none;
    none.header(1, 0).str("t").u32(0).u32(0).u64(0).pad_to(32).zeros(32);
    check_error(none.bytes(), ErrorCode::parse_error, "dims");
    check_error(tensor_file({1, 1, 1, 1, 8}, 0, 0), ErrorCode::parse_error, "dims");
    check_error(tensor_file({8, 0}, 0, 0), ErrorCode::parse_error, "dims");
    check_error(tensor_file({uint64_t{1} << 63}, 0, 0), ErrorCode::parse_error, "dims");
    check_error(tensor_file({kHuge, 1}, 0, 0), ErrorCode::parse_error, "dims");
    CHECK(File::parse(tensor_file({8, 1, 1, 1}, 0, 0), "test.gguf").ok());
  }
  SECTION("dims whose product or byte size overflows") {
    check_error(tensor_file({uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0), ErrorCode::parse_error, "overflows");
    check_error(tensor_file({uint64_t{1} << 31, uint64_t{1} << 31, 2}, 0, 0), ErrorCode::parse_error, "overflows");
    check_error(tensor_file({uint64_t{1} << 62}, 0, 0), ErrorCode::parse_error, "overflows");  // 2^64 bytes
    check_error(tensor_file({uint64_t{1} << 61}, 0, 0), ErrorCode::parse_error, "overflows");  // 2^63 bytes
    check_error(tensor_file({uint64_t{1} << 60}, 0, 0), ErrorCode::parse_error, "out of range");  // 2^62 bytes
  }
  SECTION("unknown tensor types") {
    for (uint32_t type : {4u, 5u, 31u, 99u, 0xFFFFFFFFu}) {
      INFO("type " << type);
      check_error(tensor_file({32}, type, 0), ErrorCode::unsupported, "unknown tensor type");
    }
  }
  SECTION("a row that is not a whole number of blocks") {
    check_error(tensor_file({33, 2}, type_id(TensorType::Q8_0), 0), ErrorCode::parse_error, "block");
    check_error(tensor_file({128}, type_id(TensorType::Q4_K), 0), ErrorCode::parse_error, "block");
    check_error(tensor_file({32, 7}, type_id(TensorType::Q6_K), 0), ErrorCode::parse_error, "block");
    CHECK(File::parse(tensor_file({32, 7}, type_id(TensorType::Q8_0), 0), "test.gguf").ok());
  }
  SECTION("a misaligned offset") {
    check_error(tensor_file({8}, 0, 8), ErrorCode::parse_error, "misaligned");
    check_error(tensor_file({8}, 0, 33), ErrorCode::parse_error, "misaligned");
    CHECK(File::parse(tensor_file({8}, 0, 64), "test.gguf").ok());
  }
  SECTION("tensor bytes out of range of the file") {
    check_error(tensor_file({8}, 0, 4096), ErrorCode::parse_error, "out of range");    // ends 32 bytes past
    check_error(tensor_file({1024}, 0, 32), ErrorCode::parse_error, "out of range");   // 4 KiB from offset 32
    check_error(tensor_file({8}, 0, kHuge - 31), ErrorCode::parse_error, "out of range");  // offset wraps
    CHECK(File::parse(tensor_file({8}, 0, 4064), "test.gguf").ok());                   // ends exactly at the end
    GgufBytes no_data;
    no_data.header(1, 0).tensor("t", {8}, 0, 0);
    check_error(no_data.bytes(), ErrorCode::parse_error, "out of range");
  }
  SECTION("overlapping tensors") {
    GgufBytes b;
    b.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad_to(32).zeros(128);
    check_error(b.bytes(), ErrorCode::parse_error, "overlap");
    GgufBytes same_place;
    same_place.header(2, 0).tensor("a", {8}, 0, 64).tensor("b", {8}, 0, 64).pad_to(32).zeros(128);
    check_error(same_place.bytes(), ErrorCode::parse_error, "overlap");
    GgufBytes reordered;  // out of order and with gaps is fine
    reordered.header(2, 0).tensor("a", {8}, 0, 64).tensor("b", {16}, 0, 0).pad_to(32).zeros(128);
    CHECK(File::parse(reordered.bytes(), "test.gguf").ok());
  }
  SECTION("duplicate tensor names") {
    GgufBytes b;
    b.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad_to(32).zeros(64);
    check_error(b.bytes(), ErrorCode::parse_error, "duplicate tensor name 'w'");
  }
  SECTION("invalid UTF-8") {
    for (std::string_view bad : {"\xFF", "a\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "\x80"}) {
      GgufBytes key;
      key.header(0, 1).kv_u32(std::string("k") + std::string(bad), 1);
      check_error(key.bytes(), ErrorCode::parse_error, "UTF-8");
      GgufBytes value;
      value.header(0, 1).kv_string("k", bad);
      check_error(value.bytes(), ErrorCode::parse_error, "UTF-8");
      GgufBytes in_array;
      in_array.header(0, 1).key("k", 9).u32(8).u64(2).str("ok").str(bad);
      check_error(in_array.bytes(), ErrorCode::parse_error, "UTF-8");
      check_error(one_tensor_file(std::string("t") + std::string(bad)), ErrorCode::parse_error, "UTF-8");
    }
    CHECK(File::parse(one_tensor_file("t\xF0\x9F\x98\x80\xE2\x82\xAC\xC3\xA9"), "test.gguf").ok());
  }
  SECTION("arrays nested deeper than the limit") {
    const auto nested = [](int depth) {
      GgufBytes b;
      b.header(0, 1).key("k", 9);
      for (int d = 1; d < depth; ++d) b.u32(9).u64(1);
      b.u32(0).u64(1).put<uint8_t>(7);
      return b.bytes();
    };
    REQUIRE(File::parse(nested(kMaxArrayDepth), "test.gguf").ok());
    check_error(nested(kMaxArrayDepth + 1), ErrorCode::parse_error, "nested");
    check_error(nested(1000), ErrorCode::parse_error, "nested");
  }
}
