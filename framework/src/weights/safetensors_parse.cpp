// parse_safetensors: the header of a safetensors file, validated against the file it came from.

#include <algorithm>
#include <cstring>

#include <boost/json.hpp>

#include "llaisys/model/safetensors.hpp"
#include "strict_json.hpp"

namespace llaisys {
namespace json = boost::json;
namespace {

Status malformed(std::string_view source, std::string_view name, std::string_view what) {
  return make_error(ErrorCode::parse_error, "{}: malformed entry for tensor '{}': {}", source, name, what);
}

// A JSON non-negative integer, or nothing.
bool read_u64(const json::value& v, uint64_t& out) {
  if (v.is_uint64()) {
    out = v.as_uint64();
    return true;
  }
  if (v.is_int64() && v.as_int64() >= 0) {
    out = static_cast<uint64_t>(v.as_int64());
    return true;
  }
  return false;
}

// Safetensors dtype names llaisys can hold; everything else is refused by name.
std::optional<DType> safetensors_dtype(std::string_view name) {
  if (name == "BF16") return DType::bf16;
  if (name == "F16") return DType::f16;
  if (name == "F32") return DType::f32;
  if (name == "I32") return DType::i32;
  if (name == "I64") return DType::i64;
  if (name == "U8") return DType::u8;
  return std::nullopt;
}

Result<SafetensorsTensor> parse_entry(std::string_view source, std::string_view name,
                                      const json::value& entry, uint64_t data_size) {
  const json::object* object = entry.if_object();
  if (object == nullptr) return malformed(source, name, "expected an object");
  const json::value* dtype_value = object->if_contains("dtype");
  const json::value* shape_value = object->if_contains("shape");
  const json::value* offsets_value = object->if_contains("data_offsets");
  if (dtype_value == nullptr || !dtype_value->is_string()) {
    return malformed(source, name, "\"dtype\" must be a string");
  }
  if (shape_value == nullptr || !shape_value->is_array()) {
    return malformed(source, name, "\"shape\" must be an array of non-negative integers");
  }
  if (offsets_value == nullptr || !offsets_value->is_array() || offsets_value->as_array().size() != 2) {
    return malformed(source, name, "\"data_offsets\" must be [begin, end]");
  }
  SafetensorsTensor tensor;
  tensor.name = std::string(name);
  const std::string_view dtype_name(dtype_value->as_string().data(), dtype_value->as_string().size());
  const std::optional<DType> dtype = safetensors_dtype(dtype_name);
  if (!dtype) {
    return make_error(ErrorCode::unsupported,
                      "{}: tensor '{}': unknown dtype '{}' (llaisys reads BF16, F16, F32, I32, I64, U8)",
                      source, name, dtype_name);
  }
  tensor.dtype = *dtype;

  const json::array& dims = shape_value->as_array();
  if (dims.size() > static_cast<std::size_t>(kMaxTensorRank)) {
    return make_error(ErrorCode::unsupported, "{}: tensor '{}': rank {} is over the supported {}", source,
                      name, dims.size(), kMaxTensorRank);
  }
  // Element count and byte size, refusing any multiplication that wraps.
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (const json::value& d : dims) {
    uint64_t dim = 0;
    if (!read_u64(d, dim)) return malformed(source, name, "\"shape\" must be an array of non-negative integers");
    if (dim > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel)) {
      return make_error(ErrorCode::parse_error, "{}: tensor '{}': element count of shape {} overflows", source,
                        name, json::serialize(*shape_value));
    }
    shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(tensor.dtype)), &nbytes)) {
    return make_error(ErrorCode::parse_error, "{}: tensor '{}': byte size of shape {} overflows", source, name,
                      json::serialize(*shape_value));
  }
  tensor.shape = Shape(std::span<const int64_t>(shape));

  const json::array& offsets = offsets_value->as_array();
  if (!read_u64(offsets[0], tensor.data_begin) || !read_u64(offsets[1], tensor.data_end)) {
    return malformed(source, name, "\"data_offsets\" must be two non-negative integers");
  }
  if (tensor.data_end < tensor.data_begin || tensor.data_end > data_size) {
    return make_error(ErrorCode::parse_error,
                      "{}: tensor '{}': data_offsets [{}, {}) out of range of the {}-byte data section",
                      source, name, tensor.data_begin, tensor.data_end, data_size);
  }
  if (tensor.data_end - tensor.data_begin != nbytes) {
    return make_error(ErrorCode::parse_error,
                      "{}: tensor '{}': shape {} of {} needs {} bytes, which does not match its byte range "
                      "[{}, {}) of {} bytes",
                      source, name, tensor.shape.to_string(), dtype_name, nbytes, tensor.data_begin,
                      tensor.data_end, tensor.data_end - tensor.data_begin);
  }
  return tensor;
}

