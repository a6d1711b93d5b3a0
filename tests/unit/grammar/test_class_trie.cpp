// Class tries (TokenVocabulary::class_trie) and the position walks over them: the trie holds every
// token once, on the path its bytes map to; and masks computed with class-trie walks equal those of
// byte-trie walks, step by step, over the Qwen2 vocabulary on a JSON schema with strings, escapes,
// formats and bounds (the synthetic-vocabulary direct checks are in test_token_mask.cpp).
#include <random>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "llaisys/grammar/json_schema.hpp"
#include "llaisys/grammar/token_mask.hpp"
#include "llaisys/text/tokenizer.hpp"

using namespace llaisys;
using namespace llaisys::grammar;

namespace {

std::shared_ptr<const TokenVocabulary> qwen2_vocabulary() {
  auto tokenizer = text::Tokenizer::from_model_dir(std::filesystem::path(LLAISYS_TEST_DATA_DIR) / "qwen2-tokenizer");
  REQUIRE(tokenizer.ok());
  return TokenVocabulary::from_tokenizer(**tokenizer, 151936, {151643, 151645});
}

// Classes starting at `starts` (ascending), numbered by their smallest byte; `sticky` bytes alone.
ByteClasses make_classes(std::vector<int> starts, const std::vector<int>& sticky) {
  for (const int b : sticky) {
    starts.push_back(b);
    starts.push_back(b + 1);
  }
  std::sort(starts.begin(), starts.end());
  ByteClasses c;
  int32_t id = -1;
  std::size_t next = 0;
  for (int b = 0; b < 256; ++b) {
    bool starts_here = b == 0;
    while (next < starts.size() && starts[next] <= b) starts_here |= starts[next++] == b;
    if (starts_here) ++id;
    c.of[static_cast<std::size_t>(b)] = static_cast<uint8_t>(id);
  }
  c.count = id + 1;
  for (const int b : sticky) c.sticky.set(static_cast<std::size_t>(b));
  return c;
}

// A trie's paths (node bytes from the root), by node.
std::vector<std::string> paths_of(const TokenTrie& t) {
  std::vector<std::string> paths(t.nodes.size());
  std::string path;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    path.resize(t.nodes[i].depth - 1u);
    path.push_back(static_cast<char>(t.nodes[i].byte));
    paths[i] = path;
  }
  return paths;
}

// What a class trie path of these bytes is: the smallest byte of each class, or right after a
// sticky byte the byte itself.
std::string mapped(std::string_view bytes, const ByteClasses& c) {
  std::array<uint8_t, 256> smallest{};
  for (int b = 255; b >= 0; --b) smallest[c.of[static_cast<std::size_t>(b)]] = static_cast<uint8_t>(b);
  std::string out;
  bool exact = false;
  for (const char ch : bytes) {
    const auto b = static_cast<uint8_t>(ch);
    out.push_back(static_cast<char>(exact ? b : smallest[c.of[b]]));
    exact = c.sticky.test(b);
  }
  return out;
}

bool bit(const std::vector<uint32_t>& mask, TokenId t) {
  return ((mask[static_cast<std::size_t>(t) / 32] >> (static_cast<uint32_t>(t) % 32)) & 1u) != 0;
}

}  // namespace

