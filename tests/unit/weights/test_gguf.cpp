// GGUF reading and writing (llaisys/model/gguf.hpp): the type tables, Writer -> File::parse round
// trips of every value type and of tensors, version 2 files, and the real fixtures of tests/data
// (tiny-llama in eight weight types, the Qwen2 vocab). The corrupted-file suite is in
// test_gguf_corrupt.cpp.

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "gguf_builder.hpp"
#include "llaisys/model/gguf.hpp"
#include "llaisys/model/safetensors.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
using namespace llaisys::gguf;
using namespace llaisys::test::gguf_values;
using llaisys::test::GgufBytes;

namespace {

constexpr uint64_t kHuge = ~uint64_t{0};

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

}  // namespace

TEST_CASE("gguf: type tables", "[weights][gguf]") {
  // (id, name, block elements, block bytes): llama.cpp's values.
  const std::vector<std::tuple<uint32_t, std::string_view, int64_t, int64_t>> expected = {
      {0, "F32", 1, 4},          {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},       {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},       {9, "Q8_1", 32, 36},
      {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},    {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66},  {17, "IQ2_XS", 256, 74},
      {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},    {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},          {25, "I16", 1, 2},
      {26, "I32", 1, 4},         {27, "I64", 1, 8},         {28, "F64", 1, 8},         {29, "IQ1_M", 256, 56},
      {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},
  };
  for (const auto& [id, name, elements, bytes] : expected) {
    INFO("type id " << id);
    REQUIRE(tensor_type_name(id).has_value());
    CHECK(*tensor_type_name(id) == name);
    REQUIRE(tensor_type_block(id).has_value());
    CHECK(tensor_type_block(id)->elements == elements);
    CHECK(tensor_type_block(id)->bytes == bytes);
  }
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 99u, 0xFFFFFFFFu}) {
    INFO("type id " << id);
    CHECK_FALSE(tensor_type_name(id).has_value());
    CHECK_FALSE(tensor_type_block(id).has_value());
    CHECK_FALSE(dtype_of(id).has_value());
  }
  // The GGUF block sizes of the dtypes llaisys computes with agree with core's.
  const std::vector<std::pair<TensorType, DType>> computed = {
      {TensorType::F32, DType::f32},   {TensorType::F16, DType::f16},   {TensorType::BF16, DType::bf16},
      {TensorType::Q8_0, DType::q8_0}, {TensorType::Q4_0, DType::q4_0}, {TensorType::Q4_K, DType::q4_k},
      {TensorType::Q5_K, DType::q5_k}, {TensorType::Q6_K, DType::q6_k}, {TensorType::Q4_1, DType::q4_1},
      {TensorType::Q5_0, DType::q5_0}, {TensorType::Q5_1, DType::q5_1}};
  for (const auto& [type, dtype] : computed) {
    INFO(to_string(dtype));
    CHECK(dtype_of(type_id(type)) == dtype);
    CHECK(tensor_type_of(dtype) == type);
    CHECK(tensor_type_block(type_id(type))->elements == dtype_block_elements(dtype));
    CHECK(tensor_type_block(type_id(type))->bytes == dtype_block_bytes(dtype));
    CHECK(parse_dtype(*tensor_type_name(type_id(type))) == dtype);
  }
  CHECK_FALSE(dtype_of(type_id(TensorType::Q8_1)).has_value());
  CHECK_FALSE(dtype_of(type_id(TensorType::Q2_K)).has_value());
  CHECK_FALSE(dtype_of(type_id(TensorType::I32)).has_value());
  CHECK_FALSE(tensor_type_of(DType::i32).has_value());
  CHECK_FALSE(tensor_type_of(DType::u8).has_value());

  CHECK(to_string(ValueType::u8) == "u8");
  CHECK(to_string(ValueType::boolean) == "bool");
  CHECK(to_string(ValueType::string) == "string");
  CHECK(to_string(ValueType::array) == "array");
  CHECK(to_string(ValueType::f64) == "f64");
  CHECK(to_string(static_cast<ValueType>(13)) == "unknown");
}

