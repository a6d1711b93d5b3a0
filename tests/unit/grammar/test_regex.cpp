// compile_regex (regex.hpp) against a real regex engine: for each pattern of a list of realistic ones
// (JSON Schema "pattern" values, vLLM guided_regex), reference_match over the compiled expression must
// give PCRE2's verdict (full match, UTF mode) on thousands of strings: strings sampled from the
// expression itself, random strings over the pattern's alphabet, and mutations of both.
//
// PCRE2 is not ECMAScript; each pattern is translated for it (to_pcre2) where the dialects differ:
//  - \s: ECMAScript's set includes U+00A0, U+FEFF, U+1680, U+2000-200A, U+2028/9, U+202F, U+205F, U+3000;
//    PCRE2 without UCP only ASCII space -> spelled out as a class;
//  - `.`: ECMAScript excludes LF CR U+2028 U+2029, PCRE2 only LF -> spelled out;
//  - \v is vertical space in PCRE2, VT in ECMAScript; \0 starts an octal escape in PCRE2;
//  - \uHHHH and \u{H} are \x{H} in PCRE2; [] and [^] mean "nothing" and "anything" in ECMAScript but
//    start a class holding ']' in PCRE2; '[' inside a class is literal in ECMAScript;
//  - \p{gc=V} / \p{General_Category=V} / long names are written as PCRE2's short names.
// \d and \w are ASCII in both (PCRE2 without UCP). $ gets PCRE2_DOLLAR_ENDONLY. The patterns avoid
// \S inside a class (PCRE2 has no way to spell "not the ECMAScript spaces" there) and code points new
// in Unicode 15 (ICU 72 knows them, PCRE2 10.42 does not).

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "llaisys/grammar/grammar.hpp"
#include "llaisys/grammar/reference_match.hpp"
#include "llaisys/grammar/regex.hpp"

using namespace llaisys::grammar;

namespace {

// Code points of valid UTF-8 (the test's own patterns and strings built from code points).
std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1Fu) : n == 3 ? (b & 0x0Fu) : (b & 0x07u);
    for (int k = 1; k < n && i + static_cast<std::size_t>(k) < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<uint8_t>(s[i + static_cast<std::size_t>(k)]) & 0x3Fu);
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

constexpr std::string_view kEcmaSpaces =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

uint32_t parse_hex(std::string_view s) {
  uint32_t v = 0;
  for (const char c : s) v = v * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  return v;
}

// The PCRE2 spelling of an ECMAScript pattern of this file's list (see the top comment).
std::string to_pcre2(std::string_view es) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < es.size(); ++i) {
    const char c = es[i];
    if (c == '\\') {
      const char e = es[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kEcmaSpaces) : fmt::format("[{}]", kEcmaSpaces);
      } else if (e == 'S') {
        REQUIRE_FALSE(in_class);
        out += fmt::format("[^{}]", kEcmaSpaces);
      } else if (e == 'v') {
        out += "\\x{0B}";
      } else if (e == '0') {
        out += "\\x{00}";
      } else if (e == 'u' && es[i + 1] == '{') {
        const std::size_t close = es.find('}', i);
        out += fmt::format("\\x{{{}}}", es.substr(i + 2, close - i - 2));
        i = close;
      } else if (e == 'u') {
        uint32_t cp = parse_hex(es.substr(i + 1, 4));
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && es.substr(i + 1, 2) == "\\u") {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (parse_hex(es.substr(i + 3, 4)) - 0xDC00);
          i += 6;
        }
        out += fmt::format("\\x{{{:X}}}", cp);
      } else if (e == 'p' || e == 'P') {
        const std::size_t close = es.find('}', i);
        std::string name(es.substr(i + 2, close - i - 2));
        for (const std::string_view prefix : {"gc=", "General_Category="}) {
          if (name.starts_with(prefix)) name = name.substr(prefix.size());
        }
        if (name == "Letter") name = "L";
        if (name == "Decimal_Number") name = "Nd";
        if (name == "Uppercase_Letter") name = "Lu";
        out += fmt::format("\\{}{{{}}}", e, name);
        i = close;
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c == '[' ? std::string("\\[") : std::string(1, c);
      continue;
    }
    if (c == '[') {
      if (es.substr(i, 3) == "[^]") {
        out += "(?s:.)";
        i += 2;
      } else if (es.substr(i, 2) == "[]") {
        out += "(?:(*FAIL))";
        i += 1;
      } else {
        in_class = true;
        out += c;
        if (es.substr(i + 1, 1) == "^") out += es[++i];
      }
      continue;
    }
    if (c == '.') {
      out += "[^\\n\\r\\x{2028}\\x{2029}]";
      continue;
    }
    out += c;
  }
  return out;
}

