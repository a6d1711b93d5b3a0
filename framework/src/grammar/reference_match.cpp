#include "llaisys/grammar/reference_match.hpp"

#include <map>
#include <set>
#include <utility>

namespace llaisys::grammar {
namespace {

using Ends = std::set<std::size_t>;

struct RefMatcher {
  const std::vector<ExprPtr>& rules;
  std::string_view text;
  std::map<std::pair<int32_t, std::size_t>, Ends> memo;
  std::set<std::pair<int32_t, std::size_t>> active;  // left recursion guard

  Ends match(const ExprPtr& e, std::size_t pos) {
    switch (e->kind) {
      case Expr::Kind::empty: return {pos};
      case Expr::Kind::nothing: return {};
      case Expr::Kind::bytes:
        if (pos < text.size() && e->set.test(static_cast<uint8_t>(text[pos]))) return {pos + 1};
        return {};
      case Expr::Kind::seq: {
        Ends current{pos};
        for (const ExprPtr& c : e->children) {
          Ends next;
          for (const std::size_t p : current) {
            Ends r = match(c, p);
            next.insert(r.begin(), r.end());
          }
          current = std::move(next);
          if (current.empty()) break;
        }
        return current;
      }
      case Expr::Kind::alt: {
        Ends out;
        for (const ExprPtr& c : e->children) {
          Ends r = match(c, pos);
          out.insert(r.begin(), r.end());
        }
        return out;
      }
      case Expr::Kind::repeat: {
        Ends out;
        Ends current{pos};
        Ends seen{pos};
        if (e->min == 0) out.insert(pos);
        for (int64_t count = 1; !current.empty(); ++count) {
          if (e->max != kUnbounded && count > e->max) break;
          Ends next;
          for (const std::size_t p : current) {
            Ends r = match(e->children[0], p);
            next.insert(r.begin(), r.end());
          }
          if (count >= e->min) out.insert(next.begin(), next.end());
          // Past the minimum, positions already reached add nothing new (the loop must end).
          if (count >= e->min) {
            Ends fresh;
            for (const std::size_t p : next) {
              if (seen.insert(p).second) fresh.insert(p);
            }
            current = std::move(fresh);
          } else {
            current = std::move(next);
          }
          if (count > static_cast<int64_t>(text.size()) + e->min + 1) break;
        }
        return out;
      }
      case Expr::Kind::ref: {
        const auto key = std::make_pair(e->rule, pos);
        if (auto it = memo.find(key); it != memo.end()) return it->second;
        if (e->rule < 0 || static_cast<std::size_t>(e->rule) >= rules.size() || !rules[e->rule]) return {};
        if (!active.insert(key).second) return {};
        Ends r = match(rules[static_cast<std::size_t>(e->rule)], pos);
        active.erase(key);
        memo[key] = r;
        return r;
      }
    }
    return {};
  }
};

}  // namespace

bool reference_match(const std::vector<ExprPtr>& rules, int32_t root, std::string_view text) {
  if (root < 0 || static_cast<std::size_t>(root) >= rules.size()) return false;
  RefMatcher m{.rules = rules, .text = text, .memo = {}, .active = {}};
  const Ends ends = m.match(ref(root), 0);
  return ends.contains(text.size());
}

}  // namespace llaisys::grammar