TEST_CASE("gguf: Value accessors", "[weights][gguf]") {
  CHECK(unsigned_value(ValueType::u32, 7).as_int() == 7);
  CHECK(unsigned_value(ValueType::u32, 7).as_uint() == 7u);
  CHECK(unsigned_value(ValueType::u64, kHuge).as_uint() == kHuge);
  CHECK_FALSE(unsigned_value(ValueType::u64, kHuge).as_int().has_value());
  CHECK(signed_value(ValueType::i8, -5).as_int() == -5);
  CHECK_FALSE(signed_value(ValueType::i8, -5).as_uint().has_value());
  CHECK(signed_value(ValueType::i64, 5).as_uint() == 5u);
  CHECK(signed_value(ValueType::i16, -5).as_number() == -5.0);
  CHECK(unsigned_value(ValueType::u16, 9).as_number() == 9.0);
  CHECK(float_value(ValueType::f32, 1.5).as_number() == 1.5);
  CHECK_FALSE(float_value(ValueType::f64, 1.0).as_int().has_value());
  CHECK_FALSE(bool_value(true).as_int().has_value());
  CHECK_FALSE(bool_value(true).as_number().has_value());
  CHECK_FALSE(string_value("1").as_number().has_value());
  CHECK_FALSE(array_value(ValueType::u8, {}).as_uint().has_value());
}

TEST_CASE("gguf: every value type round-trips through Writer and File::parse", "[weights][gguf]") {
  const std::vector<std::pair<std::string, Value>> entries = {
      {"u8", unsigned_value(ValueType::u8, 255)},
      {"i8", signed_value(ValueType::i8, -128)},
      {"u16", unsigned_value(ValueType::u16, 65535)},
      {"i16", signed_value(ValueType::i16, -32768)},
      {"u32", unsigned_value(ValueType::u32, 0xFFFFFFFFu)},
      {"i32", signed_value(ValueType::i32, std::numeric_limits<int32_t>::min())},
      {"f32", float_value(ValueType::f32, -1.5e-5f)},
      {"f32.inf", float_value(ValueType::f32, std::numeric_limits<float>::infinity())},
      {"bool.true", bool_value(true)},
      {"bool.false", bool_value(false)},
      {"string", string_value("h\xC3\xA9llo \xF0\x9F\x98\x80")},
      {"string.empty", string_value("")},
      {"u64", unsigned_value(ValueType::u64, kHuge)},
      {"i64", signed_value(ValueType::i64, std::numeric_limits<int64_t>::min())},
      {"f64", float_value(ValueType::f64, 0.1)},
      {"array.u8", array_value(ValueType::u8, {unsigned_value(ValueType::u8, 1), unsigned_value(ValueType::u8, 2)})},
      {"array.f64", array_value(ValueType::f64, {float_value(ValueType::f64, -2.25)})},
      {"array.bool", array_value(ValueType::boolean, {bool_value(true), bool_value(false)})},
      {"array.strings", array_value(ValueType::string, {string_value(""), string_value("x"), string_value("")})},
      {"array.empty.u8", array_value(ValueType::u8, {})},
      {"array.empty.string", array_value(ValueType::string, {})},
      {"array.empty.array", array_value(ValueType::array, {})},
      {"array.of.arrays",
       array_value(ValueType::array, {array_value(ValueType::i64, {signed_value(ValueType::i64, -1)}),
                                      array_value(ValueType::string, {string_value("in"), string_value("")}),
                                      array_value(ValueType::u16, {}),
                                      array_value(ValueType::array, {array_value(ValueType::f32, {})})})},
      {"array.deepest", nested_value(kMaxArrayDepth)},
  };
  Writer writer;
  for (const auto& [key, value] : entries) writer.add(key, value);
  writer.add_string("w.string", "s");
  writer.add_u32("w.u32", 4000000000u);
  writer.add_i32("w.i32", -7);
  writer.add_u64("w.u64", uint64_t{1} << 40);
  writer.add_f32("w.f32", 0.25f);
  writer.add_bool("w.bool", true);
  writer.add_strings("w.strings", {"a", "", "c"});
  writer.add_i32s("w.i32s", {1, -2, 3});
  writer.add_f32s("w.f32s", {0.5f, -0.5f});
  writer.add_strings("w.strings.empty", {});

  const std::vector<std::byte> image = writer.bytes();
  auto parsed = File::parse(image, "roundtrip.gguf");
  REQUIRE(parsed.ok());
  const File& file = parsed.value();
  CHECK(file.version() == 3);
  CHECK(file.alignment() == kDefaultAlignment);
  CHECK(file.tensors().empty());
  CHECK(file.data_offset() <= image.size());
  REQUIRE(file.metadata().size() == entries.size() + 10);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    INFO(entries[i].first);
    CHECK(file.metadata()[i].key == entries[i].first);  // in the order added
    CHECK(same(file.metadata()[i].value, entries[i].second));
    REQUIRE(file.find(entries[i].first) != nullptr);
    CHECK(same(*file.find(entries[i].first), entries[i].second));
  }
  CHECK(file.find("w.string")->s == "s");
  CHECK(file.find("w.u32")->as_uint() == 4000000000u);
  CHECK(file.find("w.i32")->as_int() == -7);
  CHECK(file.find("w.u64")->as_uint() == uint64_t{1} << 40);
  CHECK(file.find("w.f32")->as_number() == 0.25);
  CHECK(file.find("w.bool")->b);
  CHECK(same(*file.find("w.strings"),
             array_value(ValueType::string, {string_value("a"), string_value(""), string_value("c")})));
  CHECK(same(*file.find("w.i32s"),
             array_value(ValueType::i32, {signed_value(ValueType::i32, 1), signed_value(ValueType::i32, -2),
                                          signed_value(ValueType::i32, 3)})));
  CHECK(same(*file.find("w.f32s"),
             array_value(ValueType::f32, {float_value(ValueType::f32, 0.5), float_value(ValueType::f32, -0.5)})));
  CHECK(file.find("w.strings.empty")->array->items.empty());
  CHECK(file.find("missing") == nullptr);
  CHECK(file.find("") == nullptr);
  CHECK(file.find_tensor("anything") == nullptr);

  // Writing the same bytes again gives the same bytes.
  Writer again;
  for (const KeyValue& kv : file.metadata()) again.add(kv.key, kv.value);
  CHECK(again.bytes() == image);
}

