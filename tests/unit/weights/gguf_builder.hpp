#pragma once
// Builds GGUF file images field by field (little-endian), so each test can write exactly the
// corruption it wants (gguf::Writer only ever writes valid files), and gguf::Values of every type.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/model/gguf.hpp"

namespace llaisys::test {

class GgufBytes {
 public:
  template <class T>
  GgufBytes& put(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  GgufBytes& u32(uint32_t v) { return put(v); }
  GgufBytes& u64(uint64_t v) { return put(v); }
  GgufBytes& raw(std::string_view s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
    return *this;
  }
  // u64 length + bytes.
  GgufBytes& str(std::string_view s) { return u64(s.size()).raw(s); }

  // "GGUF", version, tensor count, metadata count.
  GgufBytes& header(uint64_t tensors, uint64_t entries, uint32_t version = 3) {
    return raw("GGUF").u32(version).u64(tensors).u64(entries);
  }
  // A metadata key and its value type (the value follows).
  GgufBytes& key(std::string_view name, uint32_t type) { return str(name).u32(type); }
  GgufBytes& kv_u32(std::string_view name, uint32_t v) { return key(name, 4).u32(v); }
  GgufBytes& kv_string(std::string_view name, std::string_view v) { return key(name, 8).str(v); }
  // A tensor info.
  GgufBytes& tensor(std::string_view name, std::initializer_list<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(std::size_t alignment) {
    bytes_.resize((bytes_.size() + alignment - 1) / alignment * alignment);
    return *this;
  }
  GgufBytes& zeros(std::size_t n) {
    bytes_.resize(bytes_.size() + n);
    return *this;
  }

  std::size_t size() const { return bytes_.size(); }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

namespace gguf_values {
using namespace llaisys::gguf;

inline Value unsigned_value(ValueType type, uint64_t v) {
  Value value;
  value.type = type;
  value.u = v;
  return value;
}
inline Value signed_value(ValueType type, int64_t v) {
  Value value;
  value.type = type;
  value.i = v;
  return value;
}
inline Value float_value(ValueType type, double v) {
  Value value;
  value.type = type;
  value.f = v;
  return value;
}
inline Value bool_value(bool v) {
  Value value;
  value.type = ValueType::boolean;
  value.b = v;
  return value;
}
inline Value string_value(std::string v) {
  Value value;
  value.type = ValueType::string;
  value.s = std::move(v);
  return value;
}
inline Value array_value(ValueType element_type, std::vector<Value> items) {
  auto array = std::make_shared<Array>();
  array->element_type = element_type;
  array->items = std::move(items);
  Value value;
  value.type = ValueType::array;
  value.array = std::move(array);
  return value;
}
// `depth` arrays, each holding the next, the innermost holding one u8.
inline Value nested_value(int depth) {
  Value value = array_value(ValueType::u8, {unsigned_value(ValueType::u8, 7)});
  for (int d = 1; d < depth; ++d) value = array_value(ValueType::array, {value});
  return value;
}

inline bool same(const Value& a, const Value& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case ValueType::u8:
    case ValueType::u16:
    case ValueType::u32:
    case ValueType::u64: return a.u == b.u;
    case ValueType::i8:
    case ValueType::i16:
    case ValueType::i32:
    case ValueType::i64: return a.i == b.i;
    case ValueType::f32:
    case ValueType::f64: return a.f == b.f || (std::isnan(a.f) && std::isnan(b.f));
    case ValueType::boolean: return a.b == b.b;
    case ValueType::string: return a.s == b.s;
    case ValueType::array:
      if (a.array->element_type != b.array->element_type || a.array->items.size() != b.array->items.size()) {
        return false;
      }
      for (std::size_t i = 0; i < a.array->items.size(); ++i) {
        if (!same(a.array->items[i], b.array->items[i])) return false;
      }
      return true;
  }
  return false;
}

inline std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<std::byte>((i * 31 + static_cast<std::size_t>(seed)) & 0xFF);
  }
  return bytes;
}

inline uint32_t type_id(TensorType type) { return static_cast<uint32_t>(type); }

// A small valid file: a few entries of several types, a Q8_0 tensor (34 bytes, padded to 64) and an
// F32 tensor of exactly 32 bytes, so the file ends where the last tensor does.
inline std::vector<std::byte> small_file() {
  Writer writer;
  writer.add_string("general.architecture", "llama");
  writer.add_u32("llama.block_count", 2);
  writer.add_strings("tokenizer.ggml.tokens", {"a", "", "\xC3\xA9"});
  writer.add("nested", array_value(ValueType::array, {array_value(ValueType::i16, {signed_value(ValueType::i16, -3)}),
                                                     array_value(ValueType::string, {})}));
  writer.add_bool("flag", true);
  if (!writer.add_tensor("q", {32}, type_id(TensorType::Q8_0), pattern(34, 1)).ok() ||
      !writer.add_tensor("f", {8}, type_id(TensorType::F32), pattern(32, 2)).ok()) {
    throw std::logic_error("small_file: add_tensor failed");
  }
  return writer.bytes();
}

}  // namespace gguf_values
}  // namespace llaisys::test
