#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "llaisys/core/memory.hpp"
#include "llaisys/core/tensor.hpp"

using namespace llaisys;

TEST_CASE("TensorView slices and rows address the right elements") {
  std::vector<float> data(2 * 3 * 4);
  std::iota(data.begin(), data.end(), 0.0f);
  TensorView t(data.data(), DType::f32, Shape{2, 3, 4});
  CHECK(t.numel() == 24);
  CHECK(t.is_contiguous());
  CHECK(t.nbytes() == 96);
  CHECK(t.strides() == Shape{12, 4, 1});

  TensorView r = t.row(1);
  CHECK(r.shape() == Shape{3, 4});
  CHECK(r.data_as<float>()[0] == 12.0f);

  TensorView s = t.slice(2, 1, 2);  // [2, 3, 2], not contiguous
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK_FALSE(s.is_contiguous());
  CHECK(s.data_as<float>()[0] == 1.0f);
  CHECK_FALSE(s.reshape(Shape{12}).ok());

  auto flat = t.reshape(Shape{6, 4});
  REQUIRE(flat.ok());
  CHECK(flat->row(5).data_as<float>()[3] == 23.0f);
  CHECK_FALSE(t.reshape(Shape{5, 5}).ok());
  CHECK_THROWS(t.row(2));
  CHECK(t.to_string() == "f32[2, 3, 4] cpu");
}

TEST_CASE("AlignedBuffer is 64-byte aligned and zeroed on request") {
  AlignedBuffer buffer(1000, /*zero=*/true);
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % kHostAlignment == 0);
  CHECK(buffer.size() == 1000);
  for (std::byte b : std::span(buffer.data(), buffer.size())) REQUIRE(b == std::byte{0});
  AlignedBuffer moved = std::move(buffer);
  CHECK(moved.size() == 1000);
  CHECK(AlignedBuffer().empty());
}

TEST_CASE("devices parse and print") {
  CHECK(parse_device("cpu").value() == Device::cpu());
  CHECK(parse_device("cuda:3").value() == Device::cuda(3));
  CHECK(parse_device("cuda").value().to_string() == "cuda:0");
  CHECK_FALSE(parse_device("cuda:").ok());
  CHECK_FALSE(parse_device("cuda:-1").ok());
  CHECK_FALSE(parse_device("tpu").ok());
}
