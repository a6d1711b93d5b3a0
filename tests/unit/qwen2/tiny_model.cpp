#include "tiny_model.hpp"

#include <map>
#include <memory>
#include <stdexcept>

#include "model_writer.hpp"
#include "temp_dir.hpp"

namespace llaisys::test {

const std::filesystem::path& tiny_model_dir(int shards) {
  static TempDir dir;
  static std::map<int, std::filesystem::path> made;
  auto it = made.find(shards);
  if (it != made.end()) return it->second;
  const std::filesystem::path path = dir / ("tiny-" + std::to_string(shards));
  const Status status = mkmodel::write_model(
      path, {.shape = *mkmodel::find_shape("tiny"), .seed = 0, .num_shards = shards, .tokenizer_dir = {}});
  if (!status.ok()) throw std::runtime_error("cannot write the tiny model: " + status.to_string());
  return made.emplace(shards, path).first->second;
}

AnyModel open_model(const std::filesystem::path& model_dir, int32_t num_threads, const std::string& options_json,
                    int32_t num_blocks) {
  return open_plugin_model("libllaisys-qwen2.so", model_dir, num_threads, options_json, num_blocks);
}

}  // namespace llaisys::test
