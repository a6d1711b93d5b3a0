#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "utf8.hpp"

namespace llaisys::text {
namespace {

// Per-thread match scratch: match data sized for group 0 and a JIT stack that can grow to 1 MiB, so
// heavy backtracking ends in an error instead of a stack overflow.
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_context* context = [this] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    if (c != nullptr && jit_stack != nullptr) pcre2_jit_stack_assign(c, nullptr, jit_stack);
    // Bounds for the interpreter (when JIT is unavailable): no pattern may run away.
    if (c != nullptr) pcre2_set_match_limit(c, 10'000'000);
    return c;
  }();
  MatchScratch() = default;
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch instance;
  return instance;
}

std::string error_text(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return std::string(reinterpret_cast<const char*>(buffer));
}

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern, bool caseless) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (caseless) options |= PCRE2_CASELESS;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                   &offset, nullptr);
  if (code == nullptr) {
    return make_error(ErrorCode::parse_error, "invalid regular expression at offset {}: {}", offset,
                      error_text(error));
  }
  std::shared_ptr<Regex> regex(new Regex());
  regex->code_ = code;
  regex->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return std::shared_ptr<const Regex>(std::move(regex));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Status Regex::find_all(std::string_view subject, std::vector<std::pair<uint32_t, uint32_t>>& matches) const {
  MatchScratch& s = scratch();
  if (s.data == nullptr || s.context == nullptr) return Status(ErrorCode::out_of_memory, "regex scratch allocation");
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* begin = reinterpret_cast<PCRE2_SPTR>(subject.data());
  PCRE2_SIZE start = 0;
  while (start <= subject.size()) {
    const int rc = jit_ ? pcre2_jit_match(code, begin, subject.size(), start, 0, s.data, s.context)
                        : pcre2_match(code, begin, subject.size(), start, PCRE2_NO_UTF_CHECK, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return make_error(ErrorCode::resource_exhausted, "regular expression failed: {}", error_text(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(s.data);
    const PCRE2_SIZE match_begin = ovector[0];
    const PCRE2_SIZE match_end = ovector[1];
    matches.emplace_back(static_cast<uint32_t>(match_begin), static_cast<uint32_t>(match_end));
    if (match_end > match_begin) {
      start = match_end;
    } else {
      if (match_end >= subject.size()) break;
      const std::size_t step = utf8::valid_sequence_length(subject, match_end);
      start = match_end + (step == 0 ? 1 : step);
    }
  }
  return Status::success();
}

}  // namespace llaisys::text
