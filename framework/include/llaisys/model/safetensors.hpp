#pragma once
// Safetensors model files: strict parsing, mapping or reading into memory, single-file and sharded
// directories.
//
// File layout: [u64 little-endian header length N][N bytes of JSON header][data section]. The header
// maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets inside the
// data section) and may hold a "__metadata__" object of strings.
//
// Contract: no input crashes anything or makes it read outside the file. Each way a file can be wrong
// is its own error, and the message names the file (and the tensor) and contains these words:
//
// | what is wrong                                        | code          | message contains              |
// | ---------------------------------------------------- | ------------- | ----------------------------- |
// | file shorter than the 8-byte length prefix           | parse_error   | `too short`                   |
// | header length over kMaxSafetensorsHeaderBytes        | parse_error   | `exceeds the cap`             |
// | header length beyond the end of the file             | parse_error   | `beyond the end of the file`  |
// | header is not valid JSON / not an object             | parse_error   | `invalid JSON header`         |
// | a key twice in one JSON object                       | parse_error   | `duplicate tensor name` (top level), `duplicate key` (inside) |
// | entry not {dtype, shape, data_offsets} of the right types | parse_error | `malformed entry`       |
// | dtype not one llaisys reads (BF16, F16, F32, ...)    | unsupported   | `unknown dtype`               |
// | shape x dtype size overflows, or != end - begin      | parse_error   | `does not match its byte range` / `overflows` |
// | data_offsets end < begin, or end past the data       | parse_error   | `out of range`                |
// | two tensors share bytes                              | parse_error   | `overlap`                     |
// | unused bytes between tensors or before the first     | parse_error   | `gap`                         |
// | unused bytes after the last tensor                   | parse_error   | `trailing bytes`              |
// | (WeightStore) a tensor the model needs is absent     | not_found     | `missing tensor`              |
// | (WeightStore) a tensor's shape disagrees with config | invalid_argument | `wrong shape`              |
// | (WeightStore) index.json inconsistent with shards    | parse_error   | `index`                       |

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "llaisys/core/memory.hpp"
#include "llaisys/core/status.hpp"
#include "llaisys/core/tensor.hpp"

namespace llaisys {

// The safetensors reference implementation refuses headers over 100 MB; so do we.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t data_begin = 0;  // byte offsets inside the data section, [begin, end)
  uint64_t data_end = 0;
};

struct SafetensorsHeader {
  uint64_t data_offset = 0;                 // where the data section starts in the file (8 + N)
  std::vector<SafetensorsTensor> tensors;   // in data order
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Validates a whole file image (every rule in the table above except the WeightStore ones) and
// returns its tensors. `source` names the file in messages. Reads nothing outside `file`.
Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file, std::string_view source);

// How a model file's bytes come into memory.
enum class WeightLoading : uint8_t {
  // `memory` when the files take at most kAutoMemoryShare of available_memory_bytes()
  // (llaisys/core/host_memory.hpp), else `map`.
  automatic,
  // mmap: the page cache's pages are used in place (shared between processes, nothing copied, the
  // kernel may drop them under memory pressure), in 4 KiB pages.
  map,
  // Read into private anonymous memory, 2 MiB aligned and advised for transparent huge pages: fewer
  // TLB misses when a decode step streams every weight (docs/BENCHMARKS.md, 2026-11-25 afternoon).
  // Refused when the files exceed the memory available now.
  memory,
};
inline constexpr double kAutoMemoryShare = 0.7;
std::string_view to_string(WeightLoading loading);
// "auto", "mmap" or "memory".
std::optional<WeightLoading> parse_weight_loading(std::string_view text);

// A whole file's bytes, read-only: mapped, or read into memory (WeightLoading; `automatic` means
// `memory` here). Empty files give an empty span.
class MappedFile {
 public:
  static Result<MappedFile> open(const std::filesystem::path& path, WeightLoading loading = WeightLoading::map);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }
  WeightLoading loading() const { return loading_; }

 private:
  void release() noexcept;

  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t region_size_ = 0;  // bytes of the mapping at data_ (the memory copy is rounded up)
  WeightLoading loading_ = WeightLoading::map;
  std::filesystem::path path_;
};

// Every tensor of a Hugging Face model directory: `model.safetensors`, or else the shards named by
// `model.safetensors.index.json` (its "weight_map" must list exactly the tensors each shard holds);
// or of a GGUF file (`model_dir` is then the file), under their Hugging Face names with llama.cpp's
// q/k row order undone (gguf_model.hpp; those tensors are copies).
// Tensors are views into the files' bytes (read-only memory: never write through them); the store
// must outlive them. A tensor whose bytes are not aligned to its element size is copied once into
// aligned memory, in its own dtype.
class WeightStore {
 public:
  static Result<WeightStore> open(const std::filesystem::path& model_dir,
                                  WeightLoading loading = WeightLoading::map);

  WeightStore() = default;
  WeightStore(WeightStore&&) noexcept = default;
  WeightStore& operator=(WeightStore&&) noexcept = default;

  bool contains(std::string_view name) const;
  // The tensor `name`, or a `missing tensor` error.
  Result<TensorView> find(std::string_view name) const;
  // The tensor `name` with exactly `shape` and a floating or quantized dtype: `missing tensor` or
  // `wrong shape` errors otherwise.
  Result<TensorView> require(std::string_view name, const Shape& shape) const;

  std::vector<std::string> names() const;  // sorted
  std::size_t num_tensors() const { return index_.size(); }
  std::size_t num_files() const { return files_.size(); }
  uint64_t total_tensor_bytes() const { return total_bytes_; }
  // How the files were loaded (never `automatic`: what it resolved to).
  WeightLoading loading() const { return loading_; }

 private:
  struct Location {
    TensorView view;
    std::size_t file = 0;
  };
  std::vector<MappedFile> files_;
  std::vector<AlignedBuffer> realigned_;  // copies of misaligned tensors
  std::unordered_map<std::string, Location> index_;
  uint64_t total_bytes_ = 0;
  WeightLoading loading_ = WeightLoading::map;

  Status add_file(MappedFile file, const std::vector<std::string>* expected_names);
  Status add_gguf(MappedFile file);
};

}  // namespace llaisys
