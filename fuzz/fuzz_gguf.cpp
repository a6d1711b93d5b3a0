// libFuzzer target: arbitrary bytes as a .gguf file. Parsing must give a File or a Status naming the
// file, never read outside the buffer (ASan checks that: the input is copied into an exactly sized
// heap block). An accepted file is walked whole: every metadata value (strings byte by byte, arrays
// to the bottom) and every byte of every tensor's data span, with the rules of gguf.hpp re-checked
// (dims, block multiples, alignment, ranges, no overlap, lookups). Then it goes through gguf::Writer
// and back through the parser, which must accept it and give the same metadata, tensors and bytes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "llaisys/model/gguf.hpp"
#include "llaisys/model/gguf_model.hpp"

using namespace llaisys::gguf;

namespace {

volatile uint8_t g_sink = 0;

void touch(std::span<const std::byte> bytes) {
  uint8_t x = 0;
  for (std::byte b : bytes) x = static_cast<uint8_t>(x ^ static_cast<uint8_t>(b));
  g_sink = static_cast<uint8_t>(g_sink + x);
}

// `depth`: how many arrays enclose `value`.
void walk(const Value& value, int depth) {
  if (value.type == ValueType::string) {
    touch(std::as_bytes(std::span<const char>(value.s.data(), value.s.size())));
    return;
  }
  if (value.type != ValueType::array) return;
  if (value.array == nullptr || depth + 1 > kMaxArrayDepth) std::abort();
  for (const Value& item : value.array->items) {
    if (item.type != value.array->element_type) std::abort();
    walk(item, depth + 1);
  }
}

bool same(const Value& a, const Value& b) {
  if (a.type != b.type || a.u != b.u || a.i != b.i || a.b != b.b || a.s != b.s) return false;
  if (std::memcmp(&a.f, &b.f, sizeof(double)) != 0) return false;  // NaN payloads included
  if (a.type != ValueType::array) return true;
  if (a.array->element_type != b.array->element_type || a.array->items.size() != b.array->items.size()) return false;
  for (std::size_t i = 0; i < a.array->items.size(); ++i) {
    if (!same(a.array->items[i], b.array->items[i])) return false;
  }
  return true;
}

void check_tensors(const File& file, std::span<const std::byte> image) {
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : file.tensors()) {
    if (t.dims.empty() || t.dims.size() > static_cast<std::size_t>(kMaxDims)) std::abort();
    const auto block = tensor_type_block(t.type);
    if (!block || t.dims[0] % block->elements != 0) std::abort();
    uint64_t elements = 1;
    for (int64_t d : t.dims) {
      if (d < 1 || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements)) std::abort();
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements / static_cast<uint64_t>(block->elements), static_cast<uint64_t>(block->bytes),
                               &bytes) ||
        bytes != t.bytes || t.offset % file.alignment() != 0) {
      std::abort();
    }
    const std::span<const std::byte> data = file.data(t);
    if (data.size() != t.bytes || data.data() != image.data() + file.data_offset() + t.offset ||
        data.data() + data.size() > image.data() + image.size()) {
      std::abort();
    }
    touch(data);
    if (file.find_tensor(t.name) != &t) std::abort();
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset) std::abort();
  }
}

// Writer -> parse gives the same file back.
void check_round_trip(const File& file) {
  Writer writer(file.alignment());
  for (const KeyValue& kv : file.metadata()) writer.add(kv.key, kv.value);  // throws on a bug
  for (const TensorInfo& t : file.tensors()) {
    if (!writer.add_tensor(t.name, t.dims, t.type, file.data(t)).ok()) std::abort();
  }
  const std::vector<std::byte> image = writer.bytes();
  const auto again = File::parse(image, "fuzz-rewritten.gguf");
  if (!again.ok() || again->alignment() != file.alignment()) std::abort();
  const std::size_t added = again->metadata().size() - file.metadata().size();  // general.alignment
  if (added > 1) std::abort();
  for (std::size_t i = 0; i < file.metadata().size(); ++i) {
    const KeyValue& kv = again->metadata()[i + added];
    if (kv.key != file.metadata()[i].key || !same(kv.value, file.metadata()[i].value)) std::abort();
  }
  if (again->tensors().size() != file.tensors().size()) std::abort();
  for (std::size_t i = 0; i < file.tensors().size(); ++i) {
    const TensorInfo& a = file.tensors()[i];
    const TensorInfo& b = again->tensors()[i];
    if (a.name != b.name || a.dims != b.dims || a.type != b.type || a.bytes != b.bytes) std::abort();
    const std::span<const std::byte> before = file.data(a), after = again->data(b);
    if (!std::equal(before.begin(), before.end(), after.begin(), after.end())) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  auto copy = std::make_unique<std::byte[]>(size);
  if (size > 0) std::memcpy(copy.get(), data, size);
  const std::span<const std::byte> image(copy.get(), size);
  const auto file = File::parse(image, "fuzz.gguf");
  if (!file.ok()) {
    if (file.status().message().find("fuzz.gguf") == std::string::npos) std::abort();
    return 0;
  }
  if (file->version() != 2 && file->version() != 3) std::abort();
  // The translation into a model directory's terms (gguf_model.hpp) takes any parsed file: each
  // either succeeds or says why, naming the file.
  for (const llaisys::Status& status : {llaisys::gguf::gguf_config_json(*file, "fuzz.gguf").status(),
                               llaisys::gguf::hf_tensor_names(*file, "fuzz.gguf").status()}) {
    if (!status.ok() && status.message().find("fuzz.gguf") == std::string::npos) std::abort();
  }
  if (file->data_offset() > size) std::abort();
  for (const KeyValue& kv : file->metadata()) {
    touch(std::as_bytes(std::span<const char>(kv.key.data(), kv.key.size())));
    walk(kv.value, 0);
    if (file->find(kv.key) != &kv.value) std::abort();
  }
  check_tensors(*file, image);
  check_round_trip(*file);
  return 0;
}
