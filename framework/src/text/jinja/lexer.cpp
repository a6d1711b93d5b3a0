#include "jinja/lexer.hpp"

#include <algorithm>

#include "utf8.hpp"

namespace llaisys::text::jinja {
namespace {

// Python's str.isspace() / the \s of Python's re module on str patterns.
bool is_py_space(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E: case 0x1F:
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

// Length of the whitespace character at s[i], or 0.
std::size_t space_at(std::string_view s, std::size_t i) {
  if (i >= s.size()) return 0;
  const std::size_t n = utf8::valid_sequence_length(s, i);
  if (n == 0) return 0;
  return is_py_space(utf8::decode_at(s, i, n)) ? n : 0;
}

std::size_t skip_spaces(std::string_view s, std::size_t i) {
  while (std::size_t n = space_at(s, i)) i += n;
  return i;
}

// text.rstrip() (Python whitespace).
std::string_view rstrip(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    if (space_at(text, start) == 0) break;
    end = start;
  }
  return text.substr(0, end);
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const std::size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        push(TokenType::data, src_.substr(pos_), pos_);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      if (sign == '-') {
        text = rstrip(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop spaces/tabs between the last newline (or a line start) and the tag.
        const std::size_t newline = text.rfind('\n');
        const std::size_t l_pos = newline == std::string_view::npos ? 0 : newline + 1;
        if ((l_pos > 0 || line_starting) &&
            text.find_first_not_of(" \t", l_pos) == std::string_view::npos) {
          text = text.substr(0, l_pos);
        }
      }
      if (!text.empty()) push(TokenType::data, std::string(text), pos_);
      const std::size_t after = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        line_starting = lex_comment(tag, after);
      } else if (kind == '%' && is_raw(after)) {
        line_starting = lex_raw(tag, after);
      } else {
        line_starting = lex_tag(kind == '{', tag, after);
      }
    }
    push(TokenType::eof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  SourceLocation location(std::size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const auto line = static_cast<std::size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  [[noreturn]] void syntax_error(const std::string& message, std::size_t offset) const {
    fail("TemplateSyntaxError", message, location(offset));
  }

  void push(TokenType type, std::string value, std::size_t offset) {
    tokens_.push_back({type, std::move(value), location(offset)});
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // After a tag's end: trim_blocks eats one newline unless '+'; '-' eats all whitespace. Returns
  // whether the consumed text ends with a newline (Jinja2's line_starting).
  bool finish_block_end(std::size_t end_pos, char sign, bool trim_newline) {
    if (sign == '-') {
      pos_ = skip_spaces(src_, end_pos);
      return pos_ > end_pos && src_[pos_ - 1] == '\n';
    }
    pos_ = end_pos;
    if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      return true;
    }
    return false;
  }

  bool lex_comment(std::size_t tag, std::size_t after) {
    const std::size_t end = src_.find("#}", after);
    if (end == std::string::npos) syntax_error("missing end of comment tag", tag);
    const char sign = end > after && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    return finish_block_end(end + 2, sign, true);
  }

  // {% raw %} (with optional -/+ and spaces)
  bool is_raw(std::size_t after) const {
    const std::size_t i = skip_spaces(src_, after);
    if (src_.compare(i, 3, "raw") != 0) return false;
    const std::size_t j = skip_spaces(src_, i + 3);
    return src_.compare(j, 2, "%}") == 0 || src_.compare(j, 3, "-%}") == 0;
  }

  bool lex_raw(std::size_t tag, std::size_t after) {
    std::size_t i = skip_spaces(src_, skip_spaces(src_, after) + 3);
    const char open_sign = src_[i] == '-' ? '-' : 0;
    i += open_sign ? 3 : 2;
    if (open_sign == '-') i = skip_spaces(src_, i);
    // Find {%[-+]? endraw [-]?%}
    for (std::size_t k = src_.find("{%", i); k != std::string::npos; k = src_.find("{%", k + 1)) {
      std::size_t p = k + 2;
      const char close_sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : 0;
      if (close_sign) ++p;
      p = skip_spaces(src_, p);
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p = skip_spaces(src_, p + 6);
      const char end_sign = src_.compare(p, 3, "-%}") == 0 ? '-' : (src_.compare(p, 3, "+%}") == 0 ? '+' : 0);
      if (!end_sign && src_.compare(p, 2, "%}") != 0) continue;
      std::string_view body = std::string_view(src_).substr(i, k - i);
      if (close_sign == '-') body = rstrip(body);
      if (!body.empty()) push(TokenType::data, std::string(body), i);
      return finish_block_end(p + (end_sign ? 3 : 2), end_sign, true);
    }
    syntax_error("missing end of raw directive", tag);
  }

  bool lex_tag(bool variable, std::size_t tag, std::size_t after) {
    push(variable ? TokenType::var_begin : TokenType::block_begin, variable ? "{{" : "{%", tag);
    const char close = variable ? '}' : '%';
    std::vector<char> balance;
    std::size_t i = after;
    while (true) {
      i = skip_spaces(src_, i);
      if (i >= src_.size()) syntax_error(variable ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'", tag);
      if (balance.empty()) {
        // end of tag: "-}}", "}}", "-%}", "+%}", "%}"
        const char sign = (src_[i] == '-' || (!variable && src_[i] == '+')) ? src_[i] : 0;
        const std::size_t j = i + (sign ? 1 : 0);
        if (j + 1 < src_.size() && src_[j] == close && src_[j + 1] == '}') {
          push(variable ? TokenType::var_end : TokenType::block_end, variable ? "}}" : "%}", i);
          return finish_block_end(j + 2, sign, !variable);
        }
      }
      i = lex_expression_token(i, balance);
    }
  }

  std::size_t lex_expression_token(std::size_t i, std::vector<char>& balance) {
    const char c = src_[i];
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(i);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i + 1;
      while (j < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
      push(TokenType::name, src_.substr(i, j - i), i);
      return j;
    }
    if (c == '\'' || c == '"') return lex_string(i);
    static const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                             "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
    for (const char* op : kOperators) {
      const std::size_t n = std::char_traits<char>::length(op);
      if (src_.compare(i, n, op) != 0) continue;
      if (n == 1 && (c == '(' || c == '[' || c == '{')) balance.push_back(c);
      if (n == 1 && (c == ')' || c == ']' || c == '}')) {
        const char open = c == ')' ? '(' : (c == ']' ? '[' : '{');
        if (balance.empty() || balance.back() != open) syntax_error(fmt::format("unexpected '{}'", c), i);
        balance.pop_back();
      }
      push(TokenType::op, op, i);
      return i + n;
    }
    syntax_error(fmt::format("unexpected char {} at {}", string_char(i), i), i);
  }

  std::string string_char(std::size_t i) const {
    const std::size_t n = utf8::valid_sequence_length(src_, i);
    return fmt::format("'{}'", std::string_view(src_).substr(i, n == 0 ? 1 : n));
  }

  std::size_t lex_number(std::size_t i) {
    const std::size_t start = i;
    auto digits = [&](std::size_t k) {  // (\d+_)*\d+
      const std::size_t begin = k;
      while (k < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[k])) ||
                                 (src_[k] == '_' && k > begin && k + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[k + 1]))))) {
        ++k;
      }
      return k;
    };
    auto strip = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    if (src_[i] == '0' && i + 1 < src_.size() && std::strchr("xXoObB", src_[i + 1]) != nullptr) {
      const int base = std::tolower(src_[i + 1]) == 'x' ? 16 : (std::tolower(src_[i + 1]) == 'o' ? 8 : 2);
      std::size_t j = i + 2;
      while (j < src_.size() && (std::isxdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
      const std::string body = strip(src_.substr(i + 2, j - i - 2));
      errno = 0;
      char* end = nullptr;
      const long long value = std::strtoll(body.c_str(), &end, base);
      if (body.empty() || *end != '\0' || errno != 0) syntax_error("invalid integer literal", i);
      push(TokenType::integer, std::to_string(value), start);
      return j;
    }
    i = digits(i);
    bool is_float = false;
    if (i + 1 < src_.size() && src_[i] == '.' && std::isdigit(static_cast<unsigned char>(src_[i + 1]))) {
      i = digits(i + 1);
      is_float = true;
    }
    if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
      std::size_t k = i + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        i = digits(k);
        is_float = true;
      }
    }
    push(is_float ? TokenType::floating : TokenType::integer, strip(src_.substr(start, i - start)), start);
    return i;
  }

  // Python string literal with unicode-escape decoding (what Jinja2 applies).
  std::size_t lex_string(std::size_t i) {
    const char quote = src_[i];
    std::string value;
    std::size_t j = i + 1;
    while (true) {
      if (j >= src_.size()) syntax_error("unexpected end of string", i);
      const char c = src_[j];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++j;
        continue;
      }
      if (j + 1 >= src_.size()) syntax_error("unexpected end of string", i);
      const char e = src_[j + 1];
      j += 2;
      auto hex = [&](int count) {
        if (j + static_cast<std::size_t>(count) > src_.size()) syntax_error("truncated \\x/\\u escape", j);
        char32_t cp = 0;
        for (int k = 0; k < count; ++k) {
          const char h = src_[j + static_cast<std::size_t>(k)];
          if (!std::isxdigit(static_cast<unsigned char>(h))) syntax_error("truncated \\x/\\u escape", j);
          cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10);
        }
        j += static_cast<std::size_t>(count);
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
        utf8::append_code_point(value, cp);
      };
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && j < src_.size() && src_[j] >= '0' && src_[j] <= '7'; ++k, ++j) {
              cp = cp * 8 + static_cast<char32_t>(src_[j] - '0');
            }
            utf8::append_code_point(value, cp);
          } else {
            value += '\\';  // unknown escapes stay as written
            value += e;
          }
      }
    }
    push(TokenType::string, std::move(value), i);
    return j + 1;
  }

  std::string src_;
  std::size_t pos_ = 0;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
};

// Jinja2 normalises every line ending to \n and drops one trailing newline.
std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_source(source)).run(); }

}  // namespace llaisys::text::jinja
