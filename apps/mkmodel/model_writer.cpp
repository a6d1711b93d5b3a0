#include "model_writer.hpp"

#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "llaisys/core/log.hpp"
#include "weight_values.hpp"

namespace llaisys::mkmodel {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kChunkElements = 1u << 20;

Status write_text(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) return make_error(ErrorCode::io_error, "cannot write {}", path.string());
  return Status();
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// One safetensors file holding specs[first, last) in order.
Status write_safetensors(const fs::path& path, const std::vector<TensorSpec>& specs, std::size_t first,
                         std::size_t last, uint64_t seed) {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  uint64_t offset = 0;
  for (std::size_t t = first; t < last; ++t) {
    const uint64_t nbytes = specs[t].numel() * sizeof(bf16_t);
    header += fmt::format(R"(,"{}":{{"dtype":"BF16","shape":[{}],"data_offsets":[{},{}]}})", specs[t].name,
                          fmt::join(specs[t].shape, ","), offset, offset + nbytes);
    offset += nbytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // data starts 8-byte aligned

  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  if (!file) return make_error(ErrorCode::io_error, "cannot create {}", path.string());
  unsigned char length[8];
  for (int b = 0; b < 8; ++b) length[b] = static_cast<unsigned char>(header.size() >> (8 * b));
  bool ok = std::fwrite(length, 1, 8, file.get()) == 8 &&
            std::fwrite(header.data(), 1, header.size(), file.get()) == header.size();
  std::vector<bf16_t> chunk(kChunkElements);
  for (std::size_t t = first; t < last && ok; ++t) {
    const TensorSpec& spec = specs[t];
    const uint64_t numel = spec.numel();
    for (uint64_t done = 0; done < numel && ok; done += kChunkElements) {
      const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(kChunkElements, numel - done));
      fill_bf16(spec.name, seed, spec.scale, spec.offset, done, std::span(chunk.data(), n));
      ok = std::fwrite(chunk.data(), sizeof(bf16_t), n, file.get()) == n;
    }
  }
  if (!ok || std::fflush(file.get()) != 0) {
    return make_error(ErrorCode::io_error, "cannot write {} (disk full?)", path.string());
  }
  return Status();
}

// Splits the tensors, in order, into `num_shards` runs of roughly equal bytes.
Result<std::vector<std::size_t>> shard_starts(const std::vector<TensorSpec>& specs, int32_t num_shards) {
  if (num_shards < 1 || static_cast<std::size_t>(num_shards) > specs.size()) {
    return make_error(ErrorCode::invalid_argument, "--shards must be in [1, {}], got {}", specs.size(),
                      num_shards);
  }
  uint64_t total = 0;
  for (const TensorSpec& s : specs) total += s.numel();
  std::vector<std::size_t> starts{0};
  uint64_t accumulated = 0;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const std::size_t shards_left = static_cast<std::size_t>(num_shards) - starts.size();
    const std::size_t tensors_left = specs.size() - t;
    const bool past_target = accumulated * static_cast<uint64_t>(num_shards) >=
                             total * static_cast<uint64_t>(starts.size());
    if (t > starts.back() && shards_left > 0 && (past_target || tensors_left == shards_left)) {
      starts.push_back(t);
    }
    accumulated += specs[t].numel();
  }
  return starts;
}

Status write_weights(const fs::path& dir, const WriteOptions& options) {
  const std::vector<TensorSpec> specs = tensor_specs(options.shape);
  if (options.num_shards == 1) return write_safetensors(dir / "model.safetensors", specs, 0, specs.size(), options.seed);
  LLAISYS_ASSIGN_OR_RETURN(std::vector<std::size_t> starts, shard_starts(specs, options.num_shards));
  std::string weight_map;
  uint64_t total_bytes = 0;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const std::size_t last = s + 1 < starts.size() ? starts[s + 1] : specs.size();
    const std::string file_name = fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, starts.size());
    LLAISYS_RETURN_IF_ERROR(write_safetensors(dir / file_name, specs, starts[s], last, options.seed));
    for (std::size_t t = starts[s]; t < last; ++t) {
      weight_map += fmt::format("{}\n    \"{}\": \"{}\"", weight_map.empty() ? "" : ",", specs[t].name, file_name);
      total_bytes += specs[t].numel() * sizeof(bf16_t);
    }
  }
  return write_text(dir / "model.safetensors.index.json",
                    fmt::format("{{\n  \"metadata\": {{\n    \"total_size\": {}\n  }},\n  \"weight_map\": {{{}\n  }}\n}}\n",
                                total_bytes, weight_map));
}

}  // namespace