class Pcre2Matcher {
 public:
  explicit Pcre2Matcher(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOLLAR_ENDONLY, &error, &offset,
                          nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR buffer[256];
      pcre2_get_error_message(error, buffer, sizeof(buffer));
      error_ = fmt::format("{} at {}", reinterpret_cast<const char*>(buffer), offset);
      return;
    }
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre2Matcher() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  Pcre2Matcher(const Pcre2Matcher&) = delete;
  Pcre2Matcher& operator=(const Pcre2Matcher&) = delete;

  bool ok() const { return code_ != nullptr; }
  const std::string& error() const { return error_; }
  // Invalid UTF-8 subjects are errors in PCRE2's UTF mode: no match, as for the grammar.
  bool full_match(std::string_view text) const {
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, data_, nullptr);
    return rc >= 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
  std::string error_;
};

// A random string of the expression's language (repeats take at most 3 more than their minimum).
bool sample(const ExprPtr& e, std::mt19937& rng, std::string& out) {
  switch (e->kind) {
    case Expr::Kind::empty: return true;
    case Expr::Kind::nothing:
    case Expr::Kind::ref: return false;
    case Expr::Kind::bytes: {
      std::vector<int> bytes;
      for (int b = 0; b < 256; ++b) {
        if (e->set.test(static_cast<std::size_t>(b))) bytes.push_back(b);
      }
      out += static_cast<char>(bytes[rng() % bytes.size()]);
      return true;
    }
    case Expr::Kind::seq:
      for (const ExprPtr& c : e->children) {
        if (!sample(c, rng, out)) return false;
      }
      return true;
    case Expr::Kind::alt: return sample(e->children[rng() % e->children.size()], rng, out);
    case Expr::Kind::repeat: {
      const int32_t extra = e->max == kUnbounded ? 3 : std::min(e->max - e->min, 3);
      const int32_t count = e->min + static_cast<int32_t>(rng() % static_cast<uint32_t>(extra + 1));
      for (int32_t i = 0; i < count; ++i) {
        if (!sample(e->children[0], rng, out)) return false;
      }
      return true;
    }
  }
  return false;
}

// Characters worth trying against any pattern: ASCII of every kind, the spaces and line terminators
// where ECMAScript and other dialects differ, letters and digits outside ASCII, astral code points.
const std::vector<uint32_t>& common_alphabet() {
  static const std::vector<uint32_t> a{
      'a', 'b', 'z', 'A', 'Z', '0', '1', '9', '_', '-', '.', '@', ' ', '/', ':', '+', '#', '$', '\\',
      '\t', '\n', '\r', 0x0B, 0x0C, 0x00, 0x7F, 0x85, 0xA0, 0xE9, 0xDF, 0x3A9, 0x660, 0x1680, 0x2007, 0x2028,
      0x2029, 0x202F, 0xFEFF, 0x3000, 0x4E2D, 0x3042, 0x1F600, 0x1F4A9, 0x10FFFF};
  return a;
}

// The pattern's own characters (and those its escapes name), with their neighbours, plus the common ones.
std::vector<uint32_t> alphabet_of(std::string_view pattern) {
  std::set<uint32_t> cps(common_alphabet().begin(), common_alphabet().end());
  for (const uint32_t cp : code_points(pattern)) {
    cps.insert(cp);
    if (cp > 0) cps.insert(cp - 1);
    cps.insert(cp + 1);
  }
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    std::string_view rest = pattern.substr(i + 2);
    std::string hex;
    if (pattern[i + 1] == 'x') hex = std::string(rest.substr(0, 2));
    if (pattern[i + 1] == 'u') {
      rest = rest.starts_with('{') ? rest.substr(1) : rest.substr(0, 4);
      for (const char c : rest) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) break;
        hex += c;
      }
    }
    if (hex.empty()) continue;
    const uint32_t cp = parse_hex(hex);
    for (const uint32_t v : {cp - 1, cp, cp + 1}) cps.insert(v);
  }
  std::vector<uint32_t> out;
  for (const uint32_t cp : cps) {
    if (cp <= kMaxCodePoint && (cp < 0xD800 || cp > 0xDFFF)) out.push_back(cp);
  }
  return out;
}