TEST_CASE("gguf: tensors round-trip, aligned, with their bytes", "[weights][gguf]") {
  const uint32_t alignment = GENERATE(32u, 64u, 1u, 4096u);
  INFO("alignment " << alignment);
  Writer writer(alignment);
  writer.add_string("general.architecture", "test");
  struct Spec {
    std::string name;
    std::vector<int64_t> dims;
    TensorType type;
    std::size_t bytes;
  };
  const std::vector<Spec> specs = {
      {"f32", {3, 2}, TensorType::F32, 24},          {"q8", {64, 3}, TensorType::Q8_0, 3 * 2 * 34},
      {"q4k", {256, 1, 2}, TensorType::Q4_K, 2 * 144}, {"bf16", {5}, TensorType::BF16, 10},
      {"q6k", {512, 1, 1, 2}, TensorType::Q6_K, 4 * 210}, {"i8", {1}, TensorType::I8, 1},
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::vector<std::byte> bytes = pattern(specs[i].bytes, static_cast<int>(i));
    REQUIRE(writer.add_tensor(specs[i].name, specs[i].dims, type_id(specs[i].type), bytes).ok());
  }
  const std::vector<std::byte> image = writer.bytes();
  auto parsed = File::parse(image, "tensors.gguf");
  REQUIRE(parsed.ok());
  const File& file = parsed.value();
  CHECK(file.alignment() == alignment);
  CHECK(file.data_offset() % alignment == 0);
  if (alignment != kDefaultAlignment) {
    REQUIRE(file.find("general.alignment") != nullptr);
    CHECK(file.find("general.alignment")->type == ValueType::u32);
    CHECK(file.find("general.alignment")->u == alignment);
  } else {
    CHECK(file.find("general.alignment") == nullptr);
  }
  REQUIRE(file.tensors().size() == specs.size());
  uint64_t previous_end = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const TensorInfo& t = file.tensors()[i];
    INFO(specs[i].name);
    CHECK(t.name == specs[i].name);
    CHECK(t.dims == specs[i].dims);
    CHECK(t.type == type_id(specs[i].type));
    CHECK(t.bytes == specs[i].bytes);
    CHECK(t.offset % alignment == 0);
    CHECK(t.offset >= previous_end);
    previous_end = t.offset + t.bytes;
    CHECK(file.find_tensor(specs[i].name) == &t);
    const std::span<const std::byte> data = file.data(t);
    CHECK(data.data() == image.data() + file.data_offset() + t.offset);
    CHECK(std::vector<std::byte>(data.begin(), data.end()) == pattern(specs[i].bytes, static_cast<int>(i)));
  }
  CHECK(image.size() % alignment == 0);  // the last tensor padded too, as llama.cpp writes it

  // write() gives the same bytes as bytes().
  test::TempDir dir;
  REQUIRE(writer.write(dir / "out.gguf").ok());
  CHECK(read_file(dir / "out.gguf") == image);
}

