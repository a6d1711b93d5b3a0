// Hugging Face config.json + generation_config.json: what is read, and what is refused clearly.

#include <catch2/catch.hpp>

#include "llaisys/model/hf_config.hpp"

using namespace llaisys;

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

Status error_of(const std::string& config, std::optional<std::string_view> generation = std::nullopt) {
  auto parsed = parse_hf_config(config, generation);
  REQUIRE_FALSE(parsed.ok());
  return parsed.status();
}

}  // namespace

TEST_CASE("hf config: a Qwen2 config.json", "[weights][config]") {
  auto parsed = parse_hf_config(kQwen2, std::nullopt);
  REQUIRE(parsed.ok());
  const HfTransformerConfig& c = parsed.value();
  CHECK(c.architectures == std::vector<std::string>{"Qwen2ForCausalLM"});
  CHECK(c.model_type == "qwen2");
  CHECK(c.hidden_size == 896);
  CHECK(c.intermediate_size == 4864);
  CHECK(c.num_layers == 24);
  CHECK(c.num_heads == 14);
  CHECK(c.num_kv_heads == 2);
  CHECK(c.head_dim == 64);
  CHECK(c.vocab_size == 151936);
  CHECK(c.max_position_embeddings == 32768);
  CHECK(c.rope_theta == 1e6);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK(c.tie_word_embeddings);
  CHECK(c.rope_scaling.kind == RopeScaling::Kind::none);
  CHECK(c.torch_dtype == DType::bf16);
  CHECK(c.bos_token_id == 151643);
  CHECK(c.eos_token_ids == std::vector<TokenId>{151643});
}

TEST_CASE("hf config: generation_config.json supplies the EOS ids", "[weights][config]") {
  auto parsed = parse_hf_config(kQwen2, R"({"bos_token_id": 151643, "eos_token_id": [151645, 151643]})");
  REQUIRE(parsed.ok());
  CHECK(parsed->eos_token_ids == std::vector<TokenId>{151645, 151643});
  CHECK_THAT(error_of(kQwen2, R"({"eos_token_id": "x"})").message(),
             Catch::Contains("generation_config.json") && Catch::Contains("eos_token_id"));
}

TEST_CASE("hf config: optional keys take their defaults", "[weights][config]") {
  auto parsed = parse_hf_config(edited(R"("num_key_value_heads": 2, )", ""), std::nullopt);
  REQUIRE(parsed.ok());
  CHECK(parsed->num_kv_heads == 14);
  auto explicit_head_dim = parse_hf_config(edited(R"("hidden_size": 896,)", R"("hidden_size": 896, "head_dim": 128,)"), std::nullopt);
  REQUIRE(explicit_head_dim.ok());
  CHECK(explicit_head_dim->head_dim == 128);
}

TEST_CASE("hf config: rope scaling kinds", "[weights][config]") {
  auto linear = parse_hf_config(edited(R"("rope_scaling": null)", R"("rope_scaling": {"type": "linear", "factor": 2.0})"), std::nullopt);
  REQUIRE(linear.ok());
  CHECK(linear->rope_scaling.kind == RopeScaling::Kind::linear);
  CHECK(linear->rope_scaling.factor == 2.0);
  CHECK(parse_hf_config(edited(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "default"})"), std::nullopt).ok());
  for (const char* kind : {"yarn", "dynamic", "longrope"}) {
    const Status s = error_of(edited(R"("rope_scaling": null)",
                                     std::string(R"("rope_scaling": {"rope_type": ")") + kind + R"(", "factor": 4.0})"));
    INFO(s.to_string());
    CHECK(s.code() == ErrorCode::unsupported);
    CHECK_THAT(s.message(), Catch::Contains(std::string("rope_scaling type '") + kind + "' is not supported"));
  }
}

TEST_CASE("hf config: transformers v5 rope_parameters are read, never ignored", "[weights][config]") {
  // v5 moves rope_theta and the scaling into one "rope_parameters" object.
  auto v5 = parse_hf_config(edited(R"("rope_scaling": null)",
                                   R"("rope_parameters": {"rope_type": "linear", "factor": 4.0, "rope_theta": 500000.0})"),
                            std::nullopt);
  REQUIRE(v5.ok());
  CHECK(v5->rope_scaling.kind == RopeScaling::Kind::linear);
  CHECK(v5->rope_scaling.factor == 4.0);
  CHECK(v5->rope_theta == 500000.0);
  auto plain = parse_hf_config(edited(R"("rope_scaling": null)", R"("rope_parameters": {"rope_type": "default", "rope_theta": 20000.0})"),
                               std::nullopt);
  REQUIRE(plain.ok());
  CHECK(plain->rope_scaling.kind == RopeScaling::Kind::none);
  CHECK(plain->rope_theta == 20000.0);
  CHECK(error_of(edited(R"("rope_scaling": null)", R"("rope_parameters": {"rope_type": "yarn", "factor": 4.0})")).code() ==
        ErrorCode::unsupported);
  CHECK_THAT(error_of(edited(R"("rope_scaling": null)",
                             R"("rope_scaling": {"rope_type": "linear", "factor": 2.0}, "rope_parameters": {"rope_type": "default"})"))
                 .message(),
             Catch::Contains("both"));
}

TEST_CASE("hf config: llama3 rope scaling (Llama 3.1) reads its four parameters", "[weights][config]") {
  const std::string llama31 =
      R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 8192, "rope_type": "llama3"})";
  auto parsed = parse_hf_config(edited(R"("rope_scaling": null)", llama31), std::nullopt);
  REQUIRE(parsed.ok());
  CHECK(parsed->rope_scaling.kind == RopeScaling::Kind::llama3);
  CHECK(parsed->rope_scaling.factor == 8.0);
  CHECK(parsed->rope_scaling.low_freq_factor == 1.0);
  CHECK(parsed->rope_scaling.high_freq_factor == 4.0);
  CHECK(parsed->rope_scaling.original_max_position_embeddings == 8192);

  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = llama31;
    text.replace(text.find(from), from.size(), to);
    return error_of(edited(R"("rope_scaling": null)", text));
  };
  CHECK_THAT(with(R"("low_freq_factor": 1.0, )", "").message(), Catch::Contains("needs \"low_freq_factor\""));
  CHECK_THAT(with(R"("original_max_position_embeddings": 8192, )", "").message(),
             Catch::Contains("missing \"original_max_position_embeddings\""));
  CHECK_THAT(with(R"("factor": 8.0)", R"("factor": 0.5)").message(), Catch::Contains("must be at least 1"));
  CHECK_THAT(with(R"("high_freq_factor": 4.0)", R"("high_freq_factor": 1.0)").message(),
             Catch::Contains("high_freq_factor (1) > low_freq_factor (1)"));
  CHECK_THAT(with(R"("low_freq_factor": 1.0)", R"("low_freq_factor": "1")").message(),
             Catch::Contains("\"low_freq_factor\" must be a number"));
}

