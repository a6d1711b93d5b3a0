// `llaisys-bench memcpy`: large-memcpy bandwidth, counting bytes read plus bytes written.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "llaisys/core/memory.hpp"

namespace llaisys::bench {

double measure_copy_bandwidth(std::size_t bytes, int repeats, int num_threads) {
  num_threads = std::max(1, num_threads);
  AlignedBuffer src(bytes), dst(bytes);
  // Touch every page first so page faults stay out of the timing.
  std::memset(src.data(), 1, bytes);
  std::memset(dst.data(), 2, bytes);
  const std::size_t slice = bytes / static_cast<std::size_t>(num_threads) / kHostAlignment * kHostAlignment;
  double best = 0.0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < num_threads; ++t) {
      threads.emplace_back([&, t] {
        const std::size_t offset = static_cast<std::size_t>(t) * slice;
        const std::size_t n = t == num_threads - 1 ? bytes - offset : slice;
        std::memcpy(dst.data() + offset, src.data() + offset, n);
      });
    }
    for (auto& thread : threads) thread.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds);
  }
  return best;
}

void add_memcpy_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::size_t megabytes = 1024;
    int repeats = 5;
    int threads = 1;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("memcpy", "host memory copy bandwidth (bytes read + written per second)");
  cmd->add_option("--mb", options->megabytes, "buffer size in MiB")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--repeats", options->repeats, "runs; the best is reported")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", options->threads, "copying threads")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->callback([options, &exit_code] {
    const double bandwidth =
        measure_copy_bandwidth(options->megabytes << 20, options->repeats, options->threads);
    fmt::print("memcpy: {} MiB, {} thread(s): {:.2f} GB/s (read + written)\n", options->megabytes,
               options->threads, bandwidth / 1e9);
    exit_code = 0;
  });
}

}  // namespace llaisys::bench
