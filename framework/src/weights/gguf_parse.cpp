// File::parse: a GGUF image validated byte by byte against the rules of llaisys/model/gguf.hpp, and
// the lookups into the result.

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/ranges.h>

#include "gguf_format.hpp"

namespace llaisys::gguf {
namespace {
static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

using detail::ShapeCheck;

// Little-endian reads from the image, each checked against the bytes left. Errors name the file and
// what was being read (`context_`: the metadata key or tensor in hand).
class Cursor {
 public:
  Cursor(std::span<const std::byte> file, std::string_view source) : file_(file), source_(source) {}

  std::size_t position() const { return pos_; }
  uint64_t remaining() const { return file_.size() - pos_; }
  void set_context(std::string context) { context_ = std::move(context); }

  template <class... Args>
  Status fail(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) const {
    return Status(code, fmt::format("{}: {}{}", source_, context_, fmt::format(format, std::forward<Args>(args)...)));
  }
  Status truncated(std::string_view what, uint64_t needed) const {
    return fail(ErrorCode::parse_error, "truncated: {} at offset {} needs {} bytes, {} left", what, pos_, needed,
                remaining());
  }

  template <class T>
  Status read(T& out, std::string_view what) {
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    std::memcpy(&out, file_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status();
  }

  // A u64 length, then that many bytes of UTF-8.
  Status read_string(std::string& out, uint64_t max_bytes, std::string_view what) {
    uint64_t length = 0;
    LLAISYS_RETURN_IF_ERROR(read(length, what));
    if (length > remaining()) return truncated(what, length);
    if (length > max_bytes) {
      return fail(ErrorCode::parse_error, "{} of {} bytes at offset {} is too long (at most {})", what, length, pos_,
                  max_bytes);
    }
    const std::string_view text(reinterpret_cast<const char*>(file_.data()) + pos_, static_cast<std::size_t>(length));
    if (!detail::is_valid_utf8(text)) {
      return fail(ErrorCode::parse_error, "{} at offset {} is not valid UTF-8", what, pos_);
    }
    out.assign(text);
    pos_ += static_cast<std::size_t>(length);
    return Status();
  }

  Status read_value_type(ValueType& out, std::string_view what) {
    uint32_t id = 0;
    LLAISYS_RETURN_IF_ERROR(read(id, what));
    if (!detail::is_value_type(id)) {
      return fail(ErrorCode::parse_error, "unknown {} {} at offset {} (the spec's are 0 to 12)", what, id,
                  pos_ - sizeof(id));
    }
    out = static_cast<ValueType>(id);
    return Status();
  }

  // One value of `type`; `depth` is how many arrays enclose it.
  Status read_value(ValueType type, int depth, Value& out) {
    out.type = type;
    switch (type) {
      case ValueType::u8: return read_widened<uint8_t>(out.u);
      case ValueType::u16: return read_widened<uint16_t>(out.u);
      case ValueType::u32: return read_widened<uint32_t>(out.u);
      case ValueType::u64: return read(out.u, "u64 value");
      case ValueType::i8: return read_widened<int8_t>(out.i);
      case ValueType::i16: return read_widened<int16_t>(out.i);
      case ValueType::i32: return read_widened<int32_t>(out.i);
      case ValueType::i64: return read(out.i, "i64 value");
      case ValueType::f32: {
        float v = 0;
        LLAISYS_RETURN_IF_ERROR(read(v, "f32 value"));
        out.f = static_cast<double>(v);
        return Status();
      }
      case ValueType::f64: return read(out.f, "f64 value");
      case ValueType::boolean: {
        uint8_t v = 0;
        LLAISYS_RETURN_IF_ERROR(read(v, "bool value"));
        if (v > 1) return fail(ErrorCode::parse_error, "boolean byte {} at offset {} is not 0 or 1", v, pos_ - 1);
        out.b = v != 0;
        return Status();
      }
      case ValueType::string: return read_string(out.s, kMaxStringBytes, "string value");
      case ValueType::array: return read_array(depth + 1, out);
    }
    return fail(ErrorCode::internal, "unhandled value type {}", static_cast<uint32_t>(type));
  }

 private:
  template <class T, class Wide>
  Status read_widened(Wide& out) {
    T v{};
    LLAISYS_RETURN_IF_ERROR(read(v, "integer value"));
    out = static_cast<Wide>(v);
    return Status();
  }

  // Element type, count, elements. The count is checked against the bytes left before anything is
  // allocated for it.
  Status read_array(int depth, Value& out) {
    if (depth > kMaxArrayDepth) {
      return fail(ErrorCode::parse_error, "arrays nested more than {} deep at offset {}", kMaxArrayDepth, pos_);
    }
    auto array = std::make_shared<Array>();
    LLAISYS_RETURN_IF_ERROR(read_value_type(array->element_type, "array element value type"));
    uint64_t count = 0;
    LLAISYS_RETURN_IF_ERROR(read(count, "array count"));
    const uint64_t min_bytes = detail::min_encoded_bytes(array->element_type);
    if (count > remaining() / min_bytes) {
      return fail(ErrorCode::parse_error,
                  "truncated: array of {} {} elements at offset {} needs at least {} bytes each, {} left", count,
                  to_string(array->element_type), pos_, min_bytes, remaining());
    }
    array->items.resize(static_cast<std::size_t>(count));
    for (Value& item : array->items) LLAISYS_RETURN_IF_ERROR(read_value(array->element_type, depth, item));
    out.array = std::move(array);
    return Status();
  }

  std::span<const std::byte> file_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::string context_;
};

// A count read from the header, refused if the bytes left could not hold that many items.
Status check_count(const Cursor& in, uint64_t count, uint64_t min_bytes, std::string_view what) {
  if (count > in.remaining() / min_bytes) {
    return in.fail(ErrorCode::parse_error, "truncated: {} count {} needs at least {} bytes each, {} left", what, count,
                   min_bytes, in.remaining());
  }
  return Status();
}

// general.alignment: a u32 power of two, or the default when absent.
Result<uint32_t> alignment_of(const Cursor& in, const File& file) {
  const Value* value = file.find("general.alignment");
  if (value == nullptr) return kDefaultAlignment;
  if (value->type != ValueType::u32) {
    return in.fail(ErrorCode::parse_error, "general.alignment is a {}, not a u32", to_string(value->type));
  }
  if (!std::has_single_bit(value->u)) {
    return in.fail(ErrorCode::parse_error, "general.alignment {} is not a power of two", value->u);
  }
  return static_cast<uint32_t>(value->u);
}

Status read_tensor_info(Cursor& in, uint64_t index, uint32_t alignment, TensorInfo& tensor) {
  in.set_context(fmt::format("tensor {}: ", index));
  LLAISYS_RETURN_IF_ERROR(in.read_string(tensor.name, kMaxNameBytes, "tensor name"));
  in.set_context(fmt::format("tensor '{}': ", tensor.name));
  uint32_t n_dims = 0;
  LLAISYS_RETURN_IF_ERROR(in.read(n_dims, "number of dims"));
  if (n_dims == 0 || n_dims > static_cast<uint32_t>(kMaxDims)) {
    return in.fail(ErrorCode::parse_error, "{} dims (a tensor has 1 to {})", n_dims, kMaxDims);
  }
  uint64_t dims[kMaxDims] = {};
  for (uint32_t d = 0; d < n_dims; ++d) LLAISYS_RETURN_IF_ERROR(in.read(dims[d], "dim"));
  LLAISYS_RETURN_IF_ERROR(in.read(tensor.type, "tensor type"));
  LLAISYS_RETURN_IF_ERROR(in.read(tensor.offset, "tensor offset"));

  const std::span<const uint64_t> shape(dims, n_dims);
  switch (detail::check_shape(shape, tensor.type, tensor.bytes)) {
    case ShapeCheck::ok: break;
    case ShapeCheck::dims:
      return in.fail(ErrorCode::parse_error, "dims [{}] must each be 1 to 2^63-1", fmt::join(shape, ", "));
    case ShapeCheck::element_overflow:
      return in.fail(ErrorCode::parse_error, "element count of dims [{}] overflows", fmt::join(shape, ", "));
    case ShapeCheck::unknown_type:
      return in.fail(ErrorCode::unsupported, "unknown tensor type {}", tensor.type);
    case ShapeCheck::block:
      return in.fail(ErrorCode::parse_error, "row of {} elements is not a whole number of {}-element {} blocks",
                     dims[0], tensor_type_block(tensor.type)->elements, *tensor_type_name(tensor.type));
    case ShapeCheck::byte_overflow:
      return in.fail(ErrorCode::parse_error, "byte size of dims [{}] of {} overflows", fmt::join(shape, ", "),
                     *tensor_type_name(tensor.type));
  }
  if (tensor.offset % alignment != 0) {
    return in.fail(ErrorCode::parse_error, "offset {} is misaligned (alignment {})", tensor.offset, alignment);
  }
  tensor.dims.assign(shape.begin(), shape.end());
  return Status();
}

// Every tensor's bytes inside the file, and no two sharing a byte (each has at least one).
Status check_data(const Cursor& in, const std::vector<TensorInfo>& tensors, uint64_t data_offset,
                  uint64_t file_size) {
  for (const TensorInfo& tensor : tensors) {
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(data_offset, tensor.offset, &begin) ||
        __builtin_add_overflow(begin, tensor.bytes, &end) || end > file_size) {
      return in.fail(ErrorCode::parse_error,
                     "tensor '{}': {} bytes at offset {} of the data section (which starts at {}) are out of range "
                     "of the {}-byte file",
                     tensor.name, tensor.bytes, tensor.offset, data_offset, file_size);
    }
  }
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors.size());
  for (const TensorInfo& tensor : tensors) by_offset.push_back(&tensor);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    if (a.offset + a.bytes > b.offset) {
      return in.fail(ErrorCode::parse_error, "tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", a.name, a.offset,
                     a.offset + a.bytes, b.name, b.offset, b.offset + b.bytes);
    }
  }
  return Status();
}

