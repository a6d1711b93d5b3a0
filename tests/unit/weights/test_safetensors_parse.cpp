// The corrupted-file suite: one hand-built file per way a safetensors file can be wrong, each with
// its own error (llaisys/model/safetensors.hpp lists them).

#include <catch2/catch.hpp>

#include "llaisys/model/safetensors.hpp"
#include "safetensors_builder.hpp"

using namespace llaisys;
using namespace llaisys::test;

namespace {

// Parses `file` and returns the error (failing the test if it parsed).
Status parse_error_of(const std::vector<std::byte>& file) {
  auto result = parse_safetensors(file, "test.safetensors");
  REQUIRE_FALSE(result.ok());
  return result.status();
}

void check_error(const std::vector<std::byte>& file, ErrorCode code, const std::string& words) {
  const Status s = parse_error_of(file);
  INFO(s.to_string());
  CHECK(s.code() == code);
  CHECK_THAT(s.message(), Catch::Contains(words) && Catch::Contains("test.safetensors"));
}

}  // namespace

TEST_CASE("safetensors: a well-formed file parses", "[weights][safetensors]") {
  // Two tensors (bf16 [2, 3] = 12 bytes, f32 [2] = 8 bytes), a zero-size one and a scalar.
  const std::string header = header_of({entry("b", "F32", "2", 12, 20), entry("a", "BF16", "2,3", 0, 12),
                                        entry("empty", "F16", "0,4", 20, 20), entry("scalar", "I32", "", 20, 24)});
  const auto file = safetensors_image(header, 24);
  auto parsed = parse_safetensors(file, "ok.safetensors");
  REQUIRE(parsed.ok());
  const SafetensorsHeader& h = parsed.value();
  CHECK(h.data_offset == 8 + header.size());
  REQUIRE(h.tensors.size() == 4);
  CHECK(h.tensors[0].name == "a");  // sorted by data offset
  CHECK(h.tensors[0].dtype == DType::bf16);
  CHECK(h.tensors[0].shape == Shape{2, 3});
  CHECK(h.tensors[3].name == "scalar");
  CHECK(h.tensors[3].shape.rank() == 0);
  REQUIRE(h.metadata.size() == 1);
  CHECK(h.metadata[0] == std::pair<std::string, std::string>("format", "pt"));
}

