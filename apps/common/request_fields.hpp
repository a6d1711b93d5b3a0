#pragma once
// Typed reads of JSON request fields with OpenAI-style error messages ("'top_k' must be an
// integer"), shared by the offline app's JSONL requests and the server's OpenAI requests.
// A missing or null field reads as std::nullopt.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"
#include "llaisys/model/types.hpp"

namespace llaisys::app {

Status bad_field(std::string_view key, std::string_view expected);
Result<std::optional<double>> number_field(const boost::json::object& object, std::string_view key);
Result<std::optional<int64_t>> int_field(const boost::json::object& object, std::string_view key);
Result<std::optional<bool>> bool_field(const boost::json::object& object, std::string_view key);
Result<std::optional<std::string>> string_field(const boost::json::object& object, std::string_view key);
// A non-empty array of ids in [0, vocab_size).
Result<std::vector<TokenId>> token_ids_field(const boost::json::value& value, std::string_view key,
                                             int32_t vocab_size);
// "stop": a string or a list of strings (absent: empty).
Result<std::vector<std::string>> stop_strings_field(const boost::json::object& object, std::string_view key);

}  // namespace llaisys::app
