#include "tiny_model.hpp"

#include "generated_model.hpp"

namespace llaisys::test {

const std::filesystem::path& tiny_model_dir(int shards) { return generated_model_dir("tiny", shards); }

AnyModel open_model(const std::filesystem::path& model_dir, int32_t num_threads, const std::string& options_json,
                    int32_t num_blocks) {
  return open_plugin_model("libllaisys-qwen2.so", model_dir, num_threads, options_json, num_blocks);
}

}  // namespace llaisys::test