TEST_CASE("gguf: Writer alignment from general.alignment, and write errors", "[weights][gguf]") {
  Writer writer;
  writer.add("general.alignment", unsigned_value(ValueType::u32, 128));
  CHECK(writer.alignment() == 128);
  REQUIRE(writer.add_tensor("t", {4}, type_id(TensorType::F32), pattern(16, 0)).ok());
  auto parsed = File::parse(writer.bytes(), "a.gguf");
  REQUIRE(parsed.ok());
  CHECK(parsed->alignment() == 128);
  CHECK(parsed->metadata().size() == 1);  // not written twice
  CHECK(parsed->data_offset() % 128 == 0);

  test::TempDir dir;
  const Status s = writer.write(dir / "missing-dir" / "x.gguf");
  CHECK(s.code() == ErrorCode::io_error);
  CHECK_THAT(s.message(), Catch::Contains("missing-dir/x.gguf"));
}

TEST_CASE("gguf: Writer refuses what the parser would refuse", "[weights][gguf]") {
  CHECK_THROWS_AS(Writer(48), std::invalid_argument);
  CHECK_THROWS_AS(Writer(0), std::invalid_argument);
  Writer writer;
  writer.add_u32("k", 1);
  CHECK_THROWS_AS(writer.add_u32("k", 2), std::invalid_argument);
  CHECK_THROWS_AS(writer.add_u32("bad\xFF", 2), std::invalid_argument);
  CHECK_THROWS_AS(writer.add_string("s", "bad\xC0\x80"), std::invalid_argument);
  CHECK_THROWS_AS(writer.add_strings("ss", {"ok", "\xED\xA0\x80"}), std::invalid_argument);
  CHECK_THROWS_AS(writer.add(std::string(kMaxNameBytes + 1, 'k'), unsigned_value(ValueType::u8, 1)),
                  std::invalid_argument);
  CHECK_THROWS_AS(writer.add("deep", nested_value(kMaxArrayDepth + 1)), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("mixed", array_value(ValueType::u8, {signed_value(ValueType::i8, 1)})),
                  std::invalid_argument);
  CHECK_THROWS_AS(writer.add("wide", unsigned_value(ValueType::u8, 256)), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("type", unsigned_value(static_cast<ValueType>(13), 0)), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("general.alignment", unsigned_value(ValueType::u32, 3)), std::invalid_argument);
  CHECK_THROWS_AS(writer.add("general.alignment", unsigned_value(ValueType::u64, 64)), std::invalid_argument);

  const auto f32 = type_id(TensorType::F32);
  REQUIRE(writer.add_tensor("t", {4}, f32, pattern(16, 0)).ok());
  CHECK(writer.add_tensor("t", {4}, f32, pattern(16, 0)).code() == ErrorCode::invalid_argument);      // twice
  CHECK(writer.add_tensor("u", {4}, f32, pattern(15, 0)).code() == ErrorCode::invalid_argument);      // bytes
  CHECK(writer.add_tensor("u", {}, f32, pattern(4, 0)).code() == ErrorCode::invalid_argument);        // 0 dims
  CHECK(writer.add_tensor("u", {1, 1, 1, 1, 1}, f32, pattern(4, 0)).code() == ErrorCode::invalid_argument);
  CHECK(writer.add_tensor("u", {0}, f32, {}).code() == ErrorCode::invalid_argument);
  CHECK(writer.add_tensor("u", {-4}, f32, pattern(16, 0)).code() == ErrorCode::invalid_argument);
  CHECK(writer.add_tensor("u", {33}, type_id(TensorType::Q8_0), pattern(34, 0)).code() == ErrorCode::invalid_argument);
  CHECK(writer.add_tensor("u", {4}, 4, pattern(16, 0)).code() == ErrorCode::unsupported);
  CHECK(writer.add_tensor("\xFF", {4}, f32, pattern(16, 0)).code() == ErrorCode::invalid_argument);
  CHECK(writer.add_tensor("u", {int64_t{1} << 32, int64_t{1} << 32}, f32, {}).code() == ErrorCode::invalid_argument);
  // Nothing refused was added.
  auto parsed = File::parse(writer.bytes(), "w.gguf");
  REQUIRE(parsed.ok());
  CHECK(parsed->metadata().size() == 1);
  CHECK(parsed->tensors().size() == 1);
}

