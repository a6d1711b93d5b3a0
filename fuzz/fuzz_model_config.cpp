// libFuzzer target: arbitrary bytes as a model's config.json, read as every architecture plugin reads
// it (ConfigReader, the Llama family's keys, layer types, activations, the unread-key rules), and as
// model options. Every input gives a spec or a clear Status; an accepted spec is one the decoder can
// run (positive sizes, heads divisible by kv heads, an even head_dim, at most 8 EOS ids inside the
// vocabulary, a positive theta).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "decoder_config.hpp"
#include "decoder_options.hpp"

using namespace llaisys;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ModelCreateParams params;
  params.options_json = std::string(text);
  (void)decoder::parse_decoder_options(params);

  auto config = ConfigReader::parse(text, text, "fuzz/config.json");
  if (!config.ok()) return 0;
  auto spec = decoder::read_decoder_config(*config, "FuzzForCausalLM");
  (void)decoder::read_activation(*config, "hidden_act", {ops::Activation::silu, ops::Activation::gelu_tanh});
  if (!spec.ok()) return 0;
  (void)decoder::read_layer_types(*config, spec->num_layers);
  (void)decoder::finish_config(*config, *spec);
  const decoder::DecoderSpec& s = *spec;
  if (s.vocab_size <= 0 || s.hidden_size <= 0 || s.intermediate_size <= 0 || s.num_layers <= 0 ||
      s.num_heads <= 0 || s.num_kv_heads <= 0 || s.num_heads % s.num_kv_heads != 0 || s.head_dim <= 0 ||
      s.head_dim % 2 != 0 || s.max_context <= 0 || !(s.rope.theta > 0) || !(s.norm_eps > 0) ||
      s.eos_token_ids.size() > 8) {
    std::abort();
  }
  for (TokenId id : s.eos_token_ids) {
    if (id < 0 || id >= s.vocab_size) std::abort();
  }
  (void)decoder::make_rope_frequencies(s.head_dim, s.rope);
  return 0;
}
