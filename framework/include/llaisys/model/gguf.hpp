#pragma once
// GGUF files (llama.cpp's model format, versions 2 and 3): strict parsing and writing.
//
// Layout (little-endian): magic "GGUF", u32 version, u64 tensor count, u64 metadata count; then the
// metadata key/values (key: u64 length + bytes; u32 value type; the value: scalars in their width,
// booleans as one byte 0 or 1, strings as u64 length + bytes, arrays as u32 element type + u64
// count + elements, arrays of arrays allowed); then the tensor infos (name string, u32 number of
// dims, that many u64 dims with dims[0] the innermost/fastest = a row's length, u32 ggml type, u64
// offset inside the data section); then padding to `general.alignment` (u32 metadata key, default
// 32, a power of two); then the data section, each tensor at its offset (a multiple of the
// alignment). Version 2 has the same layout as version 3 (which only added big-endian files; those
// are refused by their byte-swapped version). Tensors may lie in the data section in any order and
// with gaps; the padding after the last tensor may be missing, and so may the padding before an
// empty data section (gguf-py writes vocab-only files that end right after the metadata).
//
// Contract: no input crashes anything or makes it read outside the file; allocation is bounded by
// the file size (a count can never make us reserve more than the bytes that could hold it). Every
// way a file can be wrong is refused with parse_error (unsupported for a version or a ggml type id
// that is not known) and a message that names the file and contains these words:
//
// | what is wrong                                              | message contains            |
// | ---------------------------------------------------------- | --------------------------- |
// | shorter than the 24-byte header, or not starting "GGUF"    | `not a GGUF file`           |
// | version other than 2 or 3                                  | `version`                   |
// | a count, length or section running past the end of file    | `truncated`                 |
// | a string that is not valid UTF-8 (keys, names, values)     | `UTF-8`                     |
// | a metadata value type id not in the spec                   | `value type`                |
// | a boolean byte other than 0 or 1                           | `boolean`                   |
// | a key, name or string longer than its limit (below)        | `too long`                  |
// | arrays nested deeper than the limit (below)                | `nested`                    |
// | a key given twice                                          | `duplicate key`             |
// | general.alignment not a power of two (or not u32)          | `alignment`                 |
// | a tensor with 0 or over 4 dims, or a dim of 0 or >= 2^63   | `dims`                      |
// | dims whose product (or byte size) overflows 2^63           | `overflows`                 |
// | a ggml type id that is not known                           | `unknown tensor type`       |
// | a row length that is not a whole number of blocks          | `block`                     |
// | a tensor offset not a multiple of the alignment            | `misaligned`                |
// | a tensor's bytes past the end of the file                  | `out of range`              |
// | two tensors sharing bytes                                  | `overlap`                   |
// | a tensor name twice                                        | `duplicate tensor name`     |
//
// Limits, beyond which a file is refused as hostile: keys and names at most 64 KiB, strings at most
// 64 MiB, array nesting at most 8 deep (an array value is depth 1, its arrays depth 2), and no more
// tensors, metadata entries or array elements than the bytes left could encode. Parsed values take
// about 100 bytes of memory per array element, so memory is bounded by ~100x the file size.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llaisys/core/dtype.hpp"
#include "llaisys/core/status.hpp"

namespace llaisys::gguf {

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint64_t kMaxNameBytes = uint64_t{64} << 10;     // a key or a tensor name
inline constexpr uint64_t kMaxStringBytes = uint64_t{64} << 20;   // a string value
inline constexpr int kMaxArrayDepth = 8;
inline constexpr int kMaxDims = 4;

// Metadata value types, numbered as in the GGUF specification.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
// "u8", "i8", ..., "bool", "string", "array", ..., "f64"; "unknown" for an id not in the enum.
// Header-only, like the Value accessors below, so that libraries that only read metadata (the text
// library's GGUF tokenizer) need not link the parser.
constexpr std::string_view to_string(ValueType type) noexcept {
  switch (type) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "unknown";
}
constexpr bool is_signed_integer(ValueType t) noexcept {
  return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}
constexpr bool is_unsigned_integer(ValueType t) noexcept {
  return t == ValueType::u8 || t == ValueType::u16 || t == ValueType::u32 || t == ValueType::u64;
}

struct Value;
struct Array {
  ValueType element_type = ValueType::u8;
  std::vector<Value> items;
};

// One metadata value: exactly one of the members is meaningful, chosen by `type` (integers of every
// width are widened: unsigned ones into `u`, signed ones into `i`; f32 and f64 into `f`).
struct Value {
  ValueType type = ValueType::u8;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::shared_ptr<const Array> array;  // type == array