TEST_CASE("gguf: version 2 files parse like version 3", "[weights][gguf]") {
  SECTION("a writer's file with the version field set to 2") {
    std::vector<std::byte> image = small_file();
    image[4] = std::byte{2};
    auto v2 = File::parse(image, "v2.gguf");
    REQUIRE(v2.ok());
    auto v3 = File::parse(small_file(), "v3.gguf");
    REQUIRE(v3.ok());
    CHECK(v2->version() == 2);
    CHECK(v3->version() == 3);
    REQUIRE(v2->metadata().size() == v3->metadata().size());
    for (std::size_t i = 0; i < v2->metadata().size(); ++i) {
      CHECK(same(v2->metadata()[i].value, v3->metadata()[i].value));
    }
    REQUIRE(v2->tensors().size() == 2);
    CHECK(v2->data_offset() == v3->data_offset());
    CHECK(v2->tensors()[1].offset == v3->tensors()[1].offset);
  }
  SECTION("a hand-built version 2 file: 64-bit counts and lengths") {
    GgufBytes b;
    b.header(1, 2, 2).kv_string("general.architecture", "llama").kv_u32("general.alignment", 16);
    b.tensor("w", {4, 2}, 1, 0).pad_to(16).zeros(16);
    auto file = File::parse(b.bytes(), "v2.gguf");
    REQUIRE(file.ok());
    CHECK(file->version() == 2);
    CHECK(file->alignment() == 16);
    CHECK(file->find("general.architecture")->s == "llama");
    REQUIRE(file->tensors().size() == 1);
    CHECK(file->tensors()[0].dims == std::vector<int64_t>{4, 2});
    CHECK(file->tensors()[0].bytes == 16);
    CHECK(file->data(file->tensors()[0]).size() == 16);
  }
}