fs::path default_tokenizer_dir(const ModelShape& shape) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::path("share/llaisys") / shape.tokenizer;
  return (exe.parent_path() / ".." / "share" / "llaisys" / shape.tokenizer).lexically_normal();
}

Status write_model(const fs::path& requested_dir, const WriteOptions& options) {
  std::error_code ec;
  // "out/", "out/." or "." name the same directory as "out" or the current one: the staging
  // directory is built beside the target's real name ("out.partial"), never inside it, and a
  // target that is the current directory or one of its ancestors is refused (--force would remove
  // what the caller stands in).
  const fs::path out_dir = fs::absolute(requested_dir, ec).lexically_normal();
  fs::path target = out_dir;
  if (!target.has_filename()) target = target.parent_path();  // a trailing separator
  const fs::path cwd = fs::current_path(ec);
  if (ec || target.empty() || !target.has_relative_path() || target.filename() == "." || target.filename() == ".." ||
      cwd.lexically_relative(target).native().rfind("..", 0) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: the model directory must be a new or replaceable directory, not the current directory "
                      "or one containing it",
                      requested_dir.string());
  }
  if (fs::exists(target, ec) && !options.overwrite) {
    return make_error(ErrorCode::invalid_argument, "{} already exists (pass --force to replace it)",
                      requested_dir.string());
  }
  const std::vector<std::string> tokenizer_files = {"tokenizer.json", "tokenizer_config.json"};
  if (!options.tokenizer_dir.empty()) {
    for (const std::string& name : tokenizer_files) {
      if (!fs::is_regular_file(options.tokenizer_dir / name, ec)) {
        return make_error(ErrorCode::not_found,
                          "tokenizer file {} not found (pass --tokenizer-dir DIR holding tokenizer.json and "
                          "tokenizer_config.json, or --no-tokenizer)",
                          (options.tokenizer_dir / name).string());
      }
    }
  }
  fs::path partial = target;
  partial += ".partial";
  fs::remove_all(partial, ec);
  if (!fs::create_directories(partial, ec) && ec) {
    return make_error(ErrorCode::io_error, "cannot create {}: {}", partial.string(), ec.message());
  }
  Status status = [&]() -> Status {
    LLAISYS_RETURN_IF_ERROR(write_text(partial / "config.json", config_json(options.shape)));
    LLAISYS_RETURN_IF_ERROR(write_text(partial / "generation_config.json", generation_config_json(options.shape)));
    if (!options.tokenizer_dir.empty()) {
      for (const std::string& name : tokenizer_files) {
        std::error_code copy_ec;
        fs::copy_file(options.tokenizer_dir / name, partial / name, copy_ec);
        if (copy_ec) {
          return make_error(ErrorCode::io_error, "cannot copy {}: {}", (options.tokenizer_dir / name).string(),
                            copy_ec.message());
        }
      }
    }
    return write_weights(partial, options);
  }();
  if (status.ok()) {
    if (options.overwrite) fs::remove_all(target, ec);
    fs::rename(partial, target, ec);
    if (ec) status = make_error(ErrorCode::io_error, "cannot rename {} to {}: {}", partial.string(), target.string(), ec.message());
  }
  if (!status.ok()) fs::remove_all(partial, ec);
  return status;
}

}  // namespace llaisys::mkmodel
