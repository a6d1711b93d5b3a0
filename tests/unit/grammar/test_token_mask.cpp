// Token masks (token_mask.hpp) against a direct check: a token is allowed exactly when a fresh matcher
// accepts the text so far followed by its bytes; EOS exactly when the text so far is in the language
// (the reference matcher).
#include <chrono>
#include <random>

#include <catch2/catch.hpp>

#include "json_test_grammar.hpp"
#include "llaisys/grammar/reference_match.hpp"
#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/text/tokenizer.hpp"

using namespace llaisys;
using namespace llaisys::grammar;

namespace {

bool bit(const std::vector<uint32_t>& mask, TokenId t) {
  return ((mask[static_cast<std::size_t>(t) / 32] >> (static_cast<uint32_t>(t) % 32)) & 1u) != 0;
}

std::vector<std::string> synthetic_pieces(std::mt19937& rng, int32_t count) {
  const std::vector<std::string> atoms{"{", "}", "[", "]", "\"", ",", ":", " ", "0", "1", "9", "-", ".", "e", "a",
                                       "b", "\\", "n", "u", "true", "false", "null", "\xC3\xA9", "\xE4\xB8\xAD"};
  std::vector<std::string> pieces{"", ""};  // ids 0 and 1: "special" (no bytes); 1 is EOS
  for (const std::string& a : atoms) pieces.push_back(a);
  // Every printable ASCII byte and the bytes of the atoms' code points alone, as a real vocabulary
  // has (byte-level BPE: all 256 bytes; SentencePiece: byte fallback), so a walk never gets stuck.
  for (char c = 0x20; c < 0x7F; ++c) pieces.emplace_back(1, c);
  for (const char* b : {"\xC3", "\xA9", "\xE4", "\xB8", "\xAD"}) pieces.emplace_back(b);
  while (static_cast<int32_t>(pieces.size()) < count) {
    std::string p;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < len; ++i) p += atoms[rng() % atoms.size()];
    pieces.push_back(p);
  }
  return pieces;
}

// Random walks through the grammar with masks, every token's bit checked against a fresh matcher.
// With `options`, positions may walk class tries (class_trie_min_nodes 0: every one whose classes are
// few); then the vocabulary must be one no other options used (classes are cached per vocabulary).
void check_walks(const GrammarBuilder& builder, int32_t root, std::shared_ptr<const Grammar> g,
                 std::shared_ptr<const TokenVocabulary> vocab, int32_t num_walks, int32_t max_steps, uint32_t seed,
                 const MaskOptions& options = {}) {
  auto compiled = CompiledGrammar::create(g, vocab, options);
  std::mt19937 rng(seed);
  std::vector<uint32_t> mask(vocab->mask_words());
  int64_t checked = 0;
  for (int32_t walk = 0; walk < num_walks; ++walk) {
    GrammarMatcher matcher(compiled);
    std::string text;
    for (int32_t step = 0; step < max_steps; ++step) {
      matcher.fill_mask(mask);
      std::vector<TokenId> allowed;
      for (TokenId t = 0; t < vocab->vocab_size(); ++t) {
        const bool eos = std::binary_search(vocab->eos_ids().begin(), vocab->eos_ids().end(), t);
        bool want = false;
        if (eos) {
          want = reference_match(builder.exprs(), root, text);
        } else if (!vocab->piece(t).empty()) {
          GrammarMatcher fresh(compiled);
          want = fresh.accept_bytes(text + vocab->piece(t));
        }
        INFO("text '" << text << "' token " << t << " '" << vocab->piece(t) << "'");
        REQUIRE(bit(mask, t) == want);
        ++checked;
        if (want) allowed.push_back(t);
      }
      REQUIRE(matcher.can_end() == reference_match(builder.exprs(), root, text));
      INFO("text so far: '" << text << "'");
      REQUIRE_FALSE(allowed.empty());  // trimmed grammars never dead-end
      const TokenId pick = allowed[rng() % allowed.size()];
      if (std::binary_search(vocab->eos_ids().begin(), vocab->eos_ids().end(), pick)) break;
      REQUIRE(matcher.accept(pick));
      text += vocab->piece(pick);
    }
  }
  CHECK(checked > 1000);
  if (options.class_trie_min_nodes == 0) CHECK(compiled->classify_stats().class_walks > 0);
}

}  // namespace

TEST_CASE("masks over a synthetic vocabulary equal the direct check (JSON grammar)", "[grammar][mask]") {
  std::mt19937 rng(11);
  auto vocab = TokenVocabulary::from_pieces(synthetic_pieces(rng, 400), {1});
  for (const bool ws : {false, true}) {
    auto [builder, root] = grammar::test::json_grammar(ws);
    auto g = builder.build(root);
    REQUIRE(g.ok());
    check_walks(builder, root, *g, vocab, 12, 40, ws ? 5u : 6u);
  }
}

