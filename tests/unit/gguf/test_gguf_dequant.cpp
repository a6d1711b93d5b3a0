// Every tensor of every tiny-llama GGUF file, dequantized to f32 by our kernels, against the sha256
// of ggml's own dequantization (tests/data/tiny-llama-gguf/dequant.json).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>

#include "cpu/quant.hpp"
#include "llaisys/model/gguf_model.hpp"

namespace llaisys {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

std::string sha256_hex(const void* data, std::size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

json::value read_json(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

const fs::path kFixture = fs::path(LLAISYS_TEST_DATA_DIR) / "tiny-llama-gguf";

}  // namespace

TEST_CASE("every tensor of the eight GGUF files dequantizes to ggml's exact values", "[gguf]") {
  const json::value expected = read_json(kFixture / "dequant.json");
  const json::object& files = expected.at("files").as_object();
  REQUIRE(files.size() == 8);
  int checked = 0;
  for (const auto& [file_name, tensors] : files) {
    const fs::path path = kFixture / std::string(file_name);
    auto opened = gguf::open_gguf(path);
    REQUIRE(opened.ok());
    const gguf::File* file = &(*opened)->parsed;
    REQUIRE(file->tensors().size() == tensors.as_object().size());
    for (const auto& [tensor_name, info] : tensors.as_object()) {
      CAPTURE(std::string(file_name), std::string(tensor_name));
      const gguf::TensorInfo* t = file->find_tensor(std::string(tensor_name));
      REQUIRE(t != nullptr);
      REQUIRE(gguf::tensor_type_name(t->type) == std::string_view(info.at("type").as_string()));
      const std::optional<DType> dtype = gguf::dtype_of(t->type);
      REQUIRE(dtype.has_value());
      int64_t count = 1;
      for (int64_t d : t->dims) count *= d;
      std::vector<float> values(static_cast<std::size_t>(count));
      cpu::dequantize(*dtype, file->data(*t).data(), count, values.data());
      CHECK(sha256_hex(values.data(), values.size() * sizeof(float)) == std::string_view(info.at("sha256").as_string()));
      ++checked;
    }
  }
  CHECK(checked == 240);
}

}  // namespace llaisys