// One to three edits: insert, delete, replace or duplicate code points, or break the UTF-8.
std::string mutate(const std::string& s, const std::vector<uint32_t>& alphabet, std::mt19937& rng) {
  std::vector<uint32_t> cps = code_points(s);
  std::string raw_suffix;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < edits; ++k) {
    const std::size_t at = cps.empty() ? 0 : rng() % (cps.size() + 1);
    const uint32_t pick = alphabet[rng() % alphabet.size()];
    switch (rng() % 6) {
      case 0: cps.insert(cps.begin() + static_cast<std::ptrdiff_t>(at), pick); break;
      case 1:
        if (at < cps.size()) cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      case 2:
        if (at < cps.size()) cps[at] = pick;
        break;
      case 3:
        if (at < cps.size()) {
          const std::size_t len = 1 + rng() % (cps.size() - at);
          std::vector<uint32_t> chunk(cps.begin() + static_cast<std::ptrdiff_t>(at),
                                      cps.begin() + static_cast<std::ptrdiff_t>(at + len));
          cps.insert(cps.begin() + static_cast<std::ptrdiff_t>(at), chunk.begin(), chunk.end());
        }
        break;
      case 4:
        if (at < cps.size()) std::swap(cps[at], cps[rng() % cps.size()]);
        break;
      default: raw_suffix.assign(1, rng() % 2 ? '\xFF' : '\xC3'); break;  // invalid UTF-8 at the end
    }
  }
  std::string out;
  for (const uint32_t cp : cps) append_utf8(out, cp);
  return out + raw_suffix;
}

std::string escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto b = static_cast<uint8_t>(c);
    out += b >= 0x20 && b < 0x7F ? std::string(1, c) : fmt::format("\\x{:02X}", b);
  }
  return out;
}

// ICU (our \p data) and PCRE2 may know different Unicode versions: texts holding a code point one of
// them calls unassigned (Cn) and the other does not are left out of the comparison.
bool same_unicode_version(std::string_view text) {
  static const Pcre2Matcher pcre_unassigned(R"(\p{Cn})");
  static const ExprPtr ours_unassigned = *compile_regex(R"(\p{Cn})");
  for (const uint32_t cp : code_points(text)) {
    if (cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) continue;  // from broken UTF-8: both refuse
    std::string one;
    append_utf8(one, cp);
    if (pcre_unassigned.full_match(one) != reference_match({ours_unassigned}, 0, one)) return false;
  }
  return true;
}

struct Case {
  const char* pattern;
  std::vector<const char*> examples;  // texts that match, to mutate (sampling finds others)
};

