// The config.json keys the Llama family shares (plugins/common/decoder_config.hpp): what is read into a
// DecoderSpec, and what is refused clearly. Each architecture's own keys are tested through its
// plugin in test_architecture_configs.cpp.

#include <catch2/catch.hpp>

#include "decoder_config.hpp"

using namespace llaisys;
using namespace llaisys::decoder;

namespace {

const std::string kQwen2 = R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
  "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
  "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
  "max_position_embeddings": 32768, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
  "hidden_act": "silu", "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "bos_token_id": 151643, "eos_token_id": 151643, "use_sliding_window": false,
  "sliding_window": 32768, "rope_scaling": null, "attention_dropout": 0.0
})";

// kQwen2 with `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = kQwen2;
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

Result<DecoderSpec> parse(const std::string& config, std::optional<std::string_view> generation = std::nullopt) {
  LLAISYS_ASSIGN_OR_RETURN(ConfigReader reader, ConfigReader::parse(config, generation));
  return read_decoder_config(reader, "Qwen2ForCausalLM");
}

Status error_of(const std::string& config, std::optional<std::string_view> generation = std::nullopt) {
  auto parsed = parse(config, generation);
  REQUIRE_FALSE(parsed.ok());
  return parsed.status();
}

}  // namespace

TEST_CASE("decoder config: a Qwen2 config.json", "[decoder][config]") {
  auto parsed = parse(kQwen2);
  REQUIRE(parsed.ok());
  const DecoderSpec& c = parsed.value();
  CHECK(c.architecture == "Qwen2ForCausalLM");
  CHECK(c.hidden_size == 896);
  CHECK(c.intermediate_size == 4864);
  CHECK(c.num_layers == 24);
  CHECK(c.num_heads == 14);
  CHECK(c.num_kv_heads == 2);
  CHECK(c.head_dim == 64);
  CHECK(c.vocab_size == 151936);
  CHECK(c.max_context == 32768);
  CHECK(c.rope.theta == 1e6);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.tie_word_embeddings);
  CHECK(c.rope.scaling.kind == RopeScaling::Kind::none);
  CHECK(c.bos_token_id == 151643);
  CHECK(c.eos_token_ids == std::vector<TokenId>{151643});
  // The family reader sets no piece of its own: the architecture does.
  CHECK_FALSE(c.qkv_bias);
  CHECK(c.layer_windows.empty());
}

TEST_CASE("decoder config: keys no one reads are listed, keys that change the model are refused", "[decoder][config]") {
  auto reader = ConfigReader::parse(edited(R"("attention_dropout": 0.0)", R"("attention_dropout": 0.0, "frobnicate": 3)"));
  REQUIRE(reader.ok());
  auto spec = read_decoder_config(*reader, "Qwen2ForCausalLM");
  REQUIRE(spec.ok());
  reader->mark_read({"hidden_act"});  // what the architecture reads
  // use_sliding_window is false (neutral); sliding_window is set and no one read it: refused.
  const Status refused = finish_config(*reader, *spec);
  CHECK(refused.code() == ErrorCode::unsupported);
  CHECK_THAT(refused.message(), Catch::Contains("\"sliding_window\" = 32768") && Catch::Contains("Qwen2ForCausalLM"));
  reader->mark_read({"sliding_window"});
  CHECK(finish_config(*reader, *spec).ok());  // "frobnicate" only warns
  const std::vector<std::string> unread = reader->unread_keys();
  CHECK(std::find(unread.begin(), unread.end(), "frobnicate") != unread.end());
  CHECK(std::find(unread.begin(), unread.end(), "hidden_size") == unread.end());

  auto quantized = ConfigReader::parse(edited(R"("attention_dropout": 0.0)", R"("quantization_config": {"bits": 4})"));
  REQUIRE(quantized.ok());
  quantized->mark_read({"sliding_window", "hidden_act"});
  const Status q = finish_config(*quantized, read_decoder_config(*quantized, "Qwen2ForCausalLM").value());
  CHECK(q.code() == ErrorCode::unsupported);
  CHECK_THAT(q.message(), Catch::Contains("quantization_config"));
}

