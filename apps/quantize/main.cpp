// llaisys-quantize: writes a Hugging Face model directory as one GGUF file in a chosen weight type,
// so a model is quantized once and then loaded by llaisys (or llama.cpp) as `--model FILE.gguf`.
//
//   llaisys-quantize MODEL_DIR OUT.gguf --type q8_0|q4_0|q4_k_m|q5_k_m|q6_k|f16|bf16|f32 [--name NAME]

#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app_log.hpp"
#include "gguf_convert.hpp"

int main(int argc, char** argv) {
  CLI::App app{"llaisys-quantize: write a Hugging Face model directory as a GGUF file"};
  std::string model_dir, out_file, type = "q8_0", name;
  bool force = false;
  app.add_option("MODEL_DIR", model_dir, "Hugging Face model directory (config.json, safetensors, tokenizer.json)")
      ->required()->check(CLI::ExistingDirectory);
  app.add_option("OUT", out_file, "GGUF file to write")->required();
  app.add_option("--type", type, "weight type of the matrices")
      ->check(CLI::IsMember(llaisys::convert::gguf_type_names()))->capture_default_str();
  app.add_option("--name", name, "general.name (default: the directory's name)");
  app.add_flag("--force", force, "replace OUT if it exists");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  llaisys::app::init_logging("warn");
  if (std::filesystem::exists(out_file) && !force) {
    fmt::print(stderr, "llaisys-quantize: error: {} exists (--force replaces it)\n", out_file);
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  auto report = llaisys::convert::convert_to_gguf(model_dir, out_file, type, name);
  if (!report.ok()) {
    fmt::print(stderr, "llaisys-quantize: error: {}\n", report.status().message());
    return 1;
  }
  for (const std::string& line : report->fallbacks) fmt::print(stderr, "llaisys-quantize: fallback: {}\n", line);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "llaisys-quantize: wrote {} ({}, {} tensors, {:.1f} MB) in {:.1f} s\n", out_file, type,
             report->tensors, static_cast<double>(report->file_bytes) / 1e6, seconds);
  return 0;
}