  // The value of an integer type (any width, signed or not) when it is representable in the result
  // type (as_int: up to 2^63-1; as_uint: not negative); nullopt otherwise and for every other type
  // (bool, floats, string, array).
  std::optional<int64_t> as_int() const {
    if (is_signed_integer(type)) return i;
    if (is_unsigned_integer(type) && u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  std::optional<uint64_t> as_uint() const {
    if (is_unsigned_integer(type)) return u;
    if (is_signed_integer(type) && i >= 0) return static_cast<uint64_t>(i);
    return std::nullopt;
  }
  // f32, f64, or an integer type (converted to the nearest double); nullopt for the others.
  std::optional<double> as_number() const {
    if (type == ValueType::f32 || type == ValueType::f64) return f;
    if (is_signed_integer(type)) return static_cast<double>(i);
    if (is_unsigned_integer(type)) return static_cast<double>(u);
    return std::nullopt;
  }
};

struct KeyValue {
  std::string key;
  Value value;
};

// ggml tensor type ids (the ones llama.cpp's GGUF files use, so a reader can size any tensor and
// name the ones llaisys cannot compute with). Removed ids (4, 5: Q4_2, Q4_3; 31-33: Q4_0_4_4,
// Q4_0_4_8, Q4_0_8_8; 36-38: IQ4_NL_4_4 ...) and ids newer than MXFP4 are unknown.
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19,
  IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28,
  IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
// "Q8_0", "BF16", ... (llama.cpp's names); nullopt for an id that is not known.
std::optional<std::string_view> tensor_type_name(uint32_t id) noexcept;
// Elements and bytes per block of a known type id (1 and the element size for F32, F16, BF16, I*).
struct BlockSize {
  int64_t elements = 0;
  int64_t bytes = 0;
};
std::optional<BlockSize> tensor_type_block(uint32_t id) noexcept;
// The llaisys DType a type id is computed with (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K), or nullopt for the others (refused by name where a model needs them).
std::optional<DType> dtype_of(uint32_t id) noexcept;
std::optional<TensorType> tensor_type_of(DType dtype) noexcept;

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the innermost (a row's length)
  uint32_t type = 0;          // a known TensorType id
  uint64_t offset = 0;        // inside the data section, a multiple of the alignment
  uint64_t bytes = 0;         // dims' product / block elements x block bytes
};

class File {
 public:
  // Validates a whole file image (every rule of the table above) and indexes it. `source` names the
  // file in messages. Reads nothing outside `file`; `file` must outlive the returned value's data().
  static Result<File> parse(std::span<const std::byte> file, std::string_view source);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // Where the data section starts in the file (the file's size for a file without tensors that
  // ends before the padding).
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order

  // The value of `key`, or null (a binary search).
  const Value* find(std::string_view key) const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // The bytes of a tensor of this file inside the image passed to parse() (empty for a TensorInfo
  // that does not lie inside it).
  std::span<const std::byte> data(const TensorInfo& tensor) const;

 private:
  std::span<const std::byte> file_;
  uint32_t version_ = 3;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::size_t> metadata_by_key_;  // indices into metadata_, sorted by key
  std::vector<std::size_t> tensors_by_name_;  // indices into tensors_, sorted by name
};

// Builds a GGUF (version 3) file: metadata in the order added, then the tensor infos in the order
// added, padding, and each tensor's data at the next aligned offset (padded after the last one too,
// as llama.cpp writes it). Whatever it builds parses back with File::parse. Used by llaisys-mkmodel,
// llaisys-quantize and the tests (broken files are built byte by byte in the tests).
//
// Misuse is a programming error and throws std::invalid_argument: an alignment that is not a power
// of two, a key added twice, a key or string that is not valid UTF-8 or longer than its limit, an
// array nested deeper than kMaxArrayDepth or holding items of another type than its element type,
// an integer out of range of its type's width.
// A non-default alignment is written as `general.alignment` before the other keys; adding
// `general.alignment` (a u32 power of two) yourself sets the alignment instead.
class Writer {
 public:
  explicit Writer(uint32_t alignment = kDefaultAlignment);

  uint32_t alignment() const { return alignment_; }

  void add(std::string key, Value value);
  void add_string(std::string key, std::string value);
  void add_u32(std::string key, uint32_t value);
  void add_i32(std::string key, int32_t value);
  void add_u64(std::string key, uint64_t value);
  void add_f32(std::string key, float value);
  void add_bool(std::string key, bool value);
  void add_strings(std::string key, std::vector<std::string> values);
  void add_i32s(std::string key, std::vector<int32_t> values);
  void add_f32s(std::string key, std::vector<float> values);
  // `dims` in GGUF order (dims[0] innermost); `bytes` must hold exactly the tensor's size. An
  // invalid_argument error (nothing added) for a name that is not valid UTF-8, too long or already
  // added, and for dims, a type or a byte count the parser would refuse.
  Status add_tensor(std::string name, std::vector<int64_t> dims, uint32_t type, std::span<const std::byte> bytes);

  // The whole file.
  std::vector<std::byte> bytes() const;
  // Writes the file (streaming the tensors); an io_error naming `path` on failure.
  Status write(const std::filesystem::path& path) const;

 private:
  // Everything before the data section: header, metadata, tensor infos (offsets assigned), padding.
  std::vector<std::byte> head() const;

  uint32_t alignment_;
  std::vector<KeyValue> metadata_;
  struct Pending {
    TensorInfo info;  // offset unused: head() lays the tensors out in order
    std::vector<std::byte> data;
  };
  std::vector<Pending> tensors_;
};

}  // namespace llaisys::gguf