TEST_CASE("decoder config: generation_config.json supplies the EOS ids", "[decoder][config]") {
  auto parsed = parse(kQwen2, R"({"bos_token_id": 151643, "eos_token_id": [151645, 151643]})");
  REQUIRE(parsed.ok());
  CHECK(parsed->eos_token_ids == std::vector<TokenId>{151645, 151643});
  CHECK_THAT(error_of(kQwen2, R"({"eos_token_id": "x"})").message(),
             Catch::Contains("generation_config.json") && Catch::Contains("eos_token_id"));
}

TEST_CASE("decoder config: optional keys take their defaults", "[decoder][config]") {
  auto parsed = parse(edited(R"("num_key_value_heads": 2, )", ""));
  REQUIRE(parsed.ok());
  CHECK(parsed->num_kv_heads == 14);
  auto explicit_head_dim = parse(edited(R"("hidden_size": 896,)", R"("hidden_size": 896, "head_dim": 128,)"));
  REQUIRE(explicit_head_dim.ok());
  CHECK(explicit_head_dim->head_dim == 128);
}

TEST_CASE("decoder config: rope scaling kinds", "[decoder][config]") {
  auto linear = parse(edited(R"("rope_scaling": null)", R"("rope_scaling": {"type": "linear", "factor": 2.0})"));
  REQUIRE(linear.ok());
  CHECK(linear->rope.scaling.kind == RopeScaling::Kind::linear);
  CHECK(linear->rope.scaling.factor == 2.0);
  CHECK(parse(edited(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "default"})")).ok());
  for (const char* kind : {"yarn", "dynamic", "longrope"}) {
    const Status s = error_of(edited(R"("rope_scaling": null)",
                                     std::string(R"("rope_scaling": {"rope_type": ")") + kind + R"(", "factor": 4.0})"));
    INFO(s.to_string());
    CHECK(s.code() == ErrorCode::unsupported);
    CHECK_THAT(s.message(), Catch::Contains(std::string("rope_scaling type '") + kind + "' is not supported"));
  }
}

TEST_CASE("decoder config: transformers v5 rope_parameters are read, never ignored", "[decoder][config]") {
  // v5 moves rope_theta and the scaling into one "rope_parameters" object.
  auto v5 = parse(edited(R"("rope_scaling": null)",
                                   R"("rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000.0})"));
  REQUIRE(v5.ok());
  CHECK(v5->rope.scaling.kind == RopeScaling::Kind::linear);
  CHECK(v5->rope.scaling.factor == 4.0);
  CHECK(v5->rope.theta == 500000.0);
  auto plain = parse(edited(R"("rope_scaling": null)", R"("rope_parameters": {"rope_type": "default", "rope_theta": 20000.0})"));
  REQUIRE(plain.ok());
  CHECK(plain->rope.scaling.kind == RopeScaling::Kind::none);
  CHECK(plain->rope.theta == 20000.0);
  CHECK(error_of(edited(R"("rope_scaling": null)", R"("rope_parameters": {"rope_type": "yarn", "factor": 4.0})")).code() ==
        ErrorCode::unsupported);
  CHECK_THAT(error_of(edited(R"("rope_scaling": null)",
                             R"("rope_scaling": {"rope_type": "linear", "factor": 2.0}, "rope_parameters": {"rope_type": "default"})"))
                 .message(),
             Catch::Contains("both"));
}

TEST_CASE("decoder config: llama3 rope scaling (Llama 3.1) reads its four parameters", "[decoder][config]") {
  const std::string llama31 =
      R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 8192, "rope_type": "llama3"})";
  auto parsed = parse(edited(R"("rope_scaling": null)", llama31));
  REQUIRE(parsed.ok());
  CHECK(parsed->rope.scaling.kind == RopeScaling::Kind::llama3);
  CHECK(parsed->rope.scaling.factor == 8.0);
  CHECK(parsed->rope.scaling.low_freq_factor == 1.0);
  CHECK(parsed->rope.scaling.high_freq_factor == 4.0);
  CHECK(parsed->rope.scaling.original_max_position_embeddings == 8192);

  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = llama31;
    text.replace(text.find(from), from.size(), to);
    return error_of(edited(R"("rope_scaling": null)", text));
  };
  CHECK_THAT(with(R"("low_freq_factor": 1.0, )", "").message(), Catch::Contains("missing \"low_freq_factor\""));
  CHECK_THAT(with(R"("original_max_position_embeddings": 8192, )", "").message(),
             Catch::Contains("missing \"original_max_position_embeddings\""));
  CHECK_THAT(with(R"("factor": 8.0)", R"("factor": 0.5)").message(), Catch::Contains("a factor of at least 1"));
  CHECK_THAT(with(R"("high_freq_factor": 4.0)", R"("high_freq_factor": 1.0)").message(),
             Catch::Contains("\"high_freq_factor\" = 1: must exceed low_freq_factor (1)"));
  CHECK_THAT(with(R"("low_freq_factor": 1.0)", R"("low_freq_factor": "1")").message(),
             Catch::Contains("\"low_freq_factor\" must be a number"));
}