TEST_CASE("masks from class-trie walks equal the direct check (JSON grammar)", "[grammar][mask]") {
  for (const bool ws : {false, true}) {
    std::mt19937 rng(11);
    auto vocab = TokenVocabulary::from_pieces(synthetic_pieces(rng, 400), {1});  // its own cache
    auto [builder, root] = grammar::test::json_grammar(ws);
    auto g = builder.build(root);
    REQUIRE(g.ok());
    check_walks(builder, root, *g, vocab, 12, 40, ws ? 7u : 8u, MaskOptions{.class_trie_min_nodes = 0});
  }
}

TEST_CASE("masks with nullable rules, nested calls and ambiguity", "[grammar][mask]") {
  std::mt19937 rng(3);
  const std::vector<std::string> atoms{"a", "b", "c", "(", ")", "ab", "ba", "abc", "(a", "b)", "))", "(("};
  std::vector<std::string> pieces{"", ""};
  for (const auto& a : atoms) pieces.push_back(a);
  for (int i = 0; i < 150; ++i) pieces.push_back(atoms[rng() % atoms.size()] + atoms[rng() % atoms.size()]);
  auto vocab = TokenVocabulary::from_pieces(pieces, {0});
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  const int32_t opt = b.add_rule("opt");
  const int32_t paren = b.add_rule("paren");
  b.set_rule(opt, star(alt({literal("a"), literal("ab")})));            // nullable, ambiguous
  b.set_rule(paren, seq({literal("("), ref(opt), optional(ref(paren)), ref(opt), literal(")")}));
  b.set_rule(root, seq({ref(opt), star(alt({ref(paren), literal("b")})), ref(opt), optional(literal("c"))}));
  auto g = b.build(root);
  REQUIRE(g.ok());
  check_walks(b, root, *g, vocab, 20, 30, 9u);
}

TEST_CASE("masks over the Qwen2 vocabulary: allowed tokens advance, sampled others do not", "[grammar][mask]") {
  auto tokenizer = text::Tokenizer::from_model_dir(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer");
  REQUIRE(tokenizer.ok());
  const int32_t vocab_size = 151936;
  auto vocab = TokenVocabulary::from_tokenizer(**tokenizer, vocab_size, {151643, 151645});
  auto [builder, root] = grammar::test::json_grammar(false);
  auto g = builder.build(root);
  REQUIRE(g.ok());
  auto compiled = CompiledGrammar::create(*g, vocab);
  std::mt19937 rng(17);
  std::vector<uint32_t> mask(vocab->mask_words());
  using clock = std::chrono::steady_clock;
  std::vector<double> micros;
  for (int walk = 0; walk < 4; ++walk) {
    GrammarMatcher matcher(compiled);
    std::string text;
    for (int step = 0; step < 60; ++step) {
      const auto t0 = clock::now();
      matcher.fill_mask(mask);
      micros.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
      std::vector<TokenId> allowed;
      for (TokenId t = 0; t < vocab_size; ++t) {
        if (bit(mask, t)) allowed.push_back(t);
      }
      REQUIRE_FALSE(allowed.empty());
      // Every allowed token (up to 300 sampled) advances a fresh matcher; 300 random others do not.
      for (int k = 0; k < 300; ++k) {
        const TokenId t = allowed[rng() % allowed.size()];
        if (vocab->piece(t).empty()) continue;  // EOS
        GrammarMatcher fresh(compiled);
        INFO("text '" << text << "' allowed token " << t << " '" << vocab->piece(t) << "'");
        REQUIRE(fresh.accept_bytes(text + vocab->piece(t)));
      }
      for (int k = 0; k < 300; ++k) {
        const auto t = static_cast<TokenId>(rng() % static_cast<uint32_t>(vocab_size));
        if (bit(mask, t) || vocab->piece(t).empty()) continue;
        GrammarMatcher fresh(compiled);
        INFO("text '" << text << "' masked token " << t << " '" << vocab->piece(t) << "'");
        REQUIRE_FALSE(fresh.accept_bytes(text + vocab->piece(t)));
      }
      const TokenId pick = allowed[rng() % allowed.size()];
      if (vocab->piece(pick).empty()) break;
      REQUIRE(matcher.accept(pick));
      text += vocab->piece(pick);
    }
  }
  std::sort(micros.begin(), micros.end());
  WARN("Qwen2 JSON grammar mask: p50 " << micros[micros.size() / 2] << " us, p99 "
                                        << micros[micros.size() * 99 / 100] << " us, max " << micros.back() << " us ("
                                        << micros.size() << " masks, first visits included)");
}
