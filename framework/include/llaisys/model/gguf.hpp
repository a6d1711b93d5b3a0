#pragma once
// GGUF files (llama.cpp's model format, versions 2 and 3): strict parsing and writing.
//
// Layout (little-endian): magic "GGUF", u32 version, u64 tensor count, u64 metadata count; then the
// metadata key/values (key: u64 length + bytes; u32 value type; the value: scalars in their width,
// strings as u64 length + bytes, arrays as u32 element type + u64 count + elements, arrays of
// arrays allowed); then the tensor infos (name string, u32 number of dims, that many u64 dims with
// dims[0] the innermost/fastest = a row's length, u32 ggml type, u64 offset inside the data
// section); then padding to `general.alignment` (u32 metadata key, default 32, a power of two); then
// the data section, each tensor at its offset (a multiple of the alignment).
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
// | a key given twice                                          | `duplicate key`             |
// | general.alignment not a power of two (or not u32)          | `alignment`                 |
// | a tensor with 0 or more than 4 dims, or a dim < 0 / 0 count| `dims`                      |
// | dims whose product (or byte size) overflows 2^63           | `overflows`                 |
// | a ggml type id that is not known                           | `unknown tensor type`       |
// | a row length that is not a whole number of blocks          | `block`                     |
// | a tensor offset not a multiple of the alignment            | `misaligned`                |
// | a tensor's bytes past the end of the file                  | `out of range`              |
// | two tensors sharing bytes                                  | `overlap`                   |
// | a tensor name twice                                        | `duplicate tensor name`     |
//
// Limits, beyond which a file is refused as hostile: keys and names at most 64 KiB, strings at most
// 64 MiB, array nesting at most 8 deep, tensors and metadata entries at most the file size.

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

// Metadata value types, numbered as in the GGUF specification.
enum class ValueType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};
std::string_view to_string(ValueType type) noexcept;

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

  // An integer type holding a value representable as T (any width, signed or not); else nullopt.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  // f32, f64, or an integer type.
  std::optional<double> as_number() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

// ggml tensor type ids (every one llama.cpp defines, so a reader can size any tensor and name the
// ones llaisys cannot compute with). Removed ids (4, 5: Q4_2, Q4_3) are unknown.
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19,
  IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28,
  IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35,
};
// "Q8_0", "BF16", ... (llama.cpp's names); nullopt for an id that is not known.
std::optional<std::string_view> tensor_type_name(uint32_t id) noexcept;
// Elements and bytes per block of a known type id (1 and the element size for F32, F16, BF16, I*).
struct BlockSize {
  int64_t elements = 0;
  int64_t bytes = 0;
};
std::optional<BlockSize> tensor_type_block(uint32_t id) noexcept;
// The llaisys DType a type id is computed with (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), or
// nullopt for the others (refused by name where a model needs them).
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
  uint64_t data_offset() const { return data_offset_; }  // where the data section starts in the file
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order

  // The value of `key`, or null.
  const Value* find(std::string_view key) const;
  const TensorInfo* find_tensor(std::string_view name) const;
  // The bytes of a tensor inside the image passed to parse().
  std::span<const std::byte> data(const TensorInfo& tensor) const;

 private:
  std::span<const std::byte> file_;
  uint32_t version_ = 3;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Builds a GGUF (version 3) file: metadata in the order added, tensors in the order added, each at
// the next aligned offset. Used by llaisys-mkmodel, llaisys-quantize and the tests (which also write
// deliberately broken files through raw_bytes()).
class Writer {
 public:
  explicit Writer(uint32_t alignment = kDefaultAlignment);

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
  // `dims` in GGUF order (dims[0] innermost); `bytes` must hold exactly the tensor's size.
  Status add_tensor(std::string name, std::vector<int64_t> dims, uint32_t type, std::span<const std::byte> bytes);

  // The whole file.
  std::vector<std::byte> bytes() const;
  Status write(const std::filesystem::path& path) const;

 private:
  uint32_t alignment_;
  std::vector<KeyValue> metadata_;
  struct Pending {
    TensorInfo info;
    std::vector<std::byte> data;
  };
  std::vector<Pending> tensors_;
};

}  // namespace llaisys::gguf
