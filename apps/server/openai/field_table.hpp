#pragma once
// What llaisys does with every request field of /v1/chat/completions, /v1/completions and
// /v1/embeddings: OpenAI's fields (tests/data/openai/openapi.yaml) and the vLLM extensions it reads.
// This one list refuses unknown and refused fields before a body is parsed, and docs/SERVER.md's
// "Request fields" table repeats it (tests/unit/server/test_fields.cpp compares the two).
//
//   honoured  read and acted on by request_parse; a value it cannot act on is a 400 naming the field
//   ignored   accepted without effect on the output (nothing is stored, there is one service tier,
//             ...); its type is still checked, so a malformed value is a 400 too
//   refused   a 400 naming the field, unless the value is null or the one value that asks for
//             nothing (`accepted`, e.g. "modalities": ["text"])
//
// A field the endpoint has no row for is a 400 naming it. An object field whose members have rows
// ("stream_options.include_usage") has its members checked the same way.

#include <cstdint>
#include <span>
#include <string_view>

#include <boost/json.hpp>

#include "llaisys/core/status.hpp"

namespace llaisys::server {

enum class FieldUse : uint8_t { honoured, ignored, refused };
std::string_view to_string(FieldUse use);  // "honoured", "ignored", "refused"

enum class Endpoint : uint8_t { chat = 1, completions = 2, embeddings = 4 };
std::string_view endpoint_path(Endpoint endpoint);  // "/v1/chat/completions", ...

// The type an ignored field's value must have (null is always accepted).
enum class ValueType : uint8_t { any, boolean, string, object, metadata };

struct RequestField {
  std::string_view name;      // a top-level key, or "parent.member"
  uint8_t endpoints = 0;      // Endpoint bits
  FieldUse use = FieldUse::honoured;
  ValueType type = ValueType::any;  // ignored fields
  std::string_view accepted;  // refused fields: JSON text of the value that asks for nothing ("": none)
  std::string_view why;       // refused fields: the reason, in the 400's message
  bool applies_to(Endpoint endpoint) const { return (endpoints & static_cast<uint8_t>(endpoint)) != 0; }
};

// Every row, in the order docs/SERVER.md lists them.
std::span<const RequestField> request_fields();

// The row of `name` ("stream_options.include_usage" for a member) on `endpoint`; null: unknown.
const RequestField* find_request_field(Endpoint endpoint, std::string_view name);

// 400 (invalid_argument, the message naming the field first) for the first unknown field, refused
// value or malformed ignored value of `body`, members of checked object fields included.
Status check_request_fields(const boost::json::object& body, Endpoint endpoint);

// OpenAI's metadata: at most 16 string values, keys up to 64 characters, values up to 512.
Status check_metadata(const boost::json::value& metadata, std::string_view field);

}  // namespace llaisys::server
