#pragma once
// Added tokens (tokenizer.json "added_tokens"): tokens matched as whole strings in the input before
// the model sees it, with Hugging Face's flags. Matching is leftmost-longest over a byte trie.
// Tokens with normalized=false are matched in the raw input; those with normalized=true in each
// normalized segment (a second pass), exactly like Hugging Face's two tries.

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "hash_tables.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::text {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

// A cut of some text: either plain text (to be normalized and tokenized) or one added token.
struct TextSegment {
  std::size_t begin = 0;
  std::size_t end = 0;
  TokenId added_id = -1;  // -1: plain text
};

// Leftmost-longest matcher over a set of token strings.
class TokenMatcher {
 public:
  void add(std::string_view content, std::size_t token_index);
  bool empty() const { return nodes_.size() <= 1; }
  // Splits `text` into plain segments and matches (token_index in added_id) honoring the flags.
  void split(std::string_view text, const std::vector<AddedToken>& tokens, std::vector<TextSegment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token_index = -1;
  };
  int32_t child(int32_t node, unsigned char byte) const;
  std::vector<Node> nodes_ = std::vector<Node>(1);
  bool first_byte_[256] = {};
};

class AddedVocabulary {
 public:
  // Ids must stay below first_free_id + 65536 + the number of added tokens (dense tables).
  static Result<AddedVocabulary> from_json(const boost::json::value& added_tokens, int32_t first_free_id);

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // The added token with this id, or nullptr.
  const AddedToken* find(TokenId id) const;
  // Id of the added token with exactly this content, or -1.
  int32_t find(std::string_view content) const { return by_content_.find(content); }

  // Raw-input pass (tokens with normalized=false); segments carry token ids, not indices.
  void split_raw(std::string_view text, std::vector<TextSegment>& out) const;
  // Normalized-segment pass (normalized=true).
  void split_normalized(std::string_view text, std::vector<TextSegment>& out) const;
  bool has_normalized_tokens() const { return !normalized_.empty(); }

 private:
  void split_with(const TokenMatcher& matcher, std::string_view text, std::vector<TextSegment>& out) const;
  std::vector<AddedToken> tokens_;
  std::vector<int32_t> index_of_id_;  // id -> index into tokens_, -1
  StringIdMap by_content_;
  TokenMatcher raw_;
  TokenMatcher normalized_;
};

}  // namespace llaisys::text
