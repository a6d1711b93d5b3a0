#pragma once
// llaisys-bench subcommands. Each registers itself with the CLI and sets the exit code when run.

#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::bench {

// Host memory copy bandwidth: the reference every CPU memory-bound figure is judged against.
void add_memcpy_command(CLI::App& app, int& exit_code);
// Tokenizer encode throughput against Hugging Face's tokenizers on the same corpus.
void add_tokenizer_command(CLI::App& app, int& exit_code);

// A model through the plugin stack: decode tokens/s and efficiency against the copy bandwidth,
// prefill tokens/s, peak RSS against the weights (bench_model.cpp).
void add_model_command(CLI::App& app, int& exit_code);
// The engine: aggregate tokens/s of 32 sequences against 1, and time to first token with and without
// the prefix cache (bench_engine.cpp).
void add_engine_command(CLI::App& app, int& exit_code);
// Speculative decoding at batch 1: replayed (always right) and always-wrong drafts against none
// (bench_speculative.cpp).
void add_speculative_command(CLI::App& app, int& exit_code);

// The prefix cache: microseconds per evict(1) at 1k, 10k and 100k cached blocks (bench_kv.cpp).
void add_kv_command(CLI::App& app, int& exit_code);

// Structured output: schema compile time, mask time per token on the Qwen2 vocabulary, and 32
// constrained sequences against 32 free ones (bench_structured.cpp).
void add_structured_command(CLI::App& app, int& exit_code);

// The CUDA path: D2D copy bandwidth, single-sequence decode efficiency, the 256-sequence workload
// (bench_cuda.cpp; registered only in builds with the CUDA backend).
void add_cuda_command(CLI::App& app, int& exit_code);

// Measures large-memcpy bandwidth in bytes (read + written) per second over `bytes`-sized buffers,
// best of `repeats` runs, using `num_threads` threads each copying its own slice.
double measure_copy_bandwidth(std::size_t bytes, int repeats, int num_threads);

// Where generated benchmark models are kept by default: $XDG_CACHE_HOME/llaisys/models, else
// ~/.cache/llaisys/models (the same cache scripts/run.sh uses), else ./bench-models.
std::string default_model_cache_dir();
// The model of mkmodel shape `shape` in `cache_dir` (bench-<shape>: seed 0, one shard), generated
// there the first time (bench_models.cpp).
Result<std::filesystem::path> cached_bench_model(const std::string& shape, const std::string& cache_dir);
// A command's model: `model_dir` when given, else cached_bench_model(shape, cache_dir). On failure the
// error is printed and the exit code returned (2 for a bad shape, 1 otherwise).
std::optional<int> resolve_bench_model(const std::string& model_dir, const std::string& shape,
                                       const std::string& cache_dir, std::filesystem::path& out);

}  // namespace llaisys::bench
