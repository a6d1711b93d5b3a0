// Writer: a GGUF version 3 image built from the metadata and tensors added, in order. It checks
// everything File::parse checks as things are added, so what it builds always parses back.

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <system_error>

#include <fmt/ranges.h>

#include "gguf_format.hpp"

namespace llaisys::gguf {
namespace {
static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a little-endian host");

constexpr std::string_view kAlignmentKey = "general.alignment";

// Grow then copy (not vector::insert of a byte range: GCC 12 at -O3 warns a false
// -Wstringop-overflow on that when the vector starts empty).
void append_bytes(std::vector<std::byte>& out, const void* data, std::size_t size) {
  if (size == 0) return;
  const std::size_t at = out.size();
  out.resize(at + size);
  std::memcpy(out.data() + at, data, size);
}

template <class T>
void append(std::vector<std::byte>& out, T value) {
  append_bytes(out, &value, sizeof(T));
}

void append_string(std::vector<std::byte>& out, std::string_view s) {
  append<uint64_t>(out, s.size());
  append_bytes(out, s.data(), s.size());
}

// The value's payload (its type id is written by the caller: before a key's value, or once for all
// elements of an array).
void append_value(std::vector<std::byte>& out, const Value& value) {
  switch (value.type) {
    case ValueType::u8: return append(out, static_cast<uint8_t>(value.u));
    case ValueType::u16: return append(out, static_cast<uint16_t>(value.u));
    case ValueType::u32: return append(out, static_cast<uint32_t>(value.u));
    case ValueType::u64: return append(out, value.u);
    case ValueType::i8: return append(out, static_cast<int8_t>(value.i));
    case ValueType::i16: return append(out, static_cast<int16_t>(value.i));
    case ValueType::i32: return append(out, static_cast<int32_t>(value.i));
    case ValueType::i64: return append(out, value.i);
    case ValueType::f32: return append(out, static_cast<float>(value.f));
    case ValueType::f64: return append(out, value.f);
    case ValueType::boolean: return append(out, static_cast<uint8_t>(value.b ? 1 : 0));
    case ValueType::string: return append_string(out, value.s);
    case ValueType::array:
      append(out, static_cast<uint32_t>(value.array->element_type));
      append<uint64_t>(out, value.array->items.size());
      for (const Value& item : value.array->items) append_value(out, item);
      return;
  }
}

[[noreturn]] void misuse(std::string message) { throw std::invalid_argument("gguf::Writer: " + message); }

void check_text(std::string_view key, std::string_view text, uint64_t max_bytes, std::string_view what) {
  if (text.size() > max_bytes) misuse(fmt::format("'{}': {} of {} bytes is too long", key, what, text.size()));
  if (!detail::is_valid_utf8(text)) misuse(fmt::format("'{}': {} is not valid UTF-8", key, what));
}

// An integer stored in `u` or `i` must fit its type's width, or it would not read back the same.
bool fits(const Value& value) {
  switch (value.type) {
    case ValueType::u8: return value.u <= std::numeric_limits<uint8_t>::max();
    case ValueType::u16: return value.u <= std::numeric_limits<uint16_t>::max();
    case ValueType::u32: return value.u <= std::numeric_limits<uint32_t>::max();
    case ValueType::i8: return value.i >= INT8_MIN && value.i <= INT8_MAX;
    case ValueType::i16: return value.i >= INT16_MIN && value.i <= INT16_MAX;
    case ValueType::i32: return value.i >= INT32_MIN && value.i <= INT32_MAX;
    default: return true;
  }
}

// `depth`: how many arrays enclose `value`.
void check_value(std::string_view key, const Value& value, int depth) {
  if (!detail::is_value_type(static_cast<uint32_t>(value.type))) {
    misuse(fmt::format("'{}': unknown value type {}", key, static_cast<uint32_t>(value.type)));
  }
  if (!fits(value)) misuse(fmt::format("'{}': value out of range of {}", key, to_string(value.type)));
  if (value.type == ValueType::string) check_text(key, value.s, kMaxStringBytes, "string value");
  if (value.type != ValueType::array) return;
  if (value.array == nullptr) misuse(fmt::format("'{}': array value without an array", key));
  if (depth + 1 > kMaxArrayDepth) misuse(fmt::format("'{}': arrays nested more than {} deep", key, kMaxArrayDepth));
  if (!detail::is_value_type(static_cast<uint32_t>(value.array->element_type))) {
    misuse(fmt::format("'{}': unknown array element type {}", key, static_cast<uint32_t>(value.array->element_type)));
  }
  for (const Value& item : value.array->items) {
    if (item.type != value.array->element_type) {
      misuse(fmt::format("'{}': {} item in an array of {}", key, to_string(item.type),
                         to_string(value.array->element_type)));
    }
    check_value(key, item, depth + 1);
  }
}

template <class T>
Value array_of(ValueType element_type, std::vector<T> values, void (*set)(Value&, T&&)) {
  auto array = std::make_shared<Array>();
  array->element_type = element_type;
  array->items.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    array->items[i].type = element_type;
    set(array->items[i], std::move(values[i]));
  }
  Value value;
  value.type = ValueType::array;
  value.array = std::move(array);
  return value;
}

uint64_t padding_after(uint64_t size, uint64_t alignment) { return (alignment - size % alignment) % alignment; }

}  // namespace

