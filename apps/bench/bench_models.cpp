// The benchmarks' generated models: one per shape, written once into a cache directory.

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "commands.hpp"
#include "model_writer.hpp"

namespace llaisys::bench {

std::string default_model_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/llaisys/models";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/llaisys/models";
  }
  return "bench-models";
}

Result<std::filesystem::path> cached_bench_model(const std::string& shape_name, const std::string& cache_dir) {
  const auto shape = mkmodel::find_shape(shape_name);
  if (!shape) return make_error(ErrorCode::invalid_argument, "unknown shape '{}'", shape_name);
  const std::filesystem::path dir = std::filesystem::path(cache_dir) / fmt::format("bench-{}", shape_name);
  if (!std::filesystem::exists(dir / "config.json")) {
    fmt::print(stderr, "generating the {} model in {} ...\n", shape_name, dir.string());
    LLAISYS_RETURN_IF_ERROR(mkmodel::write_model(dir, {.shape = *shape, .seed = 0, .num_shards = 1, .tokenizer_dir = {}}));
  }
  return dir;
}

std::optional<int> resolve_bench_model(const std::string& model_dir, const std::string& shape,
                                       const std::string& cache_dir, std::filesystem::path& out) {
  if (!model_dir.empty()) {
    out = model_dir;
    return std::nullopt;
  }
  Result<std::filesystem::path> generated = cached_bench_model(shape, cache_dir);
  if (!generated.ok()) {
    fmt::print(stderr, "error: {}\n", generated.status().message());
    return generated.status().code() == ErrorCode::invalid_argument ? 2 : 1;
  }
  out = std::move(generated).value();
  return std::nullopt;
}

}  // namespace llaisys::bench
