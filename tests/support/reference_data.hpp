#pragma once
// The reference.json of a tiny-model fixture (tests/data/tiny-*/): prompts, the top-5 logits after
// every prompt position and 32 greedy steps, computed by an independent implementation (see the
// fixture's WEIGHTS.md), and the ways the tests compare a model's logits with them. Header-only, so
// that a test target can use it by include path alone (tests/unit/cuda compiles the qwen2 bindings
// that include it).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "llaisys/model/types.hpp"
#include "plugin_model.hpp"

namespace llaisys::test {

using Top5 = std::vector<std::pair<TokenId, float>>;  // highest first

struct ReferenceCase {
  std::string name;
  std::vector<TokenId> prompt_ids;
  std::vector<Top5> prompt_top5;     // [prompt length]: next-token logits after each prompt position
  std::vector<TokenId> greedy_tokens;  // [32]
  std::vector<Top5> greedy_top5;     // [32]: greedy_top5[s] belongs to position prompt_len - 1 + s
};

// The cases of `reference_json`, read once per process and path. Throws if the file cannot be read
// or has no cases.
const std::vector<ReferenceCase>& reference_cases(const std::filesystem::path& reference_json);

// Compares `logits` (a full row) with a reference top-5 within `tolerance`: the five reference ids'
// logits, and the ranking wherever neighbouring reference logits differ by more than the tolerance
// (a different id at rank 5 must be within tolerance of the reference's fifth logit). Returns an
// empty string when they agree, else what differs. `max_error` is raised to the largest difference.
std::string compare_top5(const std::vector<float>& logits, const Top5& reference, float tolerance,
                         float& max_error);

// Teacher forcing: feeds every case's prompt followed by its greedy tokens (the last one is never
// fed) to `model`, `chunk` tokens per forward pass, and calls `check(case, position, logits,
// reference)` for each reference row of each position: prompt_top5[p] while p is in the prompt and
// greedy_top5[p - (prompt length - 1)] from the prompt's last position on (that position has both).
using TeacherForcedCheck =
    std::function<void(const ReferenceCase&, int32_t position, const std::vector<float>& logits, const Top5& reference)>;
void for_each_teacher_forced_row(AnyModel& model, const std::vector<ReferenceCase>& cases, int32_t chunk,
                                 const TeacherForcedCheck& check);

// The k highest entries of a row, highest first (lower id first on ties).
Top5 top_k(const std::vector<float>& logits, int k);

// Implementation.

namespace reference_detail {
namespace json = boost::json;

inline Top5 parse_top5(const json::value& v) {
  Top5 out;
  for (const json::value& pair : v.as_array()) {
    out.emplace_back(static_cast<TokenId>(pair.as_array()[0].as_int64()),
                     static_cast<float>(pair.as_array()[1].to_number<double>()));
  }
  return out;
}

inline std::vector<ReferenceCase> load(const std::filesystem::path& reference_json) {
  std::ifstream in(reference_json);
  if (!in) throw std::runtime_error("cannot read " + reference_json.string());
  std::stringstream text;
  text << in.rdbuf();
  const json::value root = json::parse(text.str());
  std::vector<ReferenceCase> cases;
  for (const json::value& c : root.at("cases").as_array()) {
    ReferenceCase rc;
    rc.name = std::string(c.at("name").as_string());
    for (const json::value& id : c.at("prompt_ids").as_array()) rc.prompt_ids.push_back(static_cast<TokenId>(id.as_int64()));
    for (const json::value& t : c.at("prompt_top5").as_array()) rc.prompt_top5.push_back(parse_top5(t));
    for (const json::value& step : c.at("greedy").as_array()) {
      rc.greedy_tokens.push_back(static_cast<TokenId>(step.at("token").as_int64()));
      rc.greedy_top5.push_back(parse_top5(step.at("top5")));
    }
    cases.push_back(std::move(rc));
  }
  if (cases.empty()) throw std::runtime_error(reference_json.string() + " has no cases");
  return cases;
}

}  // namespace reference_detail

inline const std::vector<ReferenceCase>& reference_cases(const std::filesystem::path& reference_json) {
  static std::map<std::filesystem::path, std::vector<ReferenceCase>> loaded;
  auto it = loaded.find(reference_json);
  if (it == loaded.end()) it = loaded.emplace(reference_json, reference_detail::load(reference_json)).first;
  return it->second;
}

inline Top5 top_k(const std::vector<float>& logits, int k) {
  std::vector<TokenId> ids(logits.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TokenId>(i);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](TokenId a, TokenId b) {
    const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
    return la != lb ? la > lb : a < b;
  });
  Top5 out;
  for (int i = 0; i < k; ++i) out.emplace_back(ids[static_cast<std::size_t>(i)], logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])]);
  return out;
}

