#pragma once
// Where the tests find their data and the built plugins: LLAISYS_TEST_DATA_DIR, LLAISYS_PLUGIN_DIR,
// LLAISYS_SOURCE_DIR and LLAISYS_BINARY_DIR. Each is the path fixed when the tests were built
// (LLAISYS_BUILT_*, tests/CMakeLists.txt) unless the environment variable of the same name is set, so
// the test programs of a relocated build (scripts/gpu-bundle.sh's bundle, run on another machine)
// find the checkout and the bundle's plugins there. Force-included into every test source.
#include <cstdlib>
#include <string>

namespace llaisys::test {

inline std::string path_setting(const char* variable, const char* built_in) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : std::string(built_in);
}

}  // namespace llaisys::test

#define LLAISYS_SOURCE_DIR ::llaisys::test::path_setting("LLAISYS_SOURCE_DIR", LLAISYS_BUILT_SOURCE_DIR)
#define LLAISYS_BINARY_DIR ::llaisys::test::path_setting("LLAISYS_BINARY_DIR", LLAISYS_BUILT_BINARY_DIR)
#define LLAISYS_TEST_DATA_DIR ::llaisys::test::path_setting("LLAISYS_TEST_DATA_DIR", LLAISYS_BUILT_TEST_DATA_DIR)
#define LLAISYS_PLUGIN_DIR ::llaisys::test::path_setting("LLAISYS_PLUGIN_DIR", LLAISYS_BUILT_PLUGIN_DIR)
