#include <catch2/catch.hpp>

#include "llaisys/core/status.hpp"

using namespace llaisys;

namespace {
Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::invalid_argument, "{} is not positive", v);
  return v;
}
Result<int> doubled(int v) {
  LLAISYS_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}
Status check(int v) {
  LLAISYS_RETURN_IF_ERROR(parse_positive(v).status());
  return Status();
}
}  // namespace

TEST_CASE("Status carries a code and a message, with context") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.to_string() == "ok");
  Status err = make_error(ErrorCode::parse_error, "bad byte at {}", 7);
  CHECK_FALSE(err.ok());
  CHECK(err.code() == ErrorCode::parse_error);
  err.with_context("reading config.json");
  CHECK(err.message() == "reading config.json: bad byte at 7");
  CHECK(err.to_string() == "parse_error: reading config.json: bad byte at 7");
}

TEST_CASE("Result holds a value or an error, and the macros propagate errors") {
  CHECK(doubled(21).value() == 42);
  Result<int> bad = doubled(-1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == ErrorCode::invalid_argument);
  CHECK(bad.status().message() == "-1 is not positive");
  CHECK(bad.value_or(5) == 5);
  CHECK(check(3).ok());
  CHECK(check(0).message() == "0 is not positive");
}
