#include "jinja/py_string.hpp"

#include <algorithm>

#include <unicode/uchar.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include "jinja/error.hpp"
#include "utf8.hpp"

namespace llaisys::text::jinja::py {

bool is_space(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E: case 0x1F:
    case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8::valid_sequence_length(s, i);
    if (n == 0) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(utf8::decode_at(s, i, n));
    i += n;
  }
  return out;
}

std::string from_code_points(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) utf8::append_code_point(out, cp);
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::vector<char32_t> cps = code_points(s);
  const std::vector<char32_t> set = chars ? code_points(*chars) : std::vector<char32_t>{};
  auto strippable = [&](char32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  std::size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  return from_code_points(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(begin),
                                                cps.begin() + static_cast<std::ptrdiff_t>(end)));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (from_right) {
      std::size_t end = s.size();
      while (maxsplit != 0) {
        const std::size_t hit = end >= sep->size() ? s.rfind(*sep, end - sep->size()) : std::string_view::npos;
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
        --maxsplit;
      }
      parts.emplace_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
      return parts;
    }
    std::size_t start = 0;
    while (maxsplit != 0) {
      const std::size_t hit = s.find(*sep, start);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
      --maxsplit;
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  // Runs of whitespace separate; no empty strings. Once maxsplit parts are cut, the rest (without
  // its leading whitespace) is the last part. rsplit is the mirror image.
  std::vector<char32_t> cps = code_points(s);
  if (from_right) std::reverse(cps.begin(), cps.end());
  auto emit = [&](std::size_t i, std::size_t j) {
    std::vector<char32_t> word(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j));
    if (from_right) std::reverse(word.begin(), word.end());
    parts.push_back(from_code_points(word));
  };
  std::size_t i = 0;
  while (true) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (maxsplit == 0) {
      emit(i, cps.size());
      break;
    }
    std::size_t j = i;
    while (j < cps.size() && !is_space(cps[j])) ++j;
    emit(i, j);
    if (maxsplit > 0) --maxsplit;
    i = j;
  }
  if (from_right) std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keep_ends) {
  const std::vector<char32_t> cps = code_points(s);
  std::vector<std::string> lines;
  std::vector<char32_t> line;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                          c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!is_break) {
      line.push_back(c);
      continue;
    }
    if (keep_ends) line.push_back(c);
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') {
      if (keep_ends) line.push_back('\n');
      ++i;
    }
    lines.push_back(from_code_points(line));
    line.clear();
  }
  if (!line.empty()) lines.push_back(from_code_points(line));
  return lines;
}

std::string replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count,
                    std::size_t max_bytes) {
  std::string out;
  auto check = [&] {
    if (out.size() > max_bytes) fail("LimitError", fmt::format("result exceeds {} bytes", max_bytes), {});
  };
  if (old.empty()) {  // Python inserts the replacement between every character
    const std::vector<char32_t> cps = code_points(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
        check();
      }
      utf8::append_code_point(out, cp);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  std::size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const std::size_t hit = s.find(old, start);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(start, hit - start));
    out.append(replacement);
    check();
    start = hit + old.size();
    ++done;
  }
  out.append(s.substr(start));
  return out;
}

namespace {

std::string icu_map(std::string_view s, bool to_upper) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
  if (to_upper) {
    u.toUpper(icu::Locale::getRoot());
  } else {
    u.toLower(icu::Locale::getRoot());
  }
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool is_cased(char32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_CASED) != 0; }

}  // namespace

std::string lower(std::string_view s) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; })) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  return icu_map(s, false);
}

std::string upper(std::string_view s) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; })) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  return icu_map(s, true);
}

std::string title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : code_points(s)) {
    const char32_t mapped = previous_cased ? static_cast<char32_t>(u_tolower(static_cast<UChar32>(cp)))
                                           : static_cast<char32_t>(u_totitle(static_cast<UChar32>(cp)));
    utf8::append_code_point(out, mapped);
    previous_cased = is_cased(cp);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::vector<char32_t> cps = code_points(s);
  if (cps.empty()) return {};
  std::string out;
  utf8::append_code_point(out, static_cast<char32_t>(u_totitle(static_cast<UChar32>(cps[0]))));
  std::vector<char32_t> rest(cps.begin() + 1, cps.end());
  return out + lower(from_code_points(rest));
}

bool is_lower(std::string_view s) {
  bool any_cased = false;
  for (char32_t cp : code_points(s)) {
    if (u_isUUppercase(static_cast<UChar32>(cp)) || u_istitle(static_cast<UChar32>(cp))) return false;
    any_cased |= u_isULowercase(static_cast<UChar32>(cp)) != 0;
  }
  return any_cased;
}

bool is_upper(std::string_view s) {
  bool any_cased = false;
  for (char32_t cp : code_points(s)) {
    if (u_isULowercase(static_cast<UChar32>(cp)) || u_istitle(static_cast<UChar32>(cp))) return false;
    any_cased |= u_isUUppercase(static_cast<UChar32>(cp)) != 0;
  }
  return any_cased;
}

bool all_chars(std::string_view s, bool (*predicate)(char32_t)) {
  const std::vector<char32_t> cps = code_points(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), predicate);
}

bool is_digit_char(char32_t cp) {
  return u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE) == U_NT_DECIMAL ||
         u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE) == U_NT_DIGIT;
}
bool is_alpha_char(char32_t cp) { return u_isalpha(static_cast<UChar32>(cp)) != 0; }
bool is_alnum_char(char32_t cp) {
  return is_alpha_char(cp) || u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_NUMERIC_TYPE) != U_NT_NONE;
}

}  // namespace llaisys::text::jinja::py