// Realistic patterns: JSON Schema formats people write by hand, vLLM guided_regex examples, and
// constructs picked for their corners (lazy quantifiers, empty alternatives, nested counts, classes).
const std::vector<Case>& cases() {
  static const std::vector<Case> c{
      {R"(^\d{4}-\d{2}-\d{2}$)", {"2024-01-31"}},
      {R"(^(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?$)", {"23:59", "00:00:07"}},
      {R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$)",
       {"2024-02-29T12:30:00Z", "1999-12-31T23:59:59.123+05:30"}},
      {R"(^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$)", {"john.doe+x@mail.example.com"}},
      {R"(^[^\s@]+@[^\s@]+\.[^\s@]+$)", {"a@b.c", "名前@例え.jp"}},
      {R"(^\+?[1-9]\d{1,14}$)", {"+14155552671"}},
      {R"(^\(\d{3}\) \d{3}-\d{4}$)", {"(415) 555-2671"}},
      {R"(^(?:\+?1[-. ]?)?\(?([0-9]{3})\)?[-. ]?([0-9]{3})[-. ]?([0-9]{4})$)", {"+1 415.555.2671", "4155552671"}},
      {R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)",
       {"1.0.0-alpha.1+build.5", "10.20.30"}},
      {R"(^#(?:[0-9a-fA-F]{3}){1,2}$)", {"#fff", "#A0b1C2"}},
      {R"(^#([A-Fa-f0-9]{6}|[A-Fa-f0-9]{3})$)", {"#123abc"}},
      {R"(^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$)",
       {"123e4567-e89b-12d3-a456-426614174000"}},
      {R"(^[a-zA-Z_$][a-zA-Z0-9_$]*$)", {"_foo$1"}},
      {R"(^[a-z][a-z0-9_]{2,15}$)", {"user_42"}},
      {R"(^\p{Lu}\p{Ll}+$)", {"Émile", "Ωmega"}},
      {R"(^[\p{L}\p{M}' -]+$)", {"Jean-Luc O'Neil", "Zoë"}},
      {R"(^\P{N}*$)", {"abc", ""}},
      {R"(^(?:\p{L}|\p{Nd})+$)", {"abc٣4", "中文"}},
      {R"(^\p{gc=Lu}\p{General_Category=Nd}\p{Letter}$)", {"A1b"}},
      {R"(^[^\p{L}\d]+$)", {"--!!", "٣"}},
      {R"(^(?:cat|dog|bird)s?$)", {"cats", "bird"}},
      {R"(^a|^b$)", {"a", "b"}},
      {R"(^ab|cd$|^$)", {"ab", "cd", ""}},
      {R"((a|b)*abb)", {"aababb"}},
      {R"(^((a|b)c)+d?$)", {"acbcd"}},
      {R"(^.*?foo.*$)", {"xxfooyy"}},
      {R"(^x+?y{2,3}?z??$)", {"xxyyz"}},
      {R"(^\S+\s\S+$)", {"hello world", "a\xE3\x80\x80" "b"}},
      {R"(^\w+(?:[-.]\w+)*$)", {"a-b.c_d"}},
      {R"(^\W\D\w\d$)", {"!x_5"}},
      {R"(^[\u00C0-\u017F]+$)", {"àéîõü"}},
      {R"(^\u{1F600}+[\u{1F300}-\u{1F5FF}]?$)", {"😀😀🌍"}},
      {R"(^\uD83D\uDE00\u00e9$)", {"😀é"}},
      {R"(^[^]*x$)", {"ab\ncx"}},
      {R"(^a[]?b$)", {"ab"}},
      {R"(^\x41\u0042\t\cJ\cm\0?$)", {"AB\t\n\r"}},
      {R"(^[\b\f\v\r\n]+$)", {"\b\f"}},
      {R"(^(?<year>\d{4})-(?<month>0[1-9]|1[0-2])$)", {"2024-12"}},
      {R"(^[a-c-e]+$)", {"a-e", "cab"}},
      {R"(^[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?$)", {"-1.5e+10", ".5"}},
      {R"(^https?:\/\/[\w.-]+(?::\d{2,5})?(?:\/[\w.~%-]*)*$)", {"https://example.com:8080/a/b.html"}},
      {R"(^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$)", {"192.168.0.255"}},
      {R"(^[A-Z]{2}\d{2}[A-Z0-9]{1,30}$)", {"DE89370400440532013000"}},
      {R"(^\d{5}(?:-\d{4})?$)", {"12345-6789"}},
      {R"(^[a-z0-9]+(?:-[a-z0-9]+)*$)", {"my-slug-2"}},
      {R"(^[\u4e00-\u9fff]{2,4}$)", {"中文名"}},
      {R"(^[^\x00-\x7F]+$)", {"日本"}},
      {R"(^[^a-z]*$)", {"ABC 123"}},
      {R"(^(a{2}){2,3}$)", {"aaaa"}},
      {R"(^(?:a|ab)(?:c|bcd)(?:d*)$)", {"abcd", "ac"}},
      {R"(^(x|y|)+$)", {"xyx", ""}},
      {R"(^()*a$)", {"a"}},
      {R"(^[\d\s]{3,}$)", {"1 2 3"}},
      {R"(^\s*$)", {"  \t", "\xC2\xA0"}},
      {R"(^\.\*\+\?\(\)\[\]\{\}\|\/\-\\\^\$$)", {".*+?()[]{}|/-\\^$"}},
      {R"(^[.*+?()|{}$^[]+$)", {"{}()"}},
      {R"(^(?:true|false|null)$)", {"true"}},
      {R"(^[A-Z][a-z]*(?: [A-Z][a-z]*)*$)", {"New York City"}},
      {R"(^\$\d{1,3}(?:,\d{3})*(?:\.\d{2})?$)", {"$1,234.56"}},
      {R"(^(?:(?:a+)+)+b?$)", {"aaab"}},
      {"^é+ü?ß$", {"ééüß"}},
      {R"(^(?:\r\n|\n)+$)", {"\r\n\n"}},
      {R"(^[\t -~]*$)", {"Hello, World! ~"}},
      {R"(^.{2,4}$)", {"ab", "a\xC2\x85" "b"}},
      {R"(^x.y$)", {"x y"}},
      {R"(^\u2028|\u{10FFFF}$)", {"\xE2\x80\xA8"}},
      {R"(abc)", {"abc"}},
      {R"(^$)", {""}},
      {R"(^(?:[a-z]{1,3}){1,3}$)", {"abcdefg"}},
      {R"(^[ぁ-ん]+$)", {"ひらがな"}},
      {R"(^(\w+)@(\w+)\.com$)", {"me@host.com"}},
      {R"(^[a-zA-Z]+(?:'[a-zA-Z]+)?$)", {"don't"}},
      {R"(^\d+(?:\.\d+)?%$)", {"99.5%"}},
      {R"(^(?:[^"\\]|\\.)*$)", {R"(a\"b)"}},
      {R"(^\{"name": "[^"]{1,20}", "age": \d{1,3}\}$)", {R"({"name": "Bob", "age": 42})"}},
      {R"(^(?:\d{3}-){2}\d{4}$|^\d{10}$)", {"415-555-2671", "4155552671"}},
      {R"(^[\w\-.\u00A0]+$)", {"a-b.c\xC2\xA0"}},
  };
  return c;
}

}  // namespace

