// WeightStore: the tensors of a model directory's safetensors files, single or sharded.

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <boost/json.hpp>

#include "llaisys/core/log.hpp"
#include "llaisys/core/host_memory.hpp"
#include "llaisys/model/gguf_model.hpp"
#include "llaisys/model/safetensors.hpp"
#include "strict_json.hpp"

namespace llaisys {
namespace fs = std::filesystem;
namespace json = boost::json;

// ---- WeightStore --------------------------------------------------------------------------------

namespace {

constexpr std::size_t kMaxIndexBytes = 64u << 20;

bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

// weight_map of model.safetensors.index.json: shard file -> the tensor names it must hold.
Result<std::map<std::string, std::vector<std::string>>> read_index(const fs::path& index_path) {
  LLAISYS_ASSIGN_OR_RETURN(json::value root, weights::read_json_file(index_path.string(), kMaxIndexBytes));
  const json::object* object = root.if_object();
  const json::value* map_value = object != nullptr ? object->if_contains("weight_map") : nullptr;
  if (map_value == nullptr || !map_value->is_object()) {
    return make_error(ErrorCode::parse_error, "{}: index has no \"weight_map\" object", index_path.string());
  }
  std::map<std::string, std::vector<std::string>> shards;
  for (const json::key_value_pair& item : map_value->as_object()) {
    const json::string* file = item.value().if_string();
    if (file == nullptr || !is_plain_file_name(std::string_view(file->data(), file->size()))) {
      return make_error(ErrorCode::parse_error,
                        "{}: index maps '{}' to {}, which is not a file name in the model directory",
                        index_path.string(), std::string_view(item.key().data(), item.key().size()),
                        json::serialize(item.value()));
    }
    shards[std::string(*file)].emplace_back(item.key());
  }
  if (shards.empty()) {
    return make_error(ErrorCode::parse_error, "{}: index \"weight_map\" is empty", index_path.string());
  }
  return shards;
}

// `automatic` made concrete for files of `bytes` in all (unreadable sizes count as nothing: opening
// them fails later with its own message).
WeightLoading resolve(WeightLoading loading, uint64_t bytes) {
  if (loading != WeightLoading::automatic) return loading;
  const double budget = kAutoMemoryShare * static_cast<double>(available_memory_bytes());
  return static_cast<double>(bytes) <= budget ? WeightLoading::memory : WeightLoading::map;
}

uint64_t file_bytes(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

}  // namespace

Result<WeightStore> WeightStore::open(const fs::path& model_dir, WeightLoading loading) {
  WeightStore store;
  if (gguf::is_gguf_file(model_dir)) {
    store.loading_ = resolve(loading, file_bytes(model_dir));
    LLAISYS_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(model_dir, store.loading_));
    LLAISYS_RETURN_IF_ERROR(store.add_gguf(std::move(file)));
    return store;
  }
  const fs::path single = model_dir / "model.safetensors";
  const fs::path index = model_dir / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(single, ec)) {
    store.loading_ = resolve(loading, file_bytes(single));
    LLAISYS_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(single, store.loading_));
    LLAISYS_RETURN_IF_ERROR(store.add_file(std::move(file), nullptr));
  } else if (fs::exists(index, ec)) {
    LLAISYS_ASSIGN_OR_RETURN(auto shards, read_index(index));
    uint64_t total = 0;
    for (const auto& [file_name, names] : shards) total += file_bytes(model_dir / file_name);
    store.loading_ = resolve(loading, total);
    for (const auto& [file_name, names] : shards) {
      auto file = MappedFile::open(model_dir / file_name, store.loading_);
      if (!file.ok()) {
        return std::move(file).take_status().with_context(
            fmt::format("{}: index names shard '{}'", index.string(), file_name));
      }
      LLAISYS_RETURN_IF_ERROR(store.add_file(std::move(file).value(), &names));
    }
  } else {
    return make_error(ErrorCode::not_found, "{}: no model.safetensors or model.safetensors.index.json",
                      model_dir.string());
  }
  return store;
}

