// libFuzzer: GBNF text -> grammar (gbnf_grammar) with small automaton limits; a grammar that builds
// is then run: a matcher over a small byte vocabulary takes a few masked steps, and a second one whose
// positions all walk class tries must compute the same masks. Never a crash, a hang, a leak or a
// difference, whatever the text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llaisys/grammar/gbnf.hpp"
#include "llaisys/grammar/token_mask.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace llaisys::grammar;
  using llaisys::TokenId;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto g = gbnf_grammar(text, GrammarLimits{.max_nfa_states = 20000, .max_dfa_states = 5000, .max_edges = 50000});
  if (!g.ok()) return 0;
  auto make_vocab = [] {
    std::vector<std::string> pieces{""};  // 0: EOS
    for (int b = 1; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    for (const char* p : {"ab", "a", "\"", "{\"", "\":", "12", " (", "))", "\\n", "\xE0\xA4\x85"}) pieces.emplace_back(p);
    return TokenVocabulary::from_pieces(pieces, {0});
  };
  // Classes are cached per vocabulary: each way of classifying has its own.
  static const auto vocab = make_vocab();
  static const auto class_vocab = make_vocab();
  auto compiled = CompiledGrammar::create(*g, vocab);
  auto by_class = CompiledGrammar::create(*g, class_vocab, MaskOptions{.class_trie_min_nodes = 0});
  const MatcherLimits limits{.max_parses = 256, .max_stack_depth = 64};
  GrammarMatcher matcher(compiled, limits);
  GrammarMatcher class_matcher(by_class, limits);
  std::vector<uint32_t> mask(vocab->mask_words());
  std::vector<uint32_t> class_mask(vocab->mask_words());
  for (int step = 0; step < 8; ++step) {
    matcher.fill_mask(mask);
    class_matcher.fill_mask(class_mask);
    if (mask != class_mask && !matcher.limit_reached() && !class_matcher.limit_reached()) __builtin_trap();
    // The first allowed token past a point that moves with the step, so walks differ.
    TokenId pick = -1;
    for (std::size_t k = 0; k < mask.size() && pick < 0; ++k) {
      const std::size_t w = (k + static_cast<std::size_t>(step) * 3) % mask.size();
      if (mask[w] != 0) pick = static_cast<TokenId>(w * 32 + static_cast<std::size_t>(__builtin_ctz(mask[w])));
    }
    if (pick <= 0 || !matcher.accept(pick) || !class_matcher.accept(pick)) break;
  }
  return 0;
}