TEST_CASE("compile_regex agrees with PCRE2 on realistic patterns", "[grammar][regex]") {
  std::mt19937 rng(20240611);
  int64_t compared = 0;
  int64_t positives = 0;
  for (const Case& c : cases()) {
    const std::string_view pattern = c.pattern;
    INFO("pattern " << escaped(pattern));
    auto expr = compile_regex(pattern);
    REQUIRE(expr.ok());
    const std::string pcre_pattern = to_pcre2(pattern);
    INFO("PCRE2 pattern " << escaped(pcre_pattern));
    const Pcre2Matcher pcre(pcre_pattern);
    INFO("PCRE2 error " << pcre.error());
    REQUIRE(pcre.ok());

    GrammarBuilder b;
    const int32_t root = b.add_rule("root", *expr);
    REQUIRE(b.build(root).ok());  // every pattern of the list fits the default limits

    const std::vector<uint32_t> alphabet = alphabet_of(pattern);
    std::vector<std::string> texts;
    std::vector<std::string> matches;
    for (const char* example : c.examples) matches.emplace_back(example);
    for (int i = 0; i < 40; ++i) {
      std::string s;
      if (sample(*expr, rng, s)) matches.push_back(std::move(s));
    }
    texts.insert(texts.end(), matches.begin(), matches.end());
    for (int i = 0; i < 120; ++i) texts.push_back(mutate(matches[rng() % matches.size()], alphabet, rng));
    for (int i = 0; i < 80; ++i) {
      std::string s;
      const int len = static_cast<int>(rng() % 10);
      for (int k = 0; k < len; ++k) append_utf8(s, alphabet[rng() % alphabet.size()]);
      texts.push_back(std::move(s));
    }

    int32_t pattern_positives = 0;
    int32_t skipped = 0;
    for (const std::string& text : texts) {
      if (!same_unicode_version(text)) {
        ++skipped;
        continue;
      }
      const bool want = pcre.full_match(text);
      INFO("text \"" << escaped(text) << "\" PCRE2 says " << want);
      REQUIRE(reference_match(b.exprs(), root, text) == want);
      pattern_positives += want ? 1 : 0;
      ++compared;
    }
    for (const char* example : c.examples) {
      INFO("example \"" << escaped(example) << "\"");
      CHECK(pcre.full_match(example));  // the list itself is right
    }
    CHECK(skipped < 10);
    CHECK(pattern_positives > 0);
    CHECK(pattern_positives < static_cast<int32_t>(texts.size()));
    positives += pattern_positives;
  }
  CHECK(cases().size() >= 60);
  CHECK(compared > 15000);
  CHECK(positives > 3000);
}
