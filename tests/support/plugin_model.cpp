#include "plugin_model.hpp"

#include <map>
#include <numeric>
#include <stdexcept>

namespace llaisys::test {

AnyModel open_plugin_model(const std::string& plugin, const std::filesystem::path& model_dir, int32_t num_threads,
                           const std::string& options_json, int32_t num_blocks) {
  // One registry per plugin file for the whole process (plugins stay loaded, as in a server).
  static std::map<std::string, PluginRegistry> registries;
  auto it = registries.find(plugin);
  if (it == registries.end()) {
    PluginRegistry r;
    const Status s = r.load_file(std::filesystem::path(LLAISYS_PLUGIN_DIR) / plugin);
    if (!s.ok()) throw std::runtime_error(s.to_string());
    it = registries.emplace(plugin, std::move(r)).first;
  }
  const PluginRegistry& registry = it->second;
  // Parity tests compare with references within f32 tolerances: they name the exact f32 products
  // (the plugins' default, "auto", multiplies bf16 weights in bf16 where the CPU can), unless the
  // test chooses a mode itself.
  std::string options = options_json;
  if (options.find("\"matmul\"") == std::string::npos) {
    const std::size_t brace = options.find('{');
    if (brace != std::string::npos) {
      const bool empty = options.find_first_not_of(" \t\r\n", brace + 1) == options.find('}', brace);
      options.insert(brace + 1, empty ? R"("matmul": "f32")" : R"("matmul": "f32", )");
    }
  }
  auto model = registry.open_model({.model_dir = model_dir, .num_threads = num_threads, .options_json = options});
  if (!model.ok()) throw std::runtime_error(model.status().to_string());
  const Status kv = model->init_kv_cache({.num_blocks = num_blocks, .block_size = 16});
  if (!kv.ok()) throw std::runtime_error(kv.to_string());
  return std::move(model).value();
}

std::vector<std::vector<float>> run_batch(AnyModel& model, const std::vector<SeqChunk>& chunks) {
  std::vector<TokenId> tokens;
  std::vector<int32_t> positions, seqs, outputs, lens;
  std::vector<const BlockId*> tables;
  for (std::size_t s = 0; s < chunks.size(); ++s) {
    const SeqChunk& c = chunks[s];
    for (std::size_t i = 0; i < c.tokens.size(); ++i) {
      if (c.all_outputs || i + 1 == c.tokens.size()) outputs.push_back(static_cast<int32_t>(tokens.size()));
      tokens.push_back(c.tokens[i]);
      positions.push_back(c.start + static_cast<int32_t>(i));
      seqs.push_back(static_cast<int32_t>(s));
    }
    tables.push_back(c.table.data());
    lens.push_back(static_cast<int32_t>(c.table.size()));
  }
  const auto width = static_cast<std::size_t>(model.info().vocab_size);
  std::vector<float> out(outputs.size() * width);
  const Status status = model.forward({.token_ids = tokens,
                                       .positions = positions,
                                       .seq_indices = seqs,
                                       .block_tables = tables,
                                       .block_table_lens = lens,
                                       .output_token_indices = outputs,
                                       .output_kind = OutputKind::logits},
                                      out);
  if (!status.ok()) throw std::runtime_error(status.to_string());
  std::vector<std::vector<float>> rows;
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    rows.emplace_back(out.begin() + static_cast<std::ptrdiff_t>(r * width),
                      out.begin() + static_cast<std::ptrdiff_t>((r + 1) * width));
  }
  return rows;
}

std::vector<BlockId> block_range(BlockId first, int32_t count) {
  std::vector<BlockId> blocks(static_cast<std::size_t>(count));
  std::iota(blocks.begin(), blocks.end(), first);
  return blocks;
}

}  // namespace llaisys::test
