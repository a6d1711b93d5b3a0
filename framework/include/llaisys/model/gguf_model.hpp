#pragma once
// A GGUF model file seen as a Hugging Face model directory.
//
// Everything past loading is written against Hugging Face conventions (config.json keys read by the
// architecture plugins, tensor names of the DecoderSpec, rotate-half RoPE). A GGUF file carries the
// same model under llama.cpp's conventions, which are uniform across its architectures:
// `<arch>.block_count`, `<arch>.attention.head_count`, ... and `blk.N.attn_q.weight`, ... So a GGUF
// file is translated once, at the edge, into what a model directory would hold:
// - config.json: the keys of `general.architecture`'s family from the file's metadata
//   (gguf_config_json()); ConfigReader::load() does this when handed a .gguf path;
// - the tensors under their Hugging Face names (hf_tensor_names()), with llama.cpp's q/k row
//   permutation undone for the architectures whose converter applies it (`llama`): llama.cpp
//   rotates interleaved pairs (2j, 2j + 1) of a head, transformers rotates halves (j, j + D/2), and
//   its converter reorders the rows so that both compute the same thing; WeightStore::open() does
//   this when handed a .gguf path;
// - the tokenizer and chat template (text/gguf_tokenizer.hpp), assembled by the apps.
//
// Architectures: llama (also Mistral's dense models, which llama.cpp converts as llama), qwen2,
// qwen3. Others are refused by name (unsupported), as are metadata that would change what the
// model computes and that the translation does not carry (e.g. llama 3.1's `rope_freqs` tensor).

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llaisys/model/gguf.hpp"
#include "llaisys/model/safetensors.hpp"

namespace llaisys::gguf {

// A regular file whose first four bytes are "GGUF".
bool is_gguf_file(const std::filesystem::path& path);

// A GGUF file mapped and indexed; the index points into the mapping, so the two live together.
struct MappedGguf {
  MappedFile file;
  File parsed;
};
Result<std::unique_ptr<const MappedGguf>> open_gguf(const std::filesystem::path& path);

// config.json's text for the model in `file` (`source` names it in messages).
Result<std::string> gguf_config_json(const File& file, std::string_view source);

struct HfTensor {
  std::string hf_name;
  const TensorInfo* tensor = nullptr;  // in the File it came from
  // > 0: the rows come in llama.cpp's interleaved order for this many heads; undo it.
  int64_t permute_heads = 0;
};
// Every tensor of `file` under its Hugging Face name. A tensor with no counterpart in the
// architecture's layout (a part it does not have, a layer past block_count) is refused, naming it.
// The config written for it says which optional tensors are present (biases), so the decoder reads
// them; a tensor the decoder then does not read is still not computed with (the decoder reads the
// tensors its DecoderSpec names).
Result<std::vector<HfTensor>> hf_tensor_names(const File& file, std::string_view source);

// What a Hugging Face architecture class is called in GGUF, for writers (LlamaForCausalLM and
// MistralForCausalLM -> llama, Qwen2ForCausalLM -> qwen2, Qwen3ForCausalLM -> qwen3).
struct GgufArchitecture {
  std::string_view name;
  bool permuted_qk = false;  // q/k rows are stored interleaved (permute_rows)
};
Result<GgufArchitecture> gguf_architecture_of(std::string_view hf_class);
// llama.cpp's name for a Hugging Face tensor name, or nullopt when it has none.
std::optional<std::string> gguf_tensor_name(std::string_view hf_name);

// llama.cpp's converter's row order (the inverse of unpermute_rows).
void permute_rows(const std::byte* src, std::byte* dst, int64_t rows, int64_t row_bytes, int64_t heads);

// The row order transformers expects from a [heads * head_dim, ...] matrix stored in llama.cpp's
// order: HF row h*D + t*D/2 + j is stored at row h*D + 2j + t. `row_bytes` per row.
void unpermute_rows(const std::byte* src, std::byte* dst, int64_t rows, int64_t row_bytes, int64_t heads);

}  // namespace llaisys::gguf
