// llaisys-quantize's conversion (apps/quantize) against llama.cpp's own: the tiny Llama written as
// GGUF must hold what llama.cpp's converter and llama-quantize wrote into the fixture files (the
// same metadata, tokenizer arrays, tensor types per file, and, for the types whose quantizer is
// ggml's reference one, the same bytes), and the tiny Qwen2 the tokenizer arrays of qwen2-vocab.gguf.

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "generated_model.hpp"
#include "gguf_convert.hpp"
#include "llaisys/model/gguf_model.hpp"
#include "llaisys/model/safetensors.hpp"
#include "temp_dir.hpp"

namespace llaisys::test {
namespace {
namespace fs = std::filesystem;

const fs::path kData = fs::path(LLAISYS_TEST_DATA_DIR);

// A model directory: the generated shape's config and weights (linked) plus a tokenizer's files.
fs::path model_with_tokenizer(const TempDir& dir, const std::string& shape, const fs::path& tokenizer_dir) {
  const fs::path out = dir / (shape + "-hf");
  fs::create_directories(out);
  const fs::path& generated = generated_model_dir(shape);
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors"}) {
    if (fs::exists(generated / name)) fs::create_symlink(generated / name, out / name);
  }
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) fs::copy_file(tokenizer_dir / name, out / name);
  return out;
}

std::unique_ptr<const gguf::MappedGguf> open(const fs::path& path) {
  auto opened = gguf::open_gguf(path);
  REQUIRE(opened.ok());
  return std::move(opened).value();
}

// Two metadata values equal (type and content, arrays element by element).
bool same_value(const gguf::Value& a, const gguf::Value& b) {
  if (a.type != b.type || a.u != b.u || a.i != b.i || a.s != b.s || a.b != b.b) return false;
  if (!(a.f == b.f || (std::isnan(a.f) && std::isnan(b.f)))) return false;
  if (a.type != gguf::ValueType::array) return true;
  if (a.array->element_type != b.array->element_type || a.array->items.size() != b.array->items.size()) return false;
  for (std::size_t i = 0; i < a.array->items.size(); ++i) {
    if (!same_value(a.array->items[i], b.array->items[i])) return false;
  }
  return true;
}

void check_same_keys(const gguf::File& ours, const gguf::File& theirs, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    CAPTURE(key);
    const gguf::Value* a = ours.find(key);
    const gguf::Value* b = theirs.find(key);
    REQUIRE(b != nullptr);
    REQUIRE(a != nullptr);
    CHECK(same_value(*a, *b));
  }
}

}  // namespace

TEST_CASE("the tiny Llama written as GGUF holds what llama.cpp's tools wrote", "[gguf]") {
  TempDir dir;
  const fs::path hf = model_with_tokenizer(dir, "tiny-llama", kData / "tiny-llama-gguf");
  const auto type = GENERATE(as<std::pair<std::string, std::string>>{}, std::pair{"f32", "F32"}, std::pair{"f16", "F16"},
                             std::pair{"bf16", "BF16"}, std::pair{"q8_0", "Q8_0"}, std::pair{"q4_0", "Q4_0"},
                             std::pair{"q4_k_m", "Q4_K_M"}, std::pair{"q5_k_m", "Q5_K_M"}, std::pair{"q6_k", "Q6_K"});
  CAPTURE(type.first);
  const fs::path out = dir / fmt::format("tiny-llama-{}.gguf", type.first);
  auto report = convert::convert_to_gguf(hf, out, type.first, "tiny-llama");
  REQUIRE(report.ok());
  CHECK(report->fallbacks.empty());
  const auto ours = open(out);
  const auto theirs = open(kData / "tiny-llama-gguf" / fmt::format("tiny-llama-{}.gguf", type.second));
  check_same_keys(ours->parsed, theirs->parsed,
                  {"general.architecture", "general.name", "general.file_type", "llama.vocab_size", "llama.context_length",
                   "llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count",
                   "llama.attention.head_count_kv", "llama.attention.key_length", "llama.attention.value_length",
                   "llama.rope.dimension_count", "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
                   "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                   "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                   "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"});
  REQUIRE(ours->parsed.tensors().size() == theirs->parsed.tensors().size());
  int same_bytes = 0;
  for (const gguf::TensorInfo& t : theirs->parsed.tensors()) {
    CAPTURE(t.name);
    const gguf::TensorInfo* mine = ours->parsed.find_tensor(t.name);
    REQUIRE(mine != nullptr);
    CHECK(mine->dims == t.dims);
    CHECK(gguf::tensor_type_name(mine->type) == gguf::tensor_type_name(t.type));  // llama-quantize's mix
    // ggml's reference quantizers (and plain conversions) are deterministic: the same bytes.
    if (mine->type == t.type && (t.type == 0 || t.type == 1 || t.type == 30 || t.type == 8 || t.type == 2)) {
      const auto a = ours->parsed.data(*mine), b = theirs->parsed.data(t);
      REQUIRE(a.size() == b.size());
      CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
      ++same_bytes;
    }
  }
  if (type.first == "q8_0" || type.first == "f32") CHECK(same_bytes == 30);
  if (type.first == "q4_0") CHECK(same_bytes == 29);  // all but output.weight (Q6_K, not ggml's quantizer)
}

TEST_CASE("the tiny Qwen2 written as GGUF carries qwen2-vocab.gguf's tokenizer", "[gguf]") {
  TempDir dir;
  const fs::path hf = model_with_tokenizer(dir, "tiny", kData / "qwen2-tokenizer");
  const fs::path out = dir / "tiny-q8_0.gguf";
  auto report = convert::convert_to_gguf(hf, out, "q8_0", "tiny");
  REQUIRE(report.ok());
  const auto ours = open(out);
  const auto theirs = open(kData / "qwen2-vocab-gguf" / "qwen2-vocab.gguf");
  check_same_keys(ours->parsed, theirs->parsed,
                  {"general.architecture", "qwen2.vocab_size", "tokenizer.ggml.model", "tokenizer.ggml.pre",
                   "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
                   "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
                   "tokenizer.ggml.add_bos_token", "tokenizer.chat_template"});
}

TEST_CASE("conversion refuses what GGUF cannot describe, naming it", "[gguf]") {
  TempDir dir;
  const fs::path hf = model_with_tokenizer(dir, "tiny-mistral", kData / "tiny-llama-gguf");
  auto report = convert::convert_to_gguf(hf, dir / "out.gguf", "q8_0");
  REQUIRE_FALSE(report.ok());
  CHECK_THAT(report.status().message(), Catch::Contains("sliding window"));
  CHECK_FALSE(fs::exists(dir / "out.gguf"));
  auto bad_type = convert::convert_to_gguf(model_with_tokenizer(dir, "tiny-llama", kData / "tiny-llama-gguf"),
                                           dir / "out.gguf", "q3_k");
  REQUIRE_FALSE(bad_type.ok());
  CHECK_THAT(bad_type.status().message(), Catch::Contains("q3_k"));
}

}  // namespace llaisys::test