// Indices of `items` sorted by `name_of`, or the first name found twice.
template <class T, class Name>
std::vector<std::size_t> sorted_index(const std::vector<T>& items, Name name_of, const std::string** duplicate) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return name_of(items[a]) < name_of(items[b]); });
  *duplicate = nullptr;
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (name_of(items[order[i - 1]]) == name_of(items[order[i]])) {
      *duplicate = &name_of(items[order[i]]);
      break;
    }
  }
  return order;
}

template <class T, class Name>
const T* find_sorted(const std::vector<T>& items, const std::vector<std::size_t>& order, Name name_of,
                     std::string_view name) {
  const auto it = std::lower_bound(order.begin(), order.end(), name,
                                   [&](std::size_t i, std::string_view n) { return name_of(items[i]) < n; });
  if (it == order.end() || name_of(items[*it]) != name) return nullptr;
  return &items[*it];
}

const std::string& key_of(const KeyValue& kv) { return kv.key; }
const std::string& name_of(const TensorInfo& tensor) { return tensor.name; }

}  // namespace

Result<File> File::parse(std::span<const std::byte> bytes, std::string_view source) {
  Cursor in(bytes, source);
  uint32_t magic = 0;
  if (bytes.size() < detail::kHeaderBytes || !in.read(magic, "magic").ok() || magic != detail::kMagic) {
    return make_error(ErrorCode::parse_error, "{}: not a GGUF file ({} bytes{})", source, bytes.size(),
                      bytes.size() < detail::kHeaderBytes ? ", shorter than the 24-byte header"
                                                          : ", no \"GGUF\" magic");
  }
  File file;
  file.file_ = bytes;
  LLAISYS_RETURN_IF_ERROR(in.read(file.version_, "version"));
  if (file.version_ != 2 && file.version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(file.version_);
    if (swapped == 2 || swapped == 3) {
      return in.fail(ErrorCode::unsupported, "big-endian GGUF (version {} byte-swapped) is not supported", swapped);
    }
    return in.fail(ErrorCode::unsupported, "version {} is not supported (llaisys reads GGUF versions 2 and 3)",
                   file.version_);
  }
  uint64_t tensor_count = 0, kv_count = 0;
  LLAISYS_RETURN_IF_ERROR(in.read(tensor_count, "tensor count"));
  LLAISYS_RETURN_IF_ERROR(in.read(kv_count, "metadata count"));
  LLAISYS_RETURN_IF_ERROR(check_count(in, kv_count, detail::kMinEntryBytes, "metadata"));
  LLAISYS_RETURN_IF_ERROR(check_count(in, tensor_count, detail::kMinTensorInfoBytes, "tensor"));

  file.metadata_.resize(static_cast<std::size_t>(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    KeyValue& kv = file.metadata_[static_cast<std::size_t>(i)];
    in.set_context(fmt::format("metadata entry {}: ", i));
    LLAISYS_RETURN_IF_ERROR(in.read_string(kv.key, kMaxNameBytes, "key"));
    in.set_context(fmt::format("metadata '{}': ", kv.key));
    ValueType type = ValueType::u8;
    LLAISYS_RETURN_IF_ERROR(in.read_value_type(type, "value type"));
    LLAISYS_RETURN_IF_ERROR(in.read_value(type, 0, kv.value));
  }
  in.set_context("");
  const std::string* duplicate = nullptr;
  file.metadata_by_key_ = sorted_index(file.metadata_, key_of, &duplicate);
  if (duplicate != nullptr) return in.fail(ErrorCode::parse_error, "duplicate key '{}'", *duplicate);
  LLAISYS_ASSIGN_OR_RETURN(file.alignment_, alignment_of(in, file));

  file.tensors_.resize(static_cast<std::size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    LLAISYS_RETURN_IF_ERROR(read_tensor_info(in, i, file.alignment_, file.tensors_[static_cast<std::size_t>(i)]));
  }
  in.set_context("");
  file.tensors_by_name_ = sorted_index(file.tensors_, name_of, &duplicate);
  if (duplicate != nullptr) return in.fail(ErrorCode::parse_error, "duplicate tensor name '{}'", *duplicate);

  if (!detail::align_up(in.position(), file.alignment_, file.data_offset_)) {
    return in.fail(ErrorCode::parse_error, "truncated: the padding after the tensor infos overflows");
  }
  LLAISYS_RETURN_IF_ERROR(check_data(in, file.tensors_, file.data_offset_, bytes.size()));
  file.data_offset_ = std::min<uint64_t>(file.data_offset_, bytes.size());  // only without tensors
  return file;
}

const Value* File::find(std::string_view key) const {
  const KeyValue* kv = find_sorted(metadata_, metadata_by_key_, key_of, key);
  return kv == nullptr ? nullptr : &kv->value;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  return find_sorted(tensors_, tensors_by_name_, name_of, name);
}

std::span<const std::byte> File::data(const TensorInfo& tensor) const {
  uint64_t begin = 0, end = 0;
  if (__builtin_add_overflow(data_offset_, tensor.offset, &begin) ||
      __builtin_add_overflow(begin, tensor.bytes, &end) || end > file_.size()) {
    return {};
  }
  return file_.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(tensor.bytes));
}

}  // namespace llaisys::gguf