TEST_CASE("gguf: tiny-llama fixtures in eight weight types", "[weights][gguf]") {
  struct Fixture {
    std::string type;
    uint64_t size;
    uint32_t file_type;
    TensorType matrices;  // the type of most matrices
    std::vector<std::string> q6k;  // matrices that are Q6_K instead
  };
  const std::vector<std::string> k_quant_q6k = {"output.weight", "blk.2.attn_v.weight", "blk.2.ffn_down.weight"};
  const Fixture fixture = GENERATE_COPY(values<Fixture>({
      {"F32", 10506272, 0, TensorType::F32, {}},
      {"F16", 5263424, 1, TensorType::F16, {}},
      {"BF16", 5263424, 32, TensorType::BF16, {}},
      {"Q8_0", 2805824, 7, TensorType::Q8_0, {}},
      {"Q4_0", 1528896, 2, TensorType::Q4_0, {"output.weight"}},
      {"Q4_K_M", 1588032, 15, TensorType::Q4_K, k_quant_q6k},
      {"Q5_K_M", 1870656, 17, TensorType::Q5_K, k_quant_q6k},
      {"Q6_K", 2170944, 18, TensorType::Q6_K, {}},
  }));
  INFO("tiny-llama-" << fixture.type);
  const std::filesystem::path path =
      std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "tiny-llama-gguf" / ("tiny-llama-" + fixture.type + ".gguf");
  auto mapped = MappedFile::open(path);
  REQUIRE(mapped.ok());
  REQUIRE(mapped->bytes().size() == fixture.size);
  auto parsed = File::parse(mapped->bytes(), path.string());
  INFO(parsed.status().to_string());
  REQUIRE(parsed.ok());
  const File& file = parsed.value();
  CHECK(file.version() == 3);
  CHECK(file.alignment() == 32);
  CHECK(file.data_offset() % 32 == 0);

  REQUIRE(file.find("general.architecture") != nullptr);
  CHECK(file.find("general.architecture")->s == "llama");
  CHECK(file.find("general.name")->s == "tiny-llama");
  CHECK(file.find("llama.block_count")->as_uint() == 3u);
  CHECK(file.find("llama.embedding_length")->as_uint() == 256u);
  CHECK(file.find("llama.attention.head_count_kv")->as_uint() == 2u);
  CHECK(file.find("llama.rope.freq_base")->as_number() == 10000.0);
  CHECK(file.find("general.file_type")->as_uint() == fixture.file_type);
  const Value* tokens = file.find("tokenizer.ggml.tokens");
  REQUIRE(tokens != nullptr);
  REQUIRE(tokens->type == ValueType::array);
  CHECK(tokens->array->element_type == ValueType::string);
  REQUIRE(tokens->array->items.size() == 512);
  CHECK(tokens->array->items[0].s == "<unk>");
  CHECK(tokens->array->items[1].s == "<s>");
  CHECK(tokens->array->items[3].s == "<0x00>");
  CHECK(file.find("tokenizer.ggml.scores")->array->items[511].f == -252.0);
  CHECK(file.find("tokenizer.ggml.token_type")->array->items[0].as_int() == 2);
  CHECK(file.find("tokenizer.ggml.add_bos_token")->b);

  // 23 matrices and 7 norm vectors (F32 in every file).
  std::map<std::string, std::vector<int64_t>> dims = {
      {"token_embd.weight", {256, 512}}, {"output.weight", {256, 512}}, {"output_norm.weight", {256}}};
  for (int layer = 0; layer < 3; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    dims[p + "attn_norm.weight"] = {256};
    dims[p + "ffn_norm.weight"] = {256};
    dims[p + "attn_q.weight"] = {256, 256};
    dims[p + "attn_k.weight"] = {256, 128};
    dims[p + "attn_v.weight"] = {256, 128};
    dims[p + "attn_output.weight"] = {256, 256};
    dims[p + "ffn_gate.weight"] = {256, 768};
    dims[p + "ffn_up.weight"] = {256, 768};
    dims[p + "ffn_down.weight"] = {768, 256};
  }
  REQUIRE(dims.size() == 30);
  REQUIRE(file.tensors().size() == 30);
  int norms = 0, matrices = 0;
  for (const auto& [name, expected_dims] : dims) {
    INFO(name);
    const TensorInfo* t = file.find_tensor(name);
    REQUIRE(t != nullptr);
    CHECK(t->dims == expected_dims);
    uint32_t expected_type = type_id(TensorType::F32);
    if (expected_dims.size() == 2) {
      const bool q6k = std::find(fixture.q6k.begin(), fixture.q6k.end(), name) != fixture.q6k.end();
      expected_type = type_id(q6k ? TensorType::Q6_K : fixture.matrices);
      ++matrices;
    } else {
      ++norms;
    }
    CHECK(t->type == expected_type);
    const BlockSize block = *tensor_type_block(t->type);
    uint64_t elements = 1;
    for (int64_t d : t->dims) elements *= static_cast<uint64_t>(d);
    CHECK(t->bytes == elements / static_cast<uint64_t>(block.elements) * static_cast<uint64_t>(block.bytes));
    CHECK(file.data(*t).size() == t->bytes);
    CHECK(dtype_of(t->type).has_value());
  }
  CHECK(matrices == 23);
  CHECK(norms == 7);

  if (fixture.type == "F32") {
    // The values of WEIGHTS.md (bf16 widened to f32): token_embd is HF's model.embed_tokens.weight
    // (scale 1, offset 0), output_norm is model.norm.weight (scale 0.1, offset 1).
    const auto expected_value = [](std::string_view hf_name, uint64_t i, double scale, double offset) {
      uint64_t key = 0xCBF29CE484222325ull;
      for (char c : hf_name) key = (key ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
      uint64_t z = key + i + 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      const double u = static_cast<double>(z >> 40) / 16777216.0;
      const auto f = static_cast<float>(offset + (2.0 * u - 1.0) * scale);
      const uint32_t bits = std::bit_cast<uint32_t>(f);
      const uint32_t bf16 = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16;
      return std::bit_cast<float>(bf16 << 16);
    };
    const auto check_values = [&](const char* name, std::string_view hf_name, double scale, double offset) {
      const TensorInfo* t = file.find_tensor(name);
      REQUIRE(t != nullptr);
      const std::span<const std::byte> data = file.data(*t);
      const std::size_t n = data.size() / 4;
      for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{255}, n / 2, n - 1}) {
        float v = 0;
        std::memcpy(&v, data.data() + 4 * i, 4);
        INFO(name << "[" << i << "]");
        CHECK(v == expected_value(hf_name, i, scale, offset));
      }
    };
    check_values("token_embd.weight", "model.embed_tokens.weight", 1.0, 0.0);
    check_values("output_norm.weight", "model.norm.weight", 0.1, 1.0);
  }
}

