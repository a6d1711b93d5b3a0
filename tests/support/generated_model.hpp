#pragma once
// Model directories written by the llaisys-mkmodel library (apps/mkmodel: the WEIGHTS.md of each
// tests/data/tiny-* fixture), generated once per test process and shape into a temporary directory
// that is removed at exit. Header-only, like reference_data.hpp.

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "model_writer.hpp"
#include "temp_dir.hpp"

namespace llaisys::test {

// The model of mkmodel shape `shape` ("tiny", "tiny-qwen3", ...; seed 0, no tokenizer files):
// model.safetensors (shards == 1) or `shards` files plus the index. Throws if the shape is unknown
// or the model cannot be written.
inline const std::filesystem::path& generated_model_dir(const std::string& shape, int shards = 1) {
  static TempDir dir;
  static std::map<std::pair<std::string, int>, std::filesystem::path> made;
  auto it = made.find({shape, shards});
  if (it != made.end()) return it->second;
  const auto model_shape = mkmodel::find_shape(shape);
  if (!model_shape) throw std::runtime_error("llaisys-mkmodel has no shape '" + shape + "'");
  const std::filesystem::path path = dir / (shape + "-" + std::to_string(shards));
  const Status status =
      mkmodel::write_model(path, {.shape = *model_shape, .seed = 0, .num_shards = shards, .tokenizer_dir = {}});
  if (!status.ok()) throw std::runtime_error("cannot write the " + shape + " model: " + status.to_string());
  return made.emplace(std::make_pair(shape, shards), path).first->second;
}

}  // namespace llaisys::test
