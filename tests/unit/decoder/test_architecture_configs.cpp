// Each architecture plugin's config rules and options, through the real plugins (dlopen, the C table,
// the registry): a config.json that describes a feature the architecture does not implement fails to
// load with the key and value named, a misspelt model option fails with the list of valid ones, and
// the real configs are accepted. The model directories hold only config.json, so a config that passes
// stops at the missing weights.

#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "llaisys/model/registry.hpp"
#include "temp_dir.hpp"

using namespace llaisys;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

const PluginRegistry& registry() {
  static const PluginRegistry r = [] {
    PluginRegistry loaded;
    loaded.load_directory(LLAISYS_PLUGIN_DIR);
    return loaded;
  }();
  return r;
}

json::object read_config(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str()).as_object();
}

// The configs the fixtures and the demo model ship, one per architecture.
struct Architecture {
  std::string name;
  json::object config;
};
const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> all = [] {
    const fs::path data(LLAISYS_SHARED_FIXTURES);
    return std::vector<Architecture>{
        {"LlamaForCausalLM", read_config(fs::path(LLAISYS_SOURCE_DIR) / "models/stories260K/config.json")},
        {"Qwen2ForCausalLM", read_config(data / "tiny-qwen2/config.json")},
        {"Qwen3ForCausalLM", read_config(data / "tiny-qwen3/config.json")},
        {"MistralForCausalLM", read_config(data / "tiny-mistral/config.json")},
        {"Gemma2ForCausalLM", read_config(data / "tiny-gemma2/config.json")}};
  }();
  return all;
}

json::object config_of(std::string_view architecture) {
  for (const Architecture& a : architectures()) {
    if (a.name == architecture) return a.config;
  }
  FAIL("no config for " << architecture);
  return {};
}

// Opens a directory holding only `config`; the model can never load (no weights), so this is the
// error the plugin gave.
Status open_error(const json::object& config, const std::string& options = "{}") {
  test::TempDir dir;
  dir.write("config.json", json::serialize(config));
  auto model = registry().open_model({.model_dir = dir.path(), .options_json = options});
  REQUIRE_FALSE(model.ok());
  return model.status();
}

// The config was accepted: what stopped the load was the missing weights.
bool accepted(const Status& status) {
  return status.code() == ErrorCode::not_found &&
         status.message().find("no model.safetensors") != std::string::npos;
}

json::object with(json::object config, std::string_view key, json::value value) {
  config[key] = std::move(value);
  return config;
}

}  // namespace

TEST_CASE("architecture configs: the real configs of every architecture are accepted", "[decoder][config]") {
  for (const Architecture& a : architectures()) {
    INFO(a.name);
    const Status status = open_error(a.config);
    INFO(status.to_string());
    CHECK(accepted(status));
  }
}

TEST_CASE("architecture configs: an unimplemented rope type, activation or quantization is refused by name",
          "[decoder][config]") {
  for (const Architecture& a : architectures()) {
    INFO(a.name);
    const Status yarn = open_error(with(a.config, "rope_scaling", json::parse(R"({"rope_type": "yarn", "factor": 4.0})")));
    CHECK(yarn.code() == ErrorCode::unsupported);
    CHECK_THAT(yarn.message(), Catch::Contains("rope_scaling type 'yarn' is not supported"));

    const std::string activation_key = a.name == "Gemma2ForCausalLM" ? "hidden_activation" : "hidden_act";
    const Status act = open_error(with(a.config, activation_key, "relu"));
    CHECK(act.code() == ErrorCode::unsupported);
    CHECK_THAT(act.message(), Catch::Contains("\"" + activation_key + "\" = \"relu\" is not supported"));

    const Status quantized = open_error(with(a.config, "quantization_config", json::parse(R"({"quant_method": "gptq"})")));
    CHECK(quantized.code() == ErrorCode::unsupported);
    CHECK_THAT(quantized.message(), Catch::Contains("\"quantization_config\"") && Catch::Contains(a.name));
  }
  // Gemma 2 reads hidden_activation; the erf GELU is another function.
  const Status erf = open_error(with(config_of("Gemma2ForCausalLM"), "hidden_activation", "gelu"));
  CHECK_THAT(erf.message(), Catch::Contains("\"hidden_activation\" = \"gelu\" is not supported"));
}

