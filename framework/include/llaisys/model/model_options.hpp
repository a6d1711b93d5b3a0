#pragma once
// A plugin's create options (ModelCreateParams::options_json, a JSON object), parsed once against the
// plugin's own table of keys. An unknown key is invalid_argument naming it and listing the valid
// ones (a typo must not silently fall back to a default); a value a key's reader refuses is an error
// naming the key.
//
//   std::string isa = "auto";
//   const OptionReader readers[] = {
//       {"isa", [&](const boost::json::value& v) { return read_option_choice(v, "isa", {"auto", "avx2"}, isa); }},
//   };
//   LLAISYS_RETURN_IF_ERROR(read_model_options(params.options_json, readers));

#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys {

struct OptionReader {
  std::string_view key;
  std::function<Status(const boost::json::value&)> read;
};

// An empty text is "{}". Each key present is given to its reader, in the order of the text.
Status read_model_options(std::string_view options_json, std::span<const OptionReader> readers);

// A string among `choices` into `out`; otherwise invalid_argument "option <key>: expected a, b or c, got <value>".
Status read_option_choice(const boost::json::value& value, std::string_view key,
                          std::initializer_list<std::string_view> choices, std::string& out);

}  // namespace llaisys
