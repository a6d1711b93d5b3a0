#include "progress.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llaisys::offline {

using Clock = std::chrono::steady_clock;

ProgressReporter::ProgressReporter(std::FILE* out, int64_t total_requests, ProgressStyle style)
    : out_(out), total_(total_requests), style_(style), start_(Clock::now()), last_draw_(start_) {}

void ProgressReporter::update(int64_t done_requests, int64_t generated_tokens) {
  if (style_ == ProgressStyle::off) return;
  const auto now = Clock::now();
  if (style_ == ProgressStyle::bar) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    const int64_t tenth = total_ > 0 ? done_requests * 10 / total_ : 10;
    if (tenth == last_reported_tenth_ && now - last_draw_ < std::chrono::seconds(10)) return;
    last_reported_tenth_ = tenth;
  }
  last_draw_ = now;
  draw(done_requests, generated_tokens, false);
}

void ProgressReporter::finish(int64_t done_requests, int64_t generated_tokens) {
  if (style_ == ProgressStyle::off) return;
  if (style_ == ProgressStyle::lines && last_drawn_done_ == done_requests) return;  // already said
  draw(done_requests, generated_tokens, true);
}

void ProgressReporter::draw(int64_t done_requests, int64_t generated_tokens, bool final_line) {
  last_drawn_done_ = done_requests;
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(generated_tokens) / seconds : 0.0;
  if (style_ == ProgressStyle::lines) {
    fmt::print(out_, "progress: {}/{} requests, {} generated tokens, {:.1f} tokens/s, {:.1f} s\n", done_requests,
               total_, generated_tokens, rate, seconds);
    std::fflush(out_);
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * done_requests / total_) : kWidth;
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kWidth - filled), '-');
  fmt::print(out_, "\r[{}] {}/{} requests  {} tokens  {:.1f} tok/s  {:.0f} s ", bar, done_requests, total_,
             generated_tokens, rate, seconds);
  if (final_line) fmt::print(out_, "\n");
  std::fflush(out_);
}

std::string format_summary(const BatchTotals& totals, const EngineStats& stats, double seconds) {
  const double gen_rate = seconds > 0 ? static_cast<double>(totals.generated_tokens) / seconds : 0.0;
  const double all_rate =
      seconds > 0 ? static_cast<double>(totals.prompt_tokens + totals.generated_tokens) / seconds : 0.0;
  std::string reasons;
  for (std::size_t r = 0; r < totals.finish_reasons.size(); ++r) {
    if (totals.finish_reasons[r] == 0) continue;
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", totals.finish_reasons[r],
                           to_string(static_cast<FinishReason>(r)));
  }
  return fmt::format(
      "summary: {} requests ({} failed){}\n"
      "  prompt tokens: {} ({} from the prefix cache), generated tokens: {}\n"
      "  time: {:.3f} s, generated tokens/s: {:.1f}, prompt + generated tokens/s: {:.1f}\n"
      "  prefix cache: {:.1f}% hit rate ({} of {} prompt tokens looked up), {} preemptions, {} engine steps\n",
      totals.num_requests, totals.num_failed, reasons.empty() ? "" : "; choices: " + reasons, totals.prompt_tokens,
      totals.cached_prompt_tokens, totals.generated_tokens, seconds, gen_rate, all_rate,
      100.0 * stats.prefix_hit_rate(), stats.prefix_hit_tokens, stats.prefix_query_tokens, stats.num_preemptions,
      stats.num_steps) +
         (stats.num_draft_tokens == 0
              ? std::string()
              : fmt::format("  speculative ({}): {} of {} draft tokens accepted ({:.1f}%)\n", stats.speculative_method,
                            stats.num_accepted_draft_tokens, stats.num_draft_tokens,
                            100.0 * static_cast<double>(stats.num_accepted_draft_tokens) /
                                static_cast<double>(stats.num_draft_tokens)));
}

}  // namespace llaisys::offline