TEST_CASE("hf config: settings llaisys does not implement are refused", "[weights][config]") {
  const Status window = error_of(edited(R"("use_sliding_window": false)", R"("use_sliding_window": true)"));
  CHECK(window.code() == ErrorCode::unsupported);
  CHECK_THAT(window.message(), Catch::Contains("use_sliding_window"));
  const Status act = error_of(edited(R"("hidden_act": "silu")", R"("hidden_act": "gelu")"));
  CHECK(act.code() == ErrorCode::unsupported);
  CHECK_THAT(act.message(), Catch::Contains("hidden_act \"gelu\""));
  CHECK(error_of(edited(R"("rope_theta")", R"("partial_rotary_factor": 0.5, "rope_theta")")).code() == ErrorCode::unsupported);
}

TEST_CASE("hf config: malformed values name their key", "[weights][config]") {
  CHECK_THAT(error_of(edited(R"("hidden_size": 896,)", "")).message(), Catch::Contains("missing \"hidden_size\""));
  CHECK_THAT(error_of(edited(R"("hidden_size": 896)", R"("hidden_size": "896")")).message(),
             Catch::Contains("\"hidden_size\" must be an integer"));
  CHECK_THAT(error_of(edited(R"("num_hidden_layers": 24)", R"("num_hidden_layers": 0)")).message(),
             Catch::Contains("\"num_hidden_layers\" = 0 is outside"));
  CHECK_THAT(error_of(edited(R"("num_key_value_heads": 2)", R"("num_key_value_heads": 3)")).message(),
             Catch::Contains("not a multiple of num_key_value_heads 3"));
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": -1)")).message(),
             Catch::Contains("\"rms_norm_eps\" must be positive"));
  // As a float, 1e-50 would be 0 (NaN for an all-zero row) and 1e300 infinite.
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e-50)")).message(),
             Catch::Contains("\"rms_norm_eps\" = 1e-50 is outside"));
  CHECK_THAT(error_of(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e300)")).message(),
             Catch::Contains("\"rms_norm_eps\" = 1e+300 is outside"));
  CHECK(parse_hf_config(edited(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": 1e-12)"), std::nullopt).ok());
  CHECK(parse_hf_config(kQwen2, R"({"eos_token_id": [1, 2, 3, 4, 5, 6, 7, 8]})").ok());
  const Status nine = error_of(kQwen2, R"({"eos_token_id": [1, 2, 3, 4, 5, 6, 7, 8, 9]})");
  CHECK(nine.code() == ErrorCode::unsupported);
  CHECK_THAT(nine.message(), Catch::Contains("9 eos_token_id values; llaisys supports up to 8"));
  CHECK_THAT(error_of(edited(R"("eos_token_id": 151643)", R"("eos_token_id": 999999)")).message(),
             Catch::Contains("outside the vocabulary"));
  CHECK_THAT(error_of(R"({"hidden_size": 1, "hidden_size": 2})").message(), Catch::Contains("duplicate key 'hidden_size'"));
  CHECK(error_of("not json").code() == ErrorCode::parse_error);
  CHECK(error_of("[1]").code() == ErrorCode::parse_error);
}
