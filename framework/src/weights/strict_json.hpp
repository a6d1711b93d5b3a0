#pragma once
// JSON parsing that refuses what Boost.JSON silently accepts: a key twice in one object (Boost keeps
// the last one; a model file with two entries for one tensor is ambiguous, so we reject it).

#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::weights {

struct DuplicateKey {
  std::string key;
  int depth = 0;  // 1: a key of the top-level object
};

struct StrictJsonError {
  enum class Kind { none, syntax, duplicate_key } kind = Kind::none;
  std::string message;     // the parser's message for syntax errors
  DuplicateKey duplicate;  // for duplicate_key
};

// Parses `text` as one JSON document. On failure returns a null value and fills `error`.
boost::json::value parse_strict_json(std::string_view text, StrictJsonError& error);

// parse_strict_json with its errors as a Status naming `source`: parse_error with "invalid JSON" or
// "duplicate key".
Result<boost::json::value> parse_json_text(std::string_view text, std::string_view source);

// Reads and parses a regular JSON file of at most `max_bytes`; errors name the file (not_found, also
// for something that is not a regular file: a FIFO would block the read; io_error; parse_error with
// "byte limit", "invalid JSON" or "duplicate key").
Result<boost::json::value> read_json_file(const std::string& path, std::size_t max_bytes);

}  // namespace llaisys::weights