// Tensors must tile the data section exactly: no overlap, no gap, nothing after the last one.
Status check_layout(std::string_view source, std::vector<SafetensorsTensor>& tensors, uint64_t data_size) {
  std::sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.data_begin != b.data_begin ? a.data_begin < b.data_begin : a.data_end < b.data_end;
  });
  uint64_t covered = 0;  // end of the bytes claimed so far
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor& tensor : tensors) {
    if (tensor.data_begin < covered) {
      return make_error(ErrorCode::parse_error, "{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", source,
                        previous->name, previous->data_begin, previous->data_end, tensor.name,
                        tensor.data_begin, tensor.data_end);
    }
    if (tensor.data_begin > covered) {
      return make_error(ErrorCode::parse_error, "{}: gap of {} unused bytes before tensor '{}' at offset {}",
                        source, tensor.data_begin - covered, tensor.name, tensor.data_begin);
    }
    covered = tensor.data_end;
    previous = &tensor;
  }
  if (covered != data_size) {
    return make_error(ErrorCode::parse_error, "{}: {} trailing bytes after the last tensor (data section of {})",
                      source, data_size - covered, data_size);
  }
  return Status();
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file, std::string_view source) {
  if (file.size() < 8) {
    return make_error(ErrorCode::parse_error, "{}: file of {} bytes is too short for a safetensors header",
                      source, file.size());
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(file[static_cast<std::size_t>(i)]);
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return make_error(ErrorCode::parse_error, "{}: header length {} exceeds the cap of {} bytes", source,
                      header_len, kMaxSafetensorsHeaderBytes);
  }
  if (header_len > file.size() - 8) {
    return make_error(ErrorCode::parse_error,
                      "{}: header length {} reaches beyond the end of the file ({} bytes)", source,
                      header_len, file.size());
  }
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<std::size_t>(header_len));
  weights::StrictJsonError json_error;
  const json::value root = weights::parse_strict_json(text, json_error);
  if (json_error.kind == weights::StrictJsonError::Kind::syntax) {
    return make_error(ErrorCode::parse_error, "{}: invalid JSON header: {}", source, json_error.message);
  }
  if (json_error.kind == weights::StrictJsonError::Kind::duplicate_key) {
    if (json_error.duplicate.depth == 1) {
      return make_error(ErrorCode::parse_error, "{}: duplicate tensor name '{}'", source,
                        json_error.duplicate.key);
    }
    return make_error(ErrorCode::parse_error, "{}: duplicate key '{}' inside a header entry", source,
                      json_error.duplicate.key);
  }
  const json::object* object = root.if_object();
  if (object == nullptr) {
    return make_error(ErrorCode::parse_error, "{}: invalid JSON header: expected an object", source);
  }

  SafetensorsHeader header;
  header.data_offset = 8 + header_len;
  const uint64_t data_size = file.size() - header.data_offset;
  for (const json::key_value_pair& item : *object) {
    const std::string_view name(item.key().data(), item.key().size());
    if (name == "__metadata__") {
      const json::object* metadata = item.value().if_object();
      if (metadata == nullptr) {
        return make_error(ErrorCode::parse_error, "{}: malformed entry for tensor '__metadata__': expected an object of strings", source);
      }
      for (const json::key_value_pair& m : *metadata) {
        if (!m.value().is_string()) {
          return make_error(ErrorCode::parse_error, "{}: malformed entry for tensor '__metadata__': '{}' is not a string",
                            source, std::string_view(m.key().data(), m.key().size()));
        }
        header.metadata.emplace_back(std::string(m.key()), std::string(m.value().as_string()));
      }
      continue;
    }
    LLAISYS_ASSIGN_OR_RETURN(SafetensorsTensor tensor, parse_entry(source, name, item.value(), data_size));
    header.tensors.push_back(std::move(tensor));
  }
  LLAISYS_RETURN_IF_ERROR(check_layout(source, header.tensors, data_size));
  return header;
}

}  // namespace llaisys
