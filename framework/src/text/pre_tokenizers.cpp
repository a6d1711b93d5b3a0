// Pre-tokenizers: Split (regex or literal, with Hugging Face's five delimiter behaviours),
// ByteLevel (the byte alphabet, optionally with GPT-2's own split and a prefix space), Digits, and
// Sequence.

#include <algorithm>

#include "json_fields.hpp"
#include "pipeline.hpp"
#include "regex.hpp"

namespace llaisys::text {
namespace {
namespace json = boost::json;
using Range = std::pair<uint32_t, uint32_t>;

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// One segment of a piece: a match of the delimiter pattern or the text between two matches.
struct Segment {
  Range range;
  bool is_match;
};

// Hugging Face's NormalizedString::split: turns (segment, is_match) lists into the new pieces.
void apply_behavior(const std::vector<Segment>& segments, SplitBehavior behavior, std::vector<Range>& out) {
  std::vector<Range> pieces;
  switch (behavior) {
    case SplitBehavior::removed:
      for (const Segment& s : segments) {
        if (!s.is_match) pieces.push_back(s.range);
      }
      break;
    case SplitBehavior::isolated:
      for (const Segment& s : segments) pieces.push_back(s.range);
      break;
    case SplitBehavior::merged_with_previous: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().second = s.range.second;
        } else {
          pieces.push_back(s.range);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::merged_with_next: {
      bool previous_match = false;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().first = it->range.first;
        } else {
          pieces.push_back(it->range);
        }
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    }
    case SplitBehavior::contiguous: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match == previous_match && !pieces.empty()) {
          pieces.back().second = s.range.second;
        } else {
          pieces.push_back(s.range);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  for (const Range& r : pieces) {
    if (r.second > r.first) out.push_back(r);
  }
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::shared_ptr<const Regex> regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  Status pre_tokenize(PreTokenizedText& pre) const override {
    std::vector<Range> out;
    out.reserve(pre.pieces.size() * 4);
    std::vector<Range> matches;
    std::vector<Segment> segments;
    for (const Range& piece : pre.pieces) {
      const std::string_view subject = std::string_view(pre.text).substr(piece.first, piece.second - piece.first);
      matches.clear();
      LLAISYS_RETURN_IF_ERROR(regex_->find_all(subject, matches));
      segments.clear();
      uint32_t previous = 0;
      for (const Range& m : matches) {
        if (m.first != previous) segments.push_back({{piece.first + previous, piece.first + m.first}, invert_});
        segments.push_back({{piece.first + m.first, piece.first + m.second}, !invert_});
        previous = m.second;
      }
      if (previous != subject.size()) {
        segments.push_back({{piece.first + previous, piece.second}, invert_});
      }
      if (behavior_ == SplitBehavior::isolated) {  // the common case, without the extra copy
        for (const Segment& s : segments) {
          if (s.range.second > s.range.first) out.push_back(s.range);
        }
      } else {
        apply_behavior(segments, behavior_, out);
      }
    }
    pre.pieces = std::move(out);
    return Status::success();
  }

 private:
  std::shared_ptr<const Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's pattern, which ByteLevel applies itself when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<PreTokenizer> split)
      : add_prefix_space_(add_prefix_space), split_(std::move(split)) {}

  Status pre_tokenize(PreTokenizedText& pre) const override {
    if (add_prefix_space_) {
      // A space before every piece that does not start with one (rebuilds the text).
      std::string text;
      std::vector<Range> pieces;
      for (std::size_t i = 0; i < pre.pieces.size(); ++i) {
        const std::string_view piece = pre.piece(i);
        const auto begin = static_cast<uint32_t>(text.size());
        if (piece.front() != ' ') text.push_back(' ');
        text.append(piece);
        pieces.emplace_back(begin, static_cast<uint32_t>(text.size()));
      }
      pre.text = std::move(text);
      pre.pieces = std::move(pieces);
    }
    if (split_) LLAISYS_RETURN_IF_ERROR(split_->pre_tokenize(pre));
    pre.byte_level = true;
    return Status::success();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<PreTokenizer> split_;  // GPT-2's split when use_regex, else null
};

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  Status pre_tokenize(PreTokenizedText& pre) const override {
    std::vector<Range> out;
    for (const Range& piece : pre.pieces) {
      uint32_t start = piece.first;
      for (uint32_t i = piece.first; i < piece.second; ++i) {
        const bool digit = pre.text[i] >= '0' && pre.text[i] <= '9';
        const bool prev_digit = i > start && pre.text[i - 1] >= '0' && pre.text[i - 1] <= '9';
        if (i > start && (digit != prev_digit || (digit && individual_))) {
          out.emplace_back(start, i);
          start = i;
        }
      }
      if (piece.second > start) out.emplace_back(start, piece.second);
    }
    pre.pieces = std::move(out);
    return Status::success();
  }

 private:
  bool individual_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  Status pre_tokenize(PreTokenizedText& pre) const override {
    for (const auto& step : steps_) LLAISYS_RETURN_IF_ERROR(step->pre_tokenize(pre));
    return Status::success();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Result<SplitBehavior> parse_behavior(const json::object& o) {
  LLAISYS_ASSIGN_OR_RETURN(std::string name, json_fields::string_or(o, "behavior", "Isolated"));
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  return make_error(ErrorCode::parse_error, "pre_tokenizer Split: unknown behavior '{}'", name);
}

std::string escape_literal(std::string_view literal) {
  return "\\Q" + std::string(literal) + "\\E";  // PCRE2 quoting; \E inside is split below
}

Result<std::unique_ptr<PreTokenizer>> make_split(const json::object& o) {
  const json::value* pattern = o.if_contains("pattern");
  if (pattern == nullptr || !pattern->is_object()) {
    return Status(ErrorCode::parse_error, "pre_tokenizer Split: 'pattern' must be {\"Regex\": ...} or {\"String\": ...}");
  }
  std::string source;
  if (const json::value* r = pattern->get_object().if_contains("Regex"); r != nullptr && r->is_string()) {
    source = onig_to_pcre2(r->get_string());
  } else if (const json::value* s = pattern->get_object().if_contains("String"); s != nullptr && s->is_string()) {
    std::string literal(s->get_string());
    if (literal.empty()) return Status(ErrorCode::parse_error, "pre_tokenizer Split: empty String pattern");
    // \Q...\E cannot hold "\E"; quote the pieces around it.
    std::size_t start = 0;
    for (std::size_t hit; (hit = literal.find("\\E", start)) != std::string::npos; start = hit + 2) {
      source += escape_literal(std::string_view(literal).substr(start, hit - start)) + "\\\\E";
    }
    source += escape_literal(std::string_view(literal).substr(start));
  } else {
    return Status(ErrorCode::parse_error, "pre_tokenizer Split: 'pattern' must be {\"Regex\": ...} or {\"String\": ...}");
  }
  LLAISYS_ASSIGN_OR_RETURN(auto regex, Regex::compile(source));
  LLAISYS_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_behavior(o));
  LLAISYS_ASSIGN_OR_RETURN(bool invert, json_fields::bool_or(o, "invert", false));
  return std::unique_ptr<PreTokenizer>(std::make_unique<SplitPreTokenizer>(std::move(regex), behavior, invert));
}

}  // namespace

std::string onig_to_pcre2(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += pattern[i];
        out += next;
      }
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const json::value& config) {
  if (config.is_null()) return std::unique_ptr<PreTokenizer>();
  LLAISYS_ASSIGN_OR_RETURN(const json::object* o, json_fields::object_of(config, "pre_tokenizer"));
  const std::string_view type = json_fields::type_of(*o);
  if (type == "Split") return make_split(*o);
  if (type == "ByteLevel") {
    LLAISYS_ASSIGN_OR_RETURN(bool prefix, json_fields::bool_or(*o, "add_prefix_space", true));
    LLAISYS_ASSIGN_OR_RETURN(bool use_regex, json_fields::bool_or(*o, "use_regex", true));
    std::unique_ptr<PreTokenizer> split;
    if (use_regex) {
      LLAISYS_ASSIGN_OR_RETURN(auto regex, Regex::compile(onig_to_pcre2(kGpt2Pattern)));
      split = std::make_unique<SplitPreTokenizer>(std::move(regex), SplitBehavior::isolated, false);
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<ByteLevelPreTokenizer>(prefix, std::move(split)));
  }
  if (type == "Digits") {
    LLAISYS_ASSIGN_OR_RETURN(bool individual, json_fields::bool_or(*o, "individual_digits", false));
    return std::unique_ptr<PreTokenizer>(std::make_unique<DigitsPreTokenizer>(individual));
  }
  if (type == "Sequence") {
    const json::value* list = o->if_contains("pretokenizers");
    if (list == nullptr || !list->is_array()) {
      return Status(ErrorCode::parse_error, "pre_tokenizer Sequence: 'pretokenizers' must be an array");
    }
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const json::value& item : list->get_array()) {
      LLAISYS_ASSIGN_OR_RETURN(auto step, make_pre_tokenizer(item));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<SequencePreTokenizer>(std::move(steps)));
  }
  if (type.empty()) return Status(ErrorCode::parse_error, "pre_tokenizer: missing 'type'");
  return make_error(ErrorCode::unsupported, "pre_tokenizer type '{}' is not supported", type);
}

}  // namespace llaisys::text