TEST_CASE("class trie: every token once, on the path its bytes map to, members map to it too", "[grammar][class-trie]") {
  auto vocab = qwen2_vocabulary();
  // A JSON string's characters: '"', '\\', controls, ASCII, continuation bytes, lead bytes; the lead
  // bytes with narrower continuations and the backslash sticky.
  const ByteClasses classes = make_classes({0x20, 0x22, 0x23, 0x5C, 0x5D, 0x80, 0xC0, 0xC2, 0xE0, 0xF0, 0xF5},
                                           {0x5C, 0xE0, 0xED, 0xF0, 0xF4});
  const std::shared_ptr<const TokenTrie> trie = vocab->class_trie(classes);
  REQUIRE(trie == vocab->class_trie(classes));  // cached
  const TokenTrie& bytes = vocab->trie();
  CHECK(trie->nodes.size() * 10 < bytes.nodes.size());
  CHECK(trie->token_ids.size() == bytes.token_ids.size());
  REQUIRE(trie->member_begin.size() == trie->nodes.size() + 1);

  const std::vector<std::string> class_paths = paths_of(*trie);
  const std::vector<std::string> byte_paths = paths_of(bytes);
  std::vector<int> seen(static_cast<std::size_t>(vocab->vocab_size()), 0);
  for (std::size_t i = 0; i < trie->nodes.size(); ++i) {
    const TrieNode& n = trie->nodes[i];
    for (uint32_t t = n.tokens_begin; t < n.tokens_end; ++t) {
      const TokenId id = trie->token_ids[t];
      ++seen[static_cast<std::size_t>(id)];
      INFO("token " << id);
      REQUIRE(mapped(vocab->piece(id), classes) == class_paths[i]);
    }
    // Members: byte nodes whose paths map to this one; their tokens are this node's tokens.
    std::size_t member_tokens = 0;
    for (uint32_t m = trie->member_begin[i]; m < trie->member_begin[i + 1]; ++m) {
      const uint32_t member = trie->members[m];
      REQUIRE(mapped(byte_paths[member], classes) == class_paths[i]);
      member_tokens += bytes.nodes[member].tokens_end - bytes.nodes[member].tokens_begin;
    }
    REQUIRE(member_tokens == n.tokens_end - n.tokens_begin);
    // Preorder: the subtree holds exactly the deeper nodes that follow.
    for (uint32_t j = static_cast<uint32_t>(i) + 1; j < n.subtree_end; ++j) REQUIRE(trie->nodes[j].depth > n.depth);
    if (n.subtree_end < trie->nodes.size()) REQUIRE(trie->nodes[n.subtree_end].depth <= n.depth);
  }
  for (TokenId id = 0; id < vocab->vocab_size(); ++id) {
    REQUIRE(seen[static_cast<std::size_t>(id)] == (vocab->trie_rank(id) >= 0 ? 1 : 0));
  }
}

TEST_CASE("masks from class-trie walks equal byte-trie walks over the Qwen2 vocabulary", "[grammar][class-trie]") {
  const boost::json::value schema = boost::json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 40},
      "bio": {"type": "string"},
      "email": {"type": "string", "format": "email"},
      "id": {"type": "string", "format": "uuid"},
      "when": {"type": "string", "format": "date-time"},
      "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
      "role": {"enum": ["admin", "editor", "viewer"]},
      "score": {"type": "number", "minimum": 0, "maximum": 100},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
      "notes": {"type": "array", "items": {"type": "object", "properties": {"text": {"type": "string"}},
                "required": ["text"], "additionalProperties": false}}
    },
    "required": ["name", "bio", "email", "id", "when", "zip", "role", "score", "tags", "notes"],
    "additionalProperties": false
  })");
  auto grammar = json_schema_grammar(schema);
  REQUIRE(grammar.ok());
  // Two vocabularies: classes are cached per vocabulary, and each side must compute its own.
  auto by_class = CompiledGrammar::create(*grammar, qwen2_vocabulary(), MaskOptions{.class_trie_min_nodes = 0});
  auto by_byte = CompiledGrammar::create(*grammar, qwen2_vocabulary(), MaskOptions{.class_trie_min_nodes = INT64_MAX});
  const TokenVocabulary& vocab = by_byte->vocab();
  std::mt19937 rng(23);
  std::vector<uint32_t> a(vocab.mask_words());
  std::vector<uint32_t> b(vocab.mask_words());
  int64_t steps = 0;
  for (int walk = 0; walk < 6; ++walk) {
    GrammarMatcher ma(by_class);
    GrammarMatcher mb(by_byte);
    std::string text;
    for (int step = 0; step < 200; ++step) {
      ma.fill_mask(a);
      mb.fill_mask(b);
      INFO("text so far: '" << text << "'");
      REQUIRE(a == b);
      ++steps;
      std::vector<TokenId> allowed;
      std::vector<TokenId> closing;  // tokens with a quote, bracket or escape: walks leave strings
      for (TokenId t = 0; t < vocab.vocab_size(); ++t) {
        if (!bit(a, t)) continue;
        allowed.push_back(t);
        if (vocab.piece(t).find_first_of("\"]}\\") != std::string::npos) closing.push_back(t);
      }
      REQUIRE_FALSE(allowed.empty());
      const bool close = !closing.empty() && rng() % 3 == 0;
      const TokenId pick = close ? closing[rng() % closing.size()] : allowed[rng() % allowed.size()];
      if (vocab.piece(pick).empty()) break;  // EOS
      REQUIRE(ma.accept(pick));
      REQUIRE(mb.accept(pick));
      text += vocab.piece(pick);
      if (ma.is_terminated()) break;
    }
  }
  CHECK(steps > 300);
  const CompiledGrammar::ClassifyStats stats = by_class->classify_stats();
  CHECK(stats.class_walks > 20);
  CHECK(by_byte->classify_stats().class_walks == 0);
  WARN("class-trie walks: " << stats.class_walks << " of " << stats.positions << " positions over " << steps << " steps");
}
