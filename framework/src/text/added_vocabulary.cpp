#include "added_vocabulary.hpp"

#include <algorithm>

#include <unicode/uchar.h>

#include "json_fields.hpp"
#include "utf8.hpp"

namespace llaisys::text {
namespace json = boost::json;
namespace {

// Hugging Face tests "word characters" with Rust's char::is_alphanumeric() || c == '_'.
bool is_word_char(char32_t cp) { return cp == U'_' || u_isalnum(static_cast<UChar32>(cp)) != 0; }

char32_t char_before(std::string_view s, std::size_t pos) {
  std::size_t start = pos;
  while (start > 0 && (static_cast<uint8_t>(s[start - 1]) & 0xC0) == 0x80 && pos - start < 3) --start;
  if (start > 0) --start;
  const std::size_t n = utf8::valid_sequence_length(s, start);
  return n == 0 ? 0xFFFD : utf8::decode_at(s, start, n);
}

char32_t char_at(std::string_view s, std::size_t pos) {
  const std::size_t n = utf8::valid_sequence_length(s, pos);
  return n == 0 ? 0xFFFD : utf8::decode_at(s, pos, n);
}

bool is_white_space(char32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE) != 0; }

}  // namespace

// ---- matcher ----------------------------------------------------------------------------------

int32_t TokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[static_cast<std::size_t>(node)].children;
  auto it = std::lower_bound(children.begin(), children.end(), byte,
                             [](const auto& entry, unsigned char b) { return entry.first < b; });
  return it != children.end() && it->first == byte ? it->second : -1;
}

void TokenMatcher::add(std::string_view content, std::size_t token_index) {
  if (content.empty()) return;
  int32_t node = 0;
  for (char c : content) {
    const auto byte = static_cast<unsigned char>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& children = nodes_[static_cast<std::size_t>(node)].children;
      children.insert(std::lower_bound(children.begin(), children.end(), byte,
                                       [](const auto& entry, unsigned char b) { return entry.first < b; }),
                      {byte, next});
    }
    node = next;
  }
  if (nodes_[static_cast<std::size_t>(node)].token_index < 0) {
    nodes_[static_cast<std::size_t>(node)].token_index = static_cast<int32_t>(token_index);
  }
  first_byte_[static_cast<unsigned char>(content[0])] = true;
}

void TokenMatcher::split(std::string_view text, const std::vector<AddedToken>& tokens,
                         std::vector<TextSegment>& out) const {
  std::size_t plain_start = 0;  // start of the pending plain segment
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    // Longest token starting at pos.
    int32_t node = 0;
    int32_t best = -1;
    std::size_t best_end = pos;
    for (std::size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes_[static_cast<std::size_t>(node)].token_index >= 0) {
        best = nodes_[static_cast<std::size_t>(node)].token_index;
        best_end = i + 1;
      }
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens[static_cast<std::size_t>(best)];
    if (token.single_word) {
      const bool word_before = pos > 0 && is_word_char(char_before(text, pos));
      const bool word_after = best_end < text.size() && is_word_char(char_at(text, best_end));
      if (word_before || word_after) {
        pos = best_end;  // Hugging Face's match iterator moves past a rejected match
        continue;
      }
    }
    std::size_t start = pos;
    std::size_t stop = best_end;
    if (token.lstrip) {
      while (start > plain_start) {
        const char32_t cp = char_before(text, start);
        if (!is_white_space(cp)) break;
        std::size_t back = 1;
        while (back < start && (static_cast<uint8_t>(text[start - back]) & 0xC0) == 0x80) ++back;
        start -= back;
      }
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        const std::size_t n = utf8::valid_sequence_length(text, stop);
        if (n == 0 || !is_white_space(utf8::decode_at(text, stop, n))) break;
        stop += n;
      }
    }
    if (start > plain_start) out.push_back({plain_start, start, -1});
    out.push_back({start, stop, best});
    plain_start = stop;
    pos = stop;
  }
  if (text.size() > plain_start) out.push_back({plain_start, text.size(), -1});
}