TEST_CASE("architecture configs: a sliding window where the architecture has none is refused", "[decoder][config]") {
  const Status llama = open_error(with(config_of("LlamaForCausalLM"), "sliding_window", 4096));
  CHECK(llama.code() == ErrorCode::unsupported);
  CHECK_THAT(llama.message(), Catch::Contains("\"sliding_window\" = 4096") && Catch::Contains("LlamaForCausalLM"));
  for (const char* qwen : {"Qwen2ForCausalLM", "Qwen3ForCausalLM"}) {
    INFO(qwen);
    const Status s = open_error(with(config_of(qwen), "use_sliding_window", true));
    CHECK(s.code() == ErrorCode::unsupported);
    CHECK_THAT(s.message(), Catch::Contains("\"use_sliding_window\" = true"));
    // sliding_window itself only matters with use_sliding_window (transformers' Qwen2/Qwen3).
    CHECK(accepted(open_error(with(config_of(qwen), "sliding_window", 4096))));
  }
  // Mistral's window is its own; without one it is full attention.
  CHECK(accepted(open_error(with(config_of("MistralForCausalLM"), "sliding_window", nullptr))));
  const Status negative = open_error(with(config_of("MistralForCausalLM"), "sliding_window", -4));
  CHECK_THAT(negative.message(), Catch::Contains("\"sliding_window\" = -4 is outside"));
  // Soft caps are Gemma 2's.
  const Status capped = open_error(with(config_of("LlamaForCausalLM"), "final_logit_softcapping", 30.0));
  CHECK(capped.code() == ErrorCode::unsupported);
  CHECK_THAT(capped.message(), Catch::Contains("\"final_logit_softcapping\" = 30"));
}

TEST_CASE("architecture configs: each architecture's own keys are checked", "[decoder][config]") {
  const Status mlp_bias = open_error(with(config_of("Qwen2ForCausalLM"), "mlp_bias", true));
  CHECK(mlp_bias.code() == ErrorCode::unsupported);
  CHECK_THAT(mlp_bias.message(), Catch::Contains("\"mlp_bias\" = true") && Catch::Contains("no MLP biases"));
  CHECK(accepted(open_error(with(config_of("LlamaForCausalLM"), "mlp_bias", true))));  // Llama has them
  const Status mistral_bias = open_error(with(config_of("MistralForCausalLM"), "attention_bias", true));
  CHECK(mistral_bias.code() == ErrorCode::unsupported);
  CHECK_THAT(mistral_bias.message(), Catch::Contains("\"attention_bias\" = true"));

  const json::object gemma = config_of("Gemma2ForCausalLM");
  json::object no_head_dim = gemma;
  no_head_dim.erase("head_dim");
  CHECK_THAT(open_error(no_head_dim).message(), Catch::Contains("missing \"head_dim\""));
  const Status types = open_error(with(gemma, "layer_types", json::parse(R"(["sliding_attention", "full_attention"])")));
  CHECK(types.code() == ErrorCode::invalid_argument);
  CHECK_THAT(types.message(), Catch::Contains("\"layer_types\"") && Catch::Contains("one entry per layer (4)"));
  const Status chunked = open_error(
      with(gemma, "layer_types", json::parse(R"(["chunked_attention", "full_attention", "full_attention", "full_attention"])")));
  CHECK(chunked.code() == ErrorCode::unsupported);
  CHECK_THAT(chunked.message(), Catch::Contains("chunked_attention"));
  CHECK_THAT(open_error(with(gemma, "query_pre_attn_scalar", "96")).message(),
             Catch::Contains("\"query_pre_attn_scalar\" must be a number"));
}

TEST_CASE("architecture configs: a misspelt or ill-typed model option is refused with the valid keys", "[decoder][options]") {
  for (const Architecture& a : architectures()) {
    INFO(a.name);
    const Status typo = open_error(a.config, R"({"kv_dtyp": "bf16"})");
    CHECK(typo.code() == ErrorCode::invalid_argument);
    CHECK_THAT(typo.message(), Catch::Contains("unknown model option \"kv_dtyp\"") &&
                                   Catch::Contains("valid options: cuda_graphs, device, isa, kv_dtype, matmul, weights"));
  }
  const json::object qwen3 = config_of("Qwen3ForCausalLM");
  CHECK_THAT(open_error(qwen3, R"({"kv_dtype": 16})").message(), Catch::Contains("option kv_dtype"));
  CHECK_THAT(open_error(qwen3, R"({"isa": "sse"})").message(), Catch::Contains("option isa: expected auto, avx512, avx2 or scalar"));
  CHECK_THAT(open_error(qwen3, R"({"device": 1})").message(), Catch::Contains("option device"));
  CHECK_THAT(open_error(qwen3, R"({"device": "cuda", "isa": "avx2"})").message(),
             Catch::Contains("apply to the cpu device"));
  CHECK_THAT(open_error(qwen3, "[1]").message(), Catch::Contains("model options must be a JSON object"));
  CHECK_THAT(open_error(qwen3, R"({"cuda_graphs": "on"})").message(),
             Catch::Contains("option cuda_graphs applies to a cuda device, not cpu"));
  CHECK_THAT(open_error(qwen3, R"({"device": "cuda", "cuda_graphs": "always"})").message(),
             Catch::Contains("option cuda_graphs"));
  // A CUDA device where none can run fails clearly, never falls back to the CPU.
  const Status cuda = open_error(qwen3, R"({"device": "cuda:0"})");
  CHECK(cuda.code() == ErrorCode::unsupported);
  CHECK_THAT(cuda.message(), Catch::Contains("cuda:0"));
}