Status WeightStore::add_file(MappedFile file, const std::vector<std::string>* expected_names) {
  const std::string source = file.path().string();
  LLAISYS_ASSIGN_OR_RETURN(SafetensorsHeader header, parse_safetensors(file.bytes(), source));
  if (expected_names != nullptr) {
    const std::set<std::string_view> expected(expected_names->begin(), expected_names->end());
    std::set<std::string_view> present;
    for (const SafetensorsTensor& t : header.tensors) {
      if (!expected.contains(t.name)) {
        return make_error(ErrorCode::parse_error, "{}: holds tensor '{}' which the index does not list for it",
                          source, t.name);
      }
      present.insert(t.name);
    }
    for (std::string_view name : expected) {
      if (!present.contains(name)) {
        return make_error(ErrorCode::parse_error, "index lists tensor '{}' in {} but that shard has no such tensor",
                          name, source);
      }
    }
  }
  const std::size_t file_number = files_.size();
  const std::byte* base = file.bytes().data();
  for (const SafetensorsTensor& t : header.tensors) {
    if (index_.contains(t.name)) {
      return make_error(ErrorCode::parse_error, "{}: tensor '{}' also appears in {}", source, t.name,
                        files_[index_.at(t.name).file].path().string());
    }
    const std::size_t nbytes = static_cast<std::size_t>(t.data_end - t.data_begin);
    const std::byte* data = nbytes == 0 ? nullptr : base + header.data_offset + t.data_begin;
    if (data != nullptr && reinterpret_cast<uintptr_t>(data) % dtype_size(t.dtype) != 0) {
      log::warn("{}: tensor '{}' is not aligned to its {}-byte elements; copying it", source, t.name,
                dtype_size(t.dtype));
      AlignedBuffer copy(nbytes);
      std::memcpy(copy.data(), data, nbytes);
      data = copy.data();
      realigned_.push_back(std::move(copy));
    }
    index_.emplace(t.name, Location{.view = TensorView(const_cast<std::byte*>(data), t.dtype, t.shape),
                                    .file = file_number});
    total_bytes_ += nbytes;
  }
  files_.push_back(std::move(file));
  return Status();
}

bool WeightStore::contains(std::string_view name) const { return index_.contains(std::string(name)); }

Result<TensorView> WeightStore::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  if (it == index_.end()) {
    return make_error(ErrorCode::not_found, "missing tensor '{}' ({} tensors in {} file(s))", name,
                      index_.size(), files_.size());
  }
  return it->second.view;
}

Status WeightStore::add_gguf(MappedFile file) {
  const std::string source = file.path().string();
  LLAISYS_ASSIGN_OR_RETURN(gguf::File parsed, gguf::File::parse(file.bytes(), source));
  LLAISYS_ASSIGN_OR_RETURN(std::vector<gguf::HfTensor> tensors, gguf::hf_tensor_names(parsed, source));
  for (const gguf::HfTensor& t : tensors) {
    const gguf::TensorInfo& info = *t.tensor;
    const std::optional<DType> dtype = gguf::dtype_of(info.type);
    if (!dtype) {
      return make_error(ErrorCode::unsupported,
                        "{}: tensor '{}' is {}, which llaisys cannot compute with (F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                        "Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)",
                        source, info.name, gguf::tensor_type_name(info.type).value_or("?"));
    }
    std::vector<int64_t> dims(info.dims.rbegin(), info.dims.rend());  // row-major, outermost first
    std::span<const std::byte> bytes = parsed.data(info);
    auto* data = const_cast<std::byte*>(bytes.data());
    if (t.permute_heads > 0) {
      const int64_t rows = dims.front();
      if (rows % t.permute_heads != 0 || (rows / t.permute_heads) % 2 != 0) {
        return make_error(ErrorCode::invalid_argument, "{}: tensor '{}' has {} rows, not {} heads of an even size",
                          source, info.name, rows, t.permute_heads);
      }
      AlignedBuffer copy(bytes.size());
      gguf::unpermute_rows(bytes.data(), static_cast<std::byte*>(copy.data()), rows,
                           static_cast<int64_t>(bytes.size()) / rows, t.permute_heads);
      data = static_cast<std::byte*>(copy.data());
      realigned_.push_back(std::move(copy));
    }
    // GGUF's alignment may be as small as 1: float data the kernels read as elements is copied once
    // into aligned memory when it is not aligned (quantized blocks are read bytewise).
    if (!is_quantized(*dtype) && t.permute_heads == 0 && reinterpret_cast<uintptr_t>(data) % dtype_size(*dtype) != 0) {
      log::warn("{}: tensor '{}' is not aligned to its {}-byte elements; copying it", source, info.name,
                dtype_size(*dtype));
      AlignedBuffer copy(bytes.size());
      std::memcpy(copy.data(), bytes.data(), bytes.size());
      data = static_cast<std::byte*>(copy.data());
      realigned_.push_back(std::move(copy));
    }
    if (index_.contains(t.hf_name)) {
      return make_error(ErrorCode::parse_error, "{}: two tensors map to '{}'", source, t.hf_name);
    }
    index_.emplace(t.hf_name, Location{.view = TensorView(data, *dtype, Shape(std::span<const int64_t>(dims))),
                                       .file = files_.size()});
    total_bytes_ += bytes.size();
  }
  files_.push_back(std::move(file));
  return Status();
}

Result<TensorView> WeightStore::require(std::string_view name, const Shape& shape) const {
  LLAISYS_ASSIGN_OR_RETURN(TensorView view, find(name));
  if (view.dtype() != DType::bf16 && view.dtype() != DType::f16 && view.dtype() != DType::f32 &&
      !is_quantized(view.dtype())) {
    return make_error(ErrorCode::unsupported, "tensor '{}' has dtype {}; weights must be BF16, F16, F32 or quantized",
                      name, to_string(view.dtype()));
  }
  if (!(view.shape() == shape)) {
    return make_error(ErrorCode::invalid_argument, "tensor '{}' has the wrong shape {}: the config needs {}",
                      name, view.shape().to_string(), shape.to_string());
  }
  return view;
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, location] : index_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace llaisys