// ---- vocabulary -------------------------------------------------------------------------------

Result<AddedVocabulary> AddedVocabulary::from_json(const json::value& added_tokens, int32_t first_free_id) {
  AddedVocabulary vocab;
  if (added_tokens.is_null()) return vocab;
  if (!added_tokens.is_array()) return Status(ErrorCode::parse_error, "'added_tokens' must be an array");
  const json::array& list = added_tokens.get_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json::object* o = list[i].if_object();
    if (o == nullptr) return make_error(ErrorCode::parse_error, "added_tokens[{}] must be an object", i);
    const json::value* id = o->if_contains("id");
    const int64_t id_bound = int64_t{first_free_id} + 65536 + static_cast<int64_t>(list.size());
    if (id == nullptr || !id->is_int64() || id->get_int64() < 0 || id->get_int64() >= id_bound) {
      return make_error(ErrorCode::parse_error, "added_tokens[{}]: 'id' must be a token id below {}", i, id_bound);
    }
    AddedToken token;
    token.id = static_cast<TokenId>(id->get_int64());
    auto content = json_fields::required_string(*o, "content");
    if (!content.ok() || content->empty()) {
      return make_error(ErrorCode::parse_error, "added_tokens[{}]: 'content' must be a non-empty string", i);
    }
    token.content = std::move(content).value();
    LLAISYS_ASSIGN_OR_RETURN(token.special, json_fields::bool_or(*o, "special", false));
    LLAISYS_ASSIGN_OR_RETURN(token.normalized, json_fields::bool_or(*o, "normalized", !token.special));
    LLAISYS_ASSIGN_OR_RETURN(token.lstrip, json_fields::bool_or(*o, "lstrip", false));
    LLAISYS_ASSIGN_OR_RETURN(token.rstrip, json_fields::bool_or(*o, "rstrip", false));
    LLAISYS_ASSIGN_OR_RETURN(token.single_word, json_fields::bool_or(*o, "single_word", false));
    if (static_cast<std::size_t>(token.id) >= vocab.index_of_id_.size()) {
      vocab.index_of_id_.resize(static_cast<std::size_t>(token.id) + 1, -1);
    }
    if (vocab.index_of_id_[static_cast<std::size_t>(token.id)] >= 0) {
      return make_error(ErrorCode::parse_error, "added_tokens[{}]: id {} appears twice", i, token.id);
    }
    vocab.index_of_id_[static_cast<std::size_t>(token.id)] = static_cast<int32_t>(vocab.tokens_.size());
    vocab.by_content_.insert(token.content, token.id);
    (token.normalized ? vocab.normalized_ : vocab.raw_).add(token.content, vocab.tokens_.size());
    vocab.tokens_.push_back(std::move(token));
  }
  return vocab;
}

const AddedToken* AddedVocabulary::find(TokenId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= index_of_id_.size()) return nullptr;
  const int32_t index = index_of_id_[static_cast<std::size_t>(id)];
  return index < 0 ? nullptr : &tokens_[static_cast<std::size_t>(index)];
}

void AddedVocabulary::split_with(const TokenMatcher& matcher, std::string_view text, std::vector<TextSegment>& out) const {
  if (matcher.empty()) {
    if (!text.empty()) out.push_back({0, text.size(), -1});
    return;
  }
  const std::size_t first = out.size();
  matcher.split(text, tokens_, out);
  for (std::size_t i = first; i < out.size(); ++i) {
    if (out[i].added_id >= 0) out[i].added_id = tokens_[static_cast<std::size_t>(out[i].added_id)].id;
  }
}

void AddedVocabulary::split_raw(std::string_view text, std::vector<TextSegment>& out) const {
  split_with(raw_, text, out);
}

void AddedVocabulary::split_normalized(std::string_view text, std::vector<TextSegment>& out) const {
  split_with(normalized_, text, out);
}

}  // namespace llaisys::text
