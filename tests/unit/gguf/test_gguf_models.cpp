// The llama plugin on each tiny-llama GGUF file (made by llama.cpp's tools) against llama.cpp's
// logits on that very file, and the F32 file against the same model from safetensors.
//
// The check is the fixture README's: teacher-forced (prompt + greedy tokens in chunks), every listed
// top-5 logit within the file's suggested_logit_tolerance, and the argmax equal to llama.cpp's
// wherever its top1-top2 gap exceeds twice the tolerance.

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "cpu/linear_bf16.hpp"
#include "generated_model.hpp"
#include "reference_data.hpp"

namespace llaisys::test {
namespace {
namespace fs = std::filesystem;

const fs::path kFixture = fs::path(LLAISYS_TEST_DATA_DIR) / "tiny-llama-gguf";
constexpr const char* kPlugin = "libllaisys-llama.so";

float tolerance_of(const fs::path& reference_json) {
  std::ifstream in(reference_json);
  std::stringstream text;
  text << in.rdbuf();
  return static_cast<float>(boost::json::parse(text.str()).at("suggested_logit_tolerance").to_number<double>());
}

struct Agreement {
  float max_error = 0;
  int rows = 0;
  int argmax_checked = 0;
  std::string problems;
};

Agreement compare_with_reference(const std::string& type, const std::string& options_json, int32_t chunk) {
  const fs::path reference = kFixture / fmt::format("reference-{}.json", type);
  const float tolerance = tolerance_of(reference);
  AnyModel model = open_plugin_model(kPlugin, kFixture / fmt::format("tiny-llama-{}.gguf", type), 2, options_json);
  Agreement a;
  for_each_teacher_forced_row(model, reference_cases(reference), chunk,
                              [&](const ReferenceCase& c, int32_t position, const std::vector<float>& logits,
                                  const Top5& expected) {
                                ++a.rows;
                                float error = 0;
                                for (const auto& [id, logit] : expected) {
                                  error = std::max(error, std::fabs(logits[static_cast<std::size_t>(id)] - logit));
                                }
                                a.max_error = std::max(a.max_error, error);
                                if (!(error <= tolerance)) {
                                  a.problems += fmt::format("\n{} position {}: top-5 logits off by {}", c.name, position, error);
                                }
                                if (expected[0].second - expected[1].second > 2 * tolerance) {
                                  ++a.argmax_checked;
                                  const TokenId ours = top_k(logits, 1)[0].first;
                                  if (ours != expected[0].first) {
                                    a.problems += fmt::format("\n{} position {}: argmax {} where llama.cpp has {}", c.name,
                                                              position, ours, expected[0].first);
                                  }
                                }
                              });
  return a;
}

}  // namespace

TEST_CASE("each tiny-llama GGUF file gives llama.cpp's logits on that file", "[gguf]") {
  const std::string type = GENERATE("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K");
  // The plugins' default (on a CPU with AVX512-VNNI/VBMI/BITALG the Q8_0 / Q4_0 / Q5_0 matrices
  // take the int8 mode; named here, as open_plugin_model otherwise names the exact path) and the
  // exact path.
  const std::string options = GENERATE(as<std::string>{}, R"({"matmul": "auto"})", R"({"matmul": "f32"})");
  CAPTURE(type, options);
  const Agreement a = compare_with_reference(type, options, 48);
  INFO(fmt::format("{} {}: {} rows, max top-5 error {:.4g} (tolerance {}), {} argmax checks", type, options, a.rows,
                   a.max_error, tolerance_of(kFixture / fmt::format("reference-{}.json", type)), a.argmax_checked));
  CHECK(a.rows > 400);
  CHECK(a.argmax_checked > 100);
  CHECK(a.problems.empty());
  // The spread measured between implementations in the fixture's README, for the record.
  WARN(fmt::format("{} {}: max top-5 |logit - llama.cpp| {:.4g}", type, options, a.max_error));
}

TEST_CASE("in the bf16 matmul mode each quantized tiny-llama file stays within llama.cpp's tolerance", "[gguf][bf16]") {
  if (!cpu::bf16dot::supported()) {
    WARN("this CPU has no AVX512-BF16: the bf16 matmul mode is not tested here");
    return;
  }
  // Weights and activations rounded to bf16 on top of the quantization: llama.cpp rounds the
  // activations to 8 bits for these files, so the file's tolerance covers it.
  const std::string type = GENERATE("Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K");
  CAPTURE(type);
  const Agreement a = compare_with_reference(type, R"({"matmul": "bf16"})", 48);
  const Agreement exact = compare_with_reference(type, R"({"matmul": "f32"})", 48);
  INFO(fmt::format("{}: {} rows, max top-5 error {:.4g} (f32 mode {:.4g})", type, a.rows, a.max_error, exact.max_error));
  CHECK(a.rows > 400);
  CHECK(a.problems.empty());
  CHECK(a.max_error != exact.max_error);  // the mode really ran on the quantized matrices
  WARN(fmt::format("{} bf16 mode: max top-5 |logit - llama.cpp| {:.4g} (f32 mode {:.4g})", type, a.max_error,
                   exact.max_error));
}

TEST_CASE("in the int8 matmul mode the Q8_0 and Q4_0 tiny-llama files stay within llama.cpp's tolerance",
          "[gguf][int8]") {
  // Activations rounded to 8-bit blocks and integer products: what llama.cpp itself does with
  // these files. The scalar form runs where the CPU lacks AVX512-VNNI/VBMI/BITALG (same bits, slower).
  const std::string type = GENERATE("Q8_0", "Q4_0");
  CAPTURE(type);
  const Agreement a = compare_with_reference(type, R"({"matmul": "int8"})", 48);
  const Agreement exact = compare_with_reference(type, R"({"matmul": "f32"})", 48);
  INFO(fmt::format("{}: {} rows, max top-5 error {:.4g} (f32 mode {:.4g})", type, a.rows, a.max_error, exact.max_error));
  CHECK(a.rows > 400);
  CHECK(a.argmax_checked > 100);
  CHECK(a.problems.empty());
  CHECK(a.max_error != exact.max_error);  // the mode really ran on the quantized matrices
  WARN(fmt::format("{} int8 mode: max top-5 |logit - llama.cpp| {:.4g} (f32 mode {:.4g})", type, a.max_error,
                   exact.max_error));
}

TEST_CASE("a quantized GGUF model gives the same bits in one pass, in chunks and one token at a time", "[gguf]") {
  const std::string type = GENERATE("Q8_0", "Q4_0", "Q4_K_M");
  // Every matmul mode (the bf16 one where the CPU has it): batch invariance holds within each.
  const std::string options =
      GENERATE(as<std::string>{}, R"({"matmul": "f32"})", R"({"matmul": "bf16"})", R"({"matmul": "int8"})");
  CAPTURE(type, options);
  if (options.find("bf16") != std::string::npos && !cpu::bf16dot::supported()) return;
  const ReferenceCase& c = reference_cases(kFixture / fmt::format("reference-{}.json", type)).front();
  const auto run = [&](int32_t chunk) {
    AnyModel model = open_plugin_model(kPlugin, kFixture / fmt::format("tiny-llama-{}.gguf", type), 2, options);
    std::vector<std::vector<float>> rows;
    const auto n = static_cast<int32_t>(c.prompt_ids.size());
    const std::vector<BlockId> table = block_range(0, (n + 15) / 16);
    for (int32_t start = 0; start < n; start += chunk) {
      const int32_t end = std::min(n, start + chunk);
      auto out = run_batch(model, {{.tokens = {c.prompt_ids.begin() + start, c.prompt_ids.begin() + end},
                                    .start = start,
                                    .table = table,
                                    .all_outputs = true}});
      rows.insert(rows.end(), out.begin(), out.end());
    }
    return rows;
  };
  const auto whole = run(1024), chunks = run(7), single = run(1);
  REQUIRE(whole.size() == c.prompt_ids.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::memcmp(whole[i].data(), chunks[i].data(), whole[i].size() * sizeof(float)) == 0);
    REQUIRE(std::memcmp(whole[i].data(), single[i].data(), whole[i].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("the F32 GGUF file computes exactly what the same model's safetensors do", "[gguf]") {
  // The F32 file holds the bf16 weights widened exactly, with llama.cpp's q/k row order: once the
  // reader undoes that order, every product is the same, so every logit is bit-identical.
  AnyModel from_gguf = open_plugin_model(kPlugin, kFixture / "tiny-llama-F32.gguf");
  AnyModel from_safetensors = open_plugin_model(kPlugin, generated_model_dir("tiny-llama"));
  for (const ReferenceCase& c : reference_cases(kFixture / "reference-F32.json")) {
    CAPTURE(c.name);
    const auto n = static_cast<int32_t>(c.prompt_ids.size());
    const SeqChunk chunk{.tokens = c.prompt_ids, .start = 0, .table = block_range(0, (n + 15) / 16), .all_outputs = true};
    const auto a = run_batch(from_gguf, {chunk});
    const auto b = run_batch(from_safetensors, {chunk});
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(i);
      REQUIRE(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) == 0);
    }
  }
}


TEST_CASE("quantizing on load gives exactly what llama-quantize's Q8_0 file computes", "[gguf]") {
  // ggml's reference Q8_0 quantizer is what both use, row by row, so the weights are the same blocks
  // (llama.cpp's q/k row order aside, which the reader undoes) and every logit is the same.
  AnyModel from_file = open_plugin_model(kPlugin, kFixture / "tiny-llama-Q8_0.gguf");
  AnyModel on_load = open_plugin_model(kPlugin, generated_model_dir("tiny-llama"), 2, R"({"weights_dtype": "q8_0"})");
  AnyModel bf16 = open_plugin_model(kPlugin, generated_model_dir("tiny-llama"));
  CHECK(on_load.info().weight_bytes == from_file.info().weight_bytes);
  CHECK(on_load.info().weight_bytes * 17 < bf16.info().weight_bytes * 10);  // 34 bytes per 32 vs 64
  const ReferenceCase& c = reference_cases(kFixture / "reference-Q8_0.json").back();
  const auto n = static_cast<int32_t>(c.prompt_ids.size());
  const SeqChunk chunk{.tokens = c.prompt_ids, .start = 0, .table = block_range(0, (n + 15) / 16), .all_outputs = true};
  const auto a = run_batch(from_file, {chunk});
  const auto b = run_batch(on_load, {chunk});
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("weights_dtype is refused where it cannot apply, naming it", "[gguf]") {
  CHECK_THROWS_WITH(open_plugin_model(kPlugin, generated_model_dir("tiny-llama"), 2, R"({"weights_dtype": "q3_k"})"),
                    Catch::Contains("weights_dtype"));
}

}  // namespace llaisys::test
