#pragma once
// Python str methods over UTF-8 (code points, Unicode whitespace and case mapping via ICU).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llaisys::text::jinja::py {

bool is_space(char32_t cp);
std::vector<char32_t> code_points(std::string_view s);
std::string from_code_points(const std::vector<char32_t>& cps);

// strip/lstrip/rstrip: `chars` nullopt strips whitespace, otherwise any of those characters.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// split(sep=None, maxsplit=-1) and rsplit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right = false);
std::vector<std::string> splitlines(std::string_view s, bool keep_ends = false);
// Throws a LimitError (jinja::Error) once the result would exceed max_bytes.
std::string replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count = -1,
                    std::size_t max_bytes = SIZE_MAX);
std::string lower(std::string_view s);
std::string upper(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
bool is_lower(std::string_view s);
bool is_upper(std::string_view s);
// str.isdigit / isalpha / isalnum / isspace
bool all_chars(std::string_view s, bool (*predicate)(char32_t));
bool is_digit_char(char32_t cp);
bool is_alpha_char(char32_t cp);
bool is_alnum_char(char32_t cp);
std::size_t length(std::string_view s);  // code points

}  // namespace llaisys::text::jinja::py