inline std::string compare_top5(const std::vector<float>& logits, const Top5& reference, float tolerance,
                                float& max_error) {
  std::string problems;
  const int n = static_cast<int>(reference.size());
  for (const auto& [id, ref_logit] : reference) {
    const float error = std::fabs(logits[static_cast<std::size_t>(id)] - ref_logit);
    max_error = std::max(max_error, error);
    if (!(error <= tolerance)) {
      problems += fmt::format(" token {}: logit {} vs reference {};", id, logits[static_cast<std::size_t>(id)], ref_logit);
    }
  }
  const Top5 ours = top_k(logits, n);
  for (int r = 0; r < n; ++r) {
    if (ours[static_cast<std::size_t>(r)].first == reference[static_cast<std::size_t>(r)].first) continue;
    const float here = reference[static_cast<std::size_t>(r)].second;
    const bool tie_above = r > 0 && reference[static_cast<std::size_t>(r - 1)].second - here <= tolerance;
    const bool tie_below = r + 1 < n && here - reference[static_cast<std::size_t>(r + 1)].second <= tolerance;
    // At the last rank a near-tie may be with the unlisted sixth: our id must be that close.
    const bool tie_unlisted = r + 1 == n && std::fabs(ours[static_cast<std::size_t>(r)].second - here) <= tolerance;
    if (!tie_above && !tie_below && !tie_unlisted) {
      problems += fmt::format(" rank {}: token {} ({}) where the reference has {} ({});", r + 1,
                              ours[static_cast<std::size_t>(r)].first, ours[static_cast<std::size_t>(r)].second,
                              reference[static_cast<std::size_t>(r)].first, here);
    }
  }
  return problems;
}

inline void for_each_teacher_forced_row(AnyModel& model, const std::vector<ReferenceCase>& cases, int32_t chunk,
                                        const TeacherForcedCheck& check) {
  for (const ReferenceCase& c : cases) {
    std::vector<TokenId> tokens = c.prompt_ids;
    tokens.insert(tokens.end(), c.greedy_tokens.begin(), c.greedy_tokens.end() - 1);
    const auto num_tokens = static_cast<int32_t>(tokens.size());
    const std::vector<BlockId> table = block_range(0, (num_tokens + 15) / 16);
    const auto prompt_len = static_cast<int32_t>(c.prompt_ids.size());
    for (int32_t start = 0; start < num_tokens; start += chunk) {
      const int32_t end = std::min(num_tokens, start + chunk);
      const auto rows = run_batch(model, {{.tokens = std::vector<TokenId>(tokens.begin() + start, tokens.begin() + end),
                                           .start = start,
                                           .table = table,
                                           .all_outputs = true}});
      for (int32_t p = start; p < end; ++p) {
        const std::vector<float>& logits = rows[static_cast<std::size_t>(p - start)];
        if (p < prompt_len) check(c, p, logits, c.prompt_top5[static_cast<std::size_t>(p)]);
        if (p >= prompt_len - 1) check(c, p, logits, c.greedy_top5[static_cast<std::size_t>(p - (prompt_len - 1))]);
      }
    }
  }
}

}  // namespace llaisys::test