TEST_CASE("safetensors: each corruption has its own error", "[weights][safetensors]") {
  const std::string good_entry = entry("w", "BF16", "2,2", 0, 8);

  SECTION("file shorter than the length prefix") {
    check_error(std::vector<std::byte>(5), ErrorCode::parse_error, "too short");
  }
  SECTION("header length over the cap") {
    check_error(safetensors_image(header_of({good_entry}), 8, kMaxSafetensorsHeaderBytes + 1), ErrorCode::parse_error,
                "exceeds the cap");
  }
  SECTION("header length over the cap by a 64-bit wrap") {
    check_error(safetensors_image(header_of({good_entry}), 8, ~uint64_t{0}), ErrorCode::parse_error, "exceeds the cap");
  }
  SECTION("header length beyond the end of the file") {
    check_error(safetensors_image(header_of({good_entry}), 8, 5000), ErrorCode::parse_error,
                "beyond the end of the file");
  }
  SECTION("header that is not JSON") {
    check_error(safetensors_image("{\"w\": {\"dtype\": ", 0), ErrorCode::parse_error, "invalid JSON header");
  }
  SECTION("header that is not valid UTF-8") {
    check_error(safetensors_image("{\"\xff\xfe\": 1}", 0), ErrorCode::parse_error, "invalid JSON header");
  }
  SECTION("header that is JSON but not an object") {
    check_error(safetensors_image("[1, 2, 3]", 0), ErrorCode::parse_error, "invalid JSON header: expected an object");
  }
  SECTION("unknown dtype") {
    check_error(safetensors_image(header_of({entry("w", "Q4_K", "2,2", 0, 8)}), 8), ErrorCode::unsupported,
                "unknown dtype 'Q4_K'");
    check_error(safetensors_image(header_of({entry("w", "F64", "2", 0, 16)}), 16), ErrorCode::unsupported,
                "unknown dtype 'F64'");
  }
  SECTION("duplicate tensor name") {
    check_error(safetensors_image(header_of({good_entry, entry("w", "BF16", "2,2", 8, 16)}), 16),
                ErrorCode::parse_error, "duplicate tensor name 'w'");
  }
  SECTION("duplicate key inside an entry") {
    const std::string header = R"({"w":{"dtype":"BF16","dtype":"F32","shape":[2,2],"data_offsets":[0,8]}})";
    check_error(safetensors_image(header, 8), ErrorCode::parse_error, "duplicate key 'dtype'");
  }
  SECTION("malformed entries") {
    for (const std::string& header :
         {std::string(R"({"w":[1,2]})"), std::string(R"({"w":{"shape":[2],"data_offsets":[0,4]}})"),
          std::string(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})"),
          std::string(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})"),
          std::string(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})"),
          std::string(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,"8"]}})"),
          std::string(R"({"w":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})"),
          std::string(R"({"__metadata__":{"format":1}})")}) {
      INFO(header);
      check_error(safetensors_image(header, 8), ErrorCode::parse_error, "malformed entry");
    }
  }
  SECTION("rank over the supported maximum") {
    check_error(safetensors_image(header_of({entry("w", "U8", "1,1,1,1,1,1,1", 0, 1)}), 1), ErrorCode::unsupported,
                "rank 7");
  }
  SECTION("data_offsets past the data section") {
    check_error(safetensors_image(header_of({entry("w", "BF16", "2,2", 0, 8)}), 6), ErrorCode::parse_error,
                "out of range");
  }
  SECTION("data_offsets end before begin") {
    check_error(safetensors_image(header_of({entry("w", "BF16", "2,2", 8, 0)}), 8), ErrorCode::parse_error,
                "out of range");
  }
  SECTION("data_offsets near 2^64 (no wrap-around)") {
    check_error(safetensors_image(header_of({entry("w", "U8", "2", 18446744073709551615ull, 1)}), 8),
                ErrorCode::parse_error, "out of range");
  }
  SECTION("shape x dtype size does not match the byte range") {
    check_error(safetensors_image(header_of({entry("w", "BF16", "2,3", 0, 8)}), 8), ErrorCode::parse_error,
                "needs 12 bytes, which does not match its byte range");
  }
  SECTION("element count overflows 64 bits") {
    check_error(safetensors_image(header_of({entry("w", "U8", "4294967296,4294967296", 0, 8)}), 8),
                ErrorCode::parse_error, "element count of shape");
    check_error(safetensors_image(header_of({entry("w", "U8", "4294967296,4294967296", 0, 8)}), 8),
                ErrorCode::parse_error, "overflows");
  }
  SECTION("byte size overflows 64 bits") {
    check_error(safetensors_image(header_of({entry("w", "F32", "4611686018427387904", 0, 8)}), 8),
                ErrorCode::parse_error, "byte size of shape");
  }
  SECTION("overlapping tensors") {
    check_error(safetensors_image(header_of({entry("a", "BF16", "4", 0, 8), entry("b", "BF16", "4", 6, 14)}), 14),
                ErrorCode::parse_error, "'a' [0, 8) and 'b' [6, 14) overlap");
  }
  SECTION("gap between tensors") {
    check_error(safetensors_image(header_of({entry("a", "BF16", "4", 0, 8), entry("b", "BF16", "4", 12, 20)}), 20),
                ErrorCode::parse_error, "gap of 4 unused bytes before tensor 'b'");
  }
  SECTION("gap before the first tensor") {
    check_error(safetensors_image(header_of({entry("a", "BF16", "4", 2, 10)}), 10), ErrorCode::parse_error,
                "gap of 2 unused bytes before tensor 'a'");
  }
  SECTION("trailing bytes after the last tensor") {
    check_error(safetensors_image(header_of({good_entry}), 11), ErrorCode::parse_error, "3 trailing bytes");
  }
  SECTION("data but no tensors") {
    check_error(safetensors_image("{}", 4), ErrorCode::parse_error, "4 trailing bytes");
  }
}