Writer::Writer(uint32_t alignment) : alignment_(alignment) {
  if (!std::has_single_bit(alignment)) misuse(fmt::format("alignment {} is not a power of two", alignment));
}

void Writer::add(std::string key, Value value) {
  check_text(key, key, kMaxNameBytes, "key");
  const bool taken = std::any_of(metadata_.begin(), metadata_.end(), [&](const KeyValue& kv) { return kv.key == key; });
  if (taken) misuse(fmt::format("key '{}' added twice", key));
  check_value(key, value, 0);
  if (key == kAlignmentKey) {
    if (value.type != ValueType::u32 || !std::has_single_bit(value.u)) {
      misuse("general.alignment must be a u32 power of two");
    }
    alignment_ = static_cast<uint32_t>(value.u);
  }
  metadata_.push_back(KeyValue{.key = std::move(key), .value = std::move(value)});
}

void Writer::add_string(std::string key, std::string value) {
  Value v;
  v.type = ValueType::string;
  v.s = std::move(value);
  add(std::move(key), std::move(v));
}

void Writer::add_u32(std::string key, uint32_t value) {
  Value v;
  v.type = ValueType::u32;
  v.u = value;
  add(std::move(key), std::move(v));
}

void Writer::add_i32(std::string key, int32_t value) {
  Value v;
  v.type = ValueType::i32;
  v.i = value;
  add(std::move(key), std::move(v));
}

void Writer::add_u64(std::string key, uint64_t value) {
  Value v;
  v.type = ValueType::u64;
  v.u = value;
  add(std::move(key), std::move(v));
}

void Writer::add_f32(std::string key, float value) {
  Value v;
  v.type = ValueType::f32;
  v.f = static_cast<double>(value);
  add(std::move(key), std::move(v));
}

void Writer::add_bool(std::string key, bool value) {
  Value v;
  v.type = ValueType::boolean;
  v.b = value;
  add(std::move(key), std::move(v));
}

void Writer::add_strings(std::string key, std::vector<std::string> values) {
  add(std::move(key), array_of<std::string>(ValueType::string, std::move(values),
                                            [](Value& v, std::string&& s) { v.s = std::move(s); }));
}

void Writer::add_i32s(std::string key, std::vector<int32_t> values) {
  add(std::move(key), array_of<int32_t>(ValueType::i32, std::move(values), [](Value& v, int32_t&& x) { v.i = x; }));
}

void Writer::add_f32s(std::string key, std::vector<float> values) {
  add(std::move(key), array_of<float>(ValueType::f32, std::move(values),
                                      [](Value& v, float&& x) { v.f = static_cast<double>(x); }));
}