TEST_CASE("decoder config: rotary settings llaisys does not implement are refused", "[decoder][config]") {
  const Status partial = error_of(edited(R"("rope_theta")", R"("partial_rotary_factor": 0.5, "rope_theta")"));
  CHECK(partial.code() == ErrorCode::unsupported);
  CHECK_THAT(partial.message(), Catch::Contains("\"partial_rotary_factor\" = 0.5"));
  CHECK(parse(edited(R"("rope_theta")", R"("partial_rotary_factor": 1.0, "rope_theta")")).ok());
  // A key of the scaling object that its kind does not use would be ignored: refused.
  const Status extra = error_of(edited(R"("rope_scaling": null)", R"("rope_scaling": {"type": "linear", "factor": 2.0, "beta_fast": 32})"));
  CHECK(extra.code() == ErrorCode::unsupported);
  CHECK_THAT(extra.message(), Catch::Contains("beta_fast"));
}

TEST_CASE("decoder config: malformed values name their key", "[decoder][config]") {
  CHECK_THAT(error_of(edited(R"("hidden_size": 896,)", "")).message(), Catch::Contains("missing \"hidden_size\""));
  CHECK_THAT(error_of(edited(R"("hidden_size": 896)", R"("hidden_size": "896")")).message(),
             Catch::Contains("\"hidden_size\" must be an integer"));
  CHECK_THAT(error_of(edited(R"("num_hidden_layers": 24)", R"("num_hidden_layers": 0)")).message(),
             Catch::Contains("\"num_hidden_layers\" = 0 is outside"));
  CHECK_THAT(error_of(edited(R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)")).message(),
             Catch::Contains("not a multiple of num_key_value_heads 3"));
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": -1)")).message(),
             Catch::Contains("\"rms_norm_eps\" = -1 is outside"));
  // As a float, 1e-50 would be 0 (NaN for an all-zero row) and 1e300 infinite.
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e-50)")).message(),
             Catch::Contains("\"rms_norm_eps\" = 1e-50 is outside"));
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e300)")).message(),
             Catch::Contains("\"rms_norm_eps\" = 1e+300 is outside"));
  CHECK(parse(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e-12)")).ok());
  CHECK(parse(kQwen2, R"({"eos_token_id": [1, 2, 3, 4, 5, 6, 7, 8]})").ok());
  const Status nine = error_of(kQwen2, R"({"eos_token_id": [1, 2, 3, 4, 5, 6, 7, 8, 9]})");
  CHECK(nine.code() == ErrorCode::unsupported);
  CHECK_THAT(nine.message(), Catch::Contains("9 eos_token_id values; llaisys supports up to 8"));
  CHECK_THAT(error_of(edited(R"("eos_token_id": 151643)", R"("eos_token_id": 999999)")).message(),
             Catch::Contains("outside the vocabulary"));
  CHECK_THAT(error_of(R"({"hidden_size": 1, "hidden_size": 2})").message(), Catch::Contains("duplicate key 'hidden_size'"));
  CHECK(error_of("not json").code() == ErrorCode::parse_error);
  CHECK(error_of("[1]").code() == ErrorCode::parse_error);
}
