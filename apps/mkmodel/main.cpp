// llaisys-mkmodel: writes a model directory with deterministic random weights, for tests, benchmarks
// and the demo run: the Qwen2 shapes of tests/data/tiny-qwen2/WEIGHTS.md, and the tiny Qwen3,
// Mistral, Gemma 2 and Llama models of tests/data/tiny-{qwen3,mistral,gemma2,llama-gguf}/WEIGHTS.md. See README.md.
//
//   llaisys-mkmodel [--shape tiny|qwen2-0.5b|qwen2-7b|tiny-qwen3|tiny-mistral|tiny-gemma2|tiny-llama] [--seed N]
//                   [--shards N] [--tokenizer-dir DIR | --no-tokenizer] [--force] OUT_DIR
//   llaisys-mkmodel --format gguf --dtype q8_0|q4_0|q4_k_m|... [--shape ...] [--force] OUT.gguf
//                   (the same model written as one GGUF file by llaisys-quantize's library)

#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app_log.hpp"
#include "gguf_convert.hpp"
#include "model_writer.hpp"

int main(int argc, char** argv) {
  using namespace llaisys::mkmodel;
  CLI::App app{"llaisys-mkmodel: write a model directory (Qwen2, Qwen3, Mistral or Gemma 2) with deterministic "
               "random weights"};
  std::string shape_name = "tiny";
  uint64_t seed = 0;
  int32_t shards = 1;
  std::string out_dir;
  std::string tokenizer_dir;
  bool no_tokenizer = false;
  bool force = false;
  std::string format = "safetensors";
  std::string gguf_type = "bf16";
  app.add_option("--format", format, "safetensors (a model directory) or gguf (one file)")
      ->check(CLI::IsMember({"safetensors", "gguf"}))
      ->capture_default_str();
  app.add_option("--dtype", gguf_type, "weight type of a GGUF file's matrices")
      ->check(CLI::IsMember(llaisys::convert::gguf_type_names()))
      ->capture_default_str();
  app.add_option("--shape", shape_name, "model shape (tiny: the tiny Qwen2)")
      ->check(CLI::IsMember(shape_names()))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed mixed into every tensor's values")->capture_default_str();
  app.add_option("--shards", shards, "number of safetensors files (>1 adds model.safetensors.index.json)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--tokenizer-dir", tokenizer_dir,
                 fmt::format("where tokenizer.json and tokenizer_config.json come from (default: the shape's, {} "
                             "or {} for tiny-mistral and tiny-gemma2)",
                             default_tokenizer_dir(*find_shape("tiny")).string(),
                             default_tokenizer_dir(*find_shape("tiny-mistral")).string()));
  app.add_flag("--no-tokenizer", no_tokenizer, "write no tokenizer files");
  app.add_flag("--force", force, "replace OUT_DIR if it exists");
  app.add_option("OUT_DIR", out_dir, "model directory to create")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  llaisys::app::init_logging("warn");
  const auto shape = find_shape(shape_name);
  if (tokenizer_dir.empty()) tokenizer_dir = default_tokenizer_dir(*shape).string();
  const auto start = std::chrono::steady_clock::now();
  if (format != "gguf" && app.count("--dtype") > 0) {
    fmt::print(stderr, "llaisys-mkmodel: error: --dtype applies to --format gguf\n");
    return 1;
  }
  if (format == "gguf") {
    if (shards != 1) {
      fmt::print(stderr, "llaisys-mkmodel: error: --shards applies to --format safetensors\n");
      return 1;
    }
    if (std::filesystem::exists(out_dir) && !force) {
      fmt::print(stderr, "llaisys-mkmodel: error: {} exists (--force replaces it)\n", out_dir);
      return 1;
    }
    // The model directory first (beside the output, removed after), then the conversion.
    const std::filesystem::path hf_dir = out_dir + ".hf.partial";
    llaisys::Status status = write_model(hf_dir, {.shape = *shape,
                                                  .seed = seed,
                                                  .num_shards = 1,
                                                  .tokenizer_dir = no_tokenizer ? std::filesystem::path()
                                                                                : std::filesystem::path(tokenizer_dir),
                                                  .overwrite = true});
    llaisys::Result<llaisys::convert::ConvertReport> report = status;
    if (status.ok()) report = llaisys::convert::convert_to_gguf(hf_dir, out_dir, gguf_type, shape_name);
    std::error_code ec;
    std::filesystem::remove_all(hf_dir, ec);
    if (!report.ok()) {
      fmt::print(stderr, "llaisys-mkmodel: error: {}\n", report.status().message());
      return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "llaisys-mkmodel: wrote {} ({} shape, seed {}, {}, {:.1f} MB{}) in {:.1f} s\n", out_dir,
               shape_name, seed, gguf_type, static_cast<double>(report->file_bytes) / 1e6,
               report->fallbacks.empty() ? "" : fmt::format("; fallbacks: {}", fmt::join(report->fallbacks, ", ")), seconds);
    return 0;
  }
  const llaisys::Status status =
      write_model(out_dir, {.shape = *shape,
                            .seed = seed,
                            .num_shards = shards,
                            .tokenizer_dir = no_tokenizer ? std::filesystem::path() : std::filesystem::path(tokenizer_dir),
                            .overwrite = force});
  if (!status.ok()) {
    fmt::print(stderr, "llaisys-mkmodel: error: {}\n", status.message());
    return 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "llaisys-mkmodel: wrote {} ({} shape, seed {}, {} shard(s)) in {:.1f} s\n", out_dir, shape_name,
             seed, shards, seconds);
  return 0;
}