TEST_CASE("gguf: the Qwen2 vocab file parses fast", "[weights][gguf]") {
  const std::filesystem::path path =
      std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-vocab-gguf" / "qwen2-vocab.gguf";
  auto loaded = MappedFile::open(path, WeightLoading::memory);  // read first: time the parse alone
  REQUIRE(loaded.ok());
  const auto start = std::chrono::steady_clock::now();
  auto parsed = File::parse(loaded->bytes(), path.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(parsed.status().to_string());
  REQUIRE(parsed.ok());
  const File& file = parsed.value();
  WARN("qwen2-vocab.gguf parsed in " << seconds * 1000 << " ms");
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  CHECK(seconds < 0.5);
#endif
  CHECK(file.tensors().empty());
  CHECK(file.metadata().size() == 13);
  CHECK(file.data_offset() == loaded->bytes().size());  // gguf-py wrote no padding after the metadata
  CHECK(file.find("general.architecture")->s == "qwen2");
  CHECK(file.find("qwen2.vocab_size")->as_uint() == 151936u);
  const Value* tokens = file.find("tokenizer.ggml.tokens");
  REQUIRE(tokens != nullptr);
  REQUIRE(tokens->array->items.size() == 151936);
  CHECK(tokens->array->items[0].s == "!");
  CHECK(tokens->array->items[151643].s == "<|endoftext|>");
  CHECK(tokens->array->items[151935].s == "[PAD151935]");
  const Value* merges = file.find("tokenizer.ggml.merges");
  REQUIRE(merges != nullptr);
  REQUIRE(merges->array->items.size() == 151387);
  CHECK(merges->array->items[0].s == "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  CHECK(file.find("tokenizer.ggml.token_type")->array->items.size() == 151936);
  CHECK(file.find("tokenizer.ggml.bos_token_id")->as_uint() == 151643u);
  CHECK(file.find("tokenizer.ggml.eos_token_id")->as_uint() == 151645u);
  CHECK_FALSE(file.find("tokenizer.ggml.add_bos_token")->b);
  CHECK(file.find("tokenizer.chat_template")->s.starts_with("{%- if tools %}"));
}
