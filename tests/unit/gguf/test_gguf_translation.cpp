// The translation of GGUF metadata and tensor names into a model directory's terms
// (gguf_model.hpp), on small files written for each case: what is carried, what is refused.

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "llaisys/model/gguf_model.hpp"

namespace llaisys::gguf {
namespace {

// A llama model's minimal metadata (3 layers, 4 heads of 64, 2 KV heads), plus `extra`.
Writer llama_writer() {
  Writer w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.embedding_length", 256);
  w.add_u32("llama.block_count", 3);
  w.add_u32("llama.feed_forward_length", 768);
  w.add_u32("llama.context_length", 2048);
  w.add_u32("llama.attention.head_count", 4);
  w.add_u32("llama.attention.head_count_kv", 2);
  w.add_u32("llama.vocab_size", 512);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  return w;
}

struct Parsed {
  std::vector<std::byte> bytes;
  File file;
};
std::unique_ptr<Parsed> parse(const Writer& w) {
  auto p = std::make_unique<Parsed>();
  p->bytes = w.bytes();
  auto file = File::parse(p->bytes, "case.gguf");
  REQUIRE(file.ok());
  p->file = std::move(file).value();
  return p;
}

boost::json::object config_of(const Writer& w) {
  const auto p = parse(w);
  auto text = gguf_config_json(p->file, "case.gguf");
  REQUIRE(text.ok());
  return boost::json::parse(*text).as_object();
}

std::string config_error(const Writer& w) {
  const auto p = parse(w);
  auto text = gguf_config_json(p->file, "case.gguf");
  REQUIRE_FALSE(text.ok());
  CHECK_THAT(text.status().message(), Catch::Contains("case.gguf"));
  return text.status().message();
}

std::string names_error(Writer& w, const std::string& tensor) {
  const std::vector<std::byte> data(256 * 4);
  REQUIRE(w.add_tensor(tensor, {256}, static_cast<uint32_t>(TensorType::F32), data).ok());
  const auto p = parse(w);
  auto names = hf_tensor_names(p->file, "case.gguf");
  REQUIRE_FALSE(names.ok());
  return names.status().message();
}

}  // namespace

TEST_CASE("GGUF metadata becomes the architecture's config.json keys", "[gguf]") {
  const boost::json::object c = config_of(llama_writer());
  CHECK(c.at("architectures").as_array().at(0).as_string() == "LlamaForCausalLM");
  CHECK(c.at("hidden_size").as_int64() == 256);
  CHECK(c.at("num_key_value_heads").as_int64() == 2);
  CHECK(c.at("head_dim").as_int64() == 64);
  CHECK(c.at("rope_theta").as_double() == 10000.0);
  CHECK(c.at("tie_word_embeddings").as_bool());  // no output.weight
  CHECK_FALSE(c.contains("rope_scaling"));
}

TEST_CASE("GGUF stop tokens: eos, eot, eom, and the tokens whose text ends a turn", "[gguf]") {
  Writer w = llama_writer();
  std::vector<std::string> tokens(512, "x");
  tokens[2] = "</s>";
  tokens[7] = "<|im_end|>";
  tokens[9] = "<|endoftext|>";
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.eot_token_id", 7);
  const boost::json::array eos = config_of(w).at("eos_token_id").as_array();
  CHECK(eos == boost::json::array{2, 7, 9});
}

TEST_CASE("GGUF RoPE scaling: linear carried (also without a type, as llama.cpp reads it), others refused", "[gguf]") {
  Writer factor_only = llama_writer();
  factor_only.add_f32("llama.rope.scaling.factor", 4.0f);
  const boost::json::object c = config_of(factor_only);
  CHECK(c.at("rope_scaling").at("rope_type").as_string() == "linear");
  CHECK(c.at("rope_scaling").at("factor").as_double() == 4.0);
  Writer legacy = llama_writer();
  legacy.add_f32("llama.rope.scale_linear", 2.0f);
  CHECK(config_of(legacy).at("rope_scaling").at("factor").as_double() == 2.0);
  Writer yarn = llama_writer();
  yarn.add_string("llama.rope.scaling.type", "yarn");
  yarn.add_f32("llama.rope.scaling.factor", 4.0f);
  CHECK_THAT(config_error(yarn), Catch::Contains("yarn"));
}

TEST_CASE("GGUF metadata that changes the model and is not carried is refused by name", "[gguf]") {
  Writer moe = llama_writer();
  moe.add_u32("llama.expert_count", 8);
  CHECK_THAT(config_error(moe), Catch::Contains("expert_count"));
  Writer gemma;
  gemma.add_string("general.architecture", "gemma2");
  CHECK_THAT(config_error(gemma), Catch::Contains("gemma2"));
  Writer zero;  // head_count 0: refused before anything divides by it
  zero.add_string("general.architecture", "qwen2");
  zero.add_u32("qwen2.embedding_length", 256);
  zero.add_u32("qwen2.attention.head_count", 0);
  CHECK_THAT(config_error(zero), Catch::Contains("head_count"));
  Writer wrong_type = llama_writer();
  wrong_type.add_string("llama.rope.freq_base", "ten thousand");
  CHECK_THAT(config_error(wrong_type), Catch::Contains("rope.freq_base"));
}

TEST_CASE("GGUF tensors outside the architecture's layout are refused, naming them", "[gguf]") {
  Writer a = llama_writer();
  CHECK_THAT(names_error(a, "blk.3.attn_norm.weight"), Catch::Contains("blk.3.attn_norm.weight"));  // 3 layers
  Writer b = llama_writer();
  CHECK_THAT(names_error(b, "blk.01.attn_norm.weight"), Catch::Contains("blk.01"));
  Writer c = llama_writer();
  CHECK_THAT(names_error(c, "blk.0.attn_q_norm.weight"), Catch::Contains("attn_q_norm"));  // a qwen3 part
  Writer d = llama_writer();
  CHECK_THAT(names_error(d, "rope_freqs.weight"), Catch::Contains("rope_freqs"));
}

TEST_CASE("llama.cpp's q/k row order: permute_rows and unpermute_rows undo each other, rows or single values", "[gguf]") {
  for (const int64_t row_bytes : {int64_t{4}, int64_t{34}}) {  // a bias's f32 values; Q8_0 rows of 32
    const int64_t heads = 2, rows = 2 * 8;
    std::vector<std::byte> hf(static_cast<std::size_t>(rows * row_bytes)), stored(hf.size()), back(hf.size());
    for (std::size_t i = 0; i < hf.size(); ++i) hf[i] = static_cast<std::byte>(i / static_cast<std::size_t>(row_bytes));
    permute_rows(hf.data(), stored.data(), rows, row_bytes, heads);
    // llama.cpp's layout: stored row h*D + 2j + t holds HF row h*D + t*D/2 + j (D = 8).
    CHECK(stored[static_cast<std::size_t>(1 * row_bytes)] == std::byte{4});   // h 0, j 0, t 1 <- HF row 4
    CHECK(stored[static_cast<std::size_t>(10 * row_bytes)] == std::byte{9});  // h 1, j 1, t 0 <- HF row 9
    unpermute_rows(stored.data(), back.data(), rows, row_bytes, heads);
    CHECK(back == hf);
  }
}

}  // namespace llaisys::gguf
