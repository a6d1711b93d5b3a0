#pragma once
// Progress and the closing summary of a batch run, on standard error.
//
// On a terminal: one bar redrawn in place at most ten times a second. Otherwise (a file, a pipe,
// CI logs): a plain line at every tenth of the requests and at least every ten seconds.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "llaisys/engine/llm_engine.hpp"

namespace llaisys::offline {

struct BatchTotals {
  int64_t num_requests = 0;
  int64_t num_failed = 0;               // bad input lines and requests that ended in error / ignored
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;     // served from the prefix cache
  int64_t generated_tokens = 0;
  std::array<int64_t, 5> finish_reasons{};  // by FinishReason
};

enum class ProgressStyle : uint8_t { off, bar, lines };

class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, int64_t total_requests, ProgressStyle style);
  // Called after every engine step; cheap when there is nothing to draw.
  void update(int64_t done_requests, int64_t generated_tokens);
  // Clears the bar (terminal) or prints the last line.
  void finish(int64_t done_requests, int64_t generated_tokens);

 private:
  void draw(int64_t done_requests, int64_t generated_tokens, bool final_line);

  std::FILE* out_;
  int64_t total_;
  ProgressStyle style_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t last_reported_tenth_ = -1;
  int64_t last_drawn_done_ = -1;
};

// The closing summary: requests, tokens, throughput, finish reasons, prefix-cache hit rate.
std::string format_summary(const BatchTotals& totals, const EngineStats& stats, double seconds);

}  // namespace llaisys::offline