Status Writer::add_tensor(std::string name, std::vector<int64_t> dims, uint32_t type,
                          std::span<const std::byte> bytes) {
  if (name.size() > kMaxNameBytes || !detail::is_valid_utf8(name)) {
    return make_error(ErrorCode::invalid_argument, "gguf tensor name of {} bytes is too long or not valid UTF-8",
                      name.size());
  }
  const bool taken =
      std::any_of(tensors_.begin(), tensors_.end(), [&](const Pending& t) { return t.info.name == name; });
  if (taken) return make_error(ErrorCode::invalid_argument, "gguf tensor '{}' added twice", name);
  std::vector<uint64_t> shape;
  for (int64_t d : dims) shape.push_back(d < 0 ? 0 : static_cast<uint64_t>(d));  // 0: refused as a dim
  uint64_t size = 0;
  const detail::ShapeCheck check = detail::check_shape(shape, type, size);
  if (check != detail::ShapeCheck::ok) {
    return make_error(check == detail::ShapeCheck::unknown_type ? ErrorCode::unsupported : ErrorCode::invalid_argument,
                      "gguf tensor '{}': dims [{}] of type {} do not make a tensor (dims 1 to {}, each at least 1, "
                      "rows whole blocks, sizes under 2^63)",
                      name, fmt::join(dims, ", "), type, kMaxDims);
  }
  if (bytes.size() != size) {
    return make_error(ErrorCode::invalid_argument, "gguf tensor '{}': {} bytes given, dims [{}] of {} need {}", name,
                      bytes.size(), fmt::join(dims, ", "), *tensor_type_name(type), size);
  }
  Pending pending;
  pending.info = TensorInfo{.name = std::move(name), .dims = std::move(dims), .type = type, .offset = 0, .bytes = size};
  pending.data.assign(bytes.begin(), bytes.end());
  tensors_.push_back(std::move(pending));
  return Status();
}

std::vector<std::byte> Writer::head() const {
  const bool alignment_key = std::any_of(metadata_.begin(), metadata_.end(),
                                         [](const KeyValue& kv) { return kv.key == kAlignmentKey; });
  const bool write_alignment = alignment_ != kDefaultAlignment && !alignment_key;
  std::vector<std::byte> out;
  append(out, detail::kMagic);
  append(out, detail::kWrittenVersion);
  append<uint64_t>(out, tensors_.size());
  append<uint64_t>(out, metadata_.size() + (write_alignment ? 1 : 0));
  if (write_alignment) {
    append_string(out, kAlignmentKey);
    append(out, static_cast<uint32_t>(ValueType::u32));
    append(out, alignment_);
  }
  for (const KeyValue& kv : metadata_) {
    append_string(out, kv.key);
    append(out, static_cast<uint32_t>(kv.value.type));
    append_value(out, kv.value);
  }
  // Tensors lie in the order added, each padded to the alignment.
  uint64_t offset = 0;
  for (const Pending& tensor : tensors_) {
    append_string(out, tensor.info.name);
    append(out, static_cast<uint32_t>(tensor.info.dims.size()));
    for (int64_t d : tensor.info.dims) append(out, static_cast<uint64_t>(d));
    append(out, tensor.info.type);
    append(out, offset);
    offset += tensor.info.bytes + padding_after(tensor.info.bytes, alignment_);
  }
  if (!tensors_.empty()) out.resize(out.size() + padding_after(out.size(), alignment_));
  return out;
}

std::vector<std::byte> Writer::bytes() const {
  std::vector<std::byte> out = head();
  for (const Pending& tensor : tensors_) {
    append_bytes(out, tensor.data.data(), tensor.data.size());
    out.resize(out.size() + padding_after(tensor.data.size(), alignment_));
  }
  return out;
}

Status Writer::write(const std::filesystem::path& path) const {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return make_error(ErrorCode::io_error, "cannot create {}: {}", path.string(), std::strerror(errno));
  }
  const std::vector<std::byte> zeros(alignment_);
  int error = 0;  // the first errno
  const auto put = [&](const std::byte* data, std::size_t size) {
    if (error == 0 && size != 0 && std::fwrite(data, 1, size, file) != size) error = errno != 0 ? errno : EIO;
  };
  const std::vector<std::byte> start = head();
  put(start.data(), start.size());
  for (const Pending& tensor : tensors_) {
    put(tensor.data.data(), tensor.data.size());
    put(zeros.data(), static_cast<std::size_t>(padding_after(tensor.data.size(), alignment_)));
  }
  if (std::fclose(file) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  if (error != 0) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return make_error(ErrorCode::io_error, "cannot write {}: {}", path.string(), std::strerror(error));
  }
  return Status();
}

}  // namespace llaisys::gguf
