// Catch2 main of the CUDA kernel tests. Without a CUDA device (or driver), a run that selects any
// case not tagged [host] exits with 77, which ctest reports as skipped (SKIP_RETURN_CODE); [host]
// cases (host-only logic such as the attention planner) run everywhere, and listing cases (ctest's
// discovery at build time) needs no device.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "cuda/cuda_status.hpp"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::string_view(argv[i]).starts_with("--list");
  if (!listing && llaisys::cuda::device_count() == 0) {
    const Catch::Config& config = session.config();
    const auto selected = Catch::filterTests(Catch::getAllTestCasesSorted(config), config.testSpec(), config);
    const bool host_only = !selected.empty() && std::all_of(selected.begin(), selected.end(), [](const Catch::TestCase& t) {
      return std::find(t.tags.begin(), t.tags.end(), "host") != t.tags.end();
    });
    if (!host_only) {
      std::fprintf(stderr, "SKIPPED: no CUDA device visible (cudaGetDeviceCount found none); "
                           "these tests need a GPU, see docs/CUDA.md\n");
      return 77;
    }
  }
  return session.run();
}
