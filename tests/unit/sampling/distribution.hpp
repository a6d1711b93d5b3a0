#pragma once
// Chi-square checks of sampled frequencies against expectations computed independently in double.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

namespace llaisys::sampling_test {

// Chi-square critical values at significance 0.001, by degrees of freedom.
inline double critical_value(std::size_t dof) {
  static const double table[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};
  return table[std::min<std::size_t>(dof, 7)];
}

inline std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(static_cast<double>(logits[i]) / temperature);
  for (double& x : p) x /= sum;
  return p;
}

inline std::vector<double> renormalized(std::vector<double> p, const std::vector<bool>& keep) {
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += keep[i] ? p[i] : 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = keep[i] ? p[i] / sum : 0.0;
  return p;
}

// Pearson's statistic over the tokens with non-zero expectation; tokens with zero expectation must
// never be drawn (returns infinity when one is).
inline double chi_square(const std::vector<int>& counts, const std::vector<double>& expected_p, std::size_t& dof) {
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double stat = 0;
  dof = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (expected_p[i] == 0.0) {
      if (counts[i] != 0) return INFINITY;
      continue;
    }
    const double e = n * expected_p[i];
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++dof;
  }
  dof -= 1;
  return stat;
}

// The counts follow `expected` (chi-square below the 0.001 critical value), and the test has power:
// the same counts are far from `unmodified` (the distribution the sampler's settings should change).
inline void check_chi_square(const std::vector<int>& counts, const std::vector<double>& expected,
                             const std::vector<double>& unmodified) {
  std::size_t dof = 0;
  const double stat = chi_square(counts, expected, dof);
  INFO("chi-square " << stat << " with " << dof << " degrees of freedom");
  CHECK(stat < critical_value(dof));
  std::size_t plain_dof = 0;
  const double plain = chi_square(counts, unmodified, plain_dof);
  INFO("against the unmodified distribution: " << plain);
  CHECK(plain > 5 * critical_value(plain_dof));
}

}  // namespace llaisys::sampling_test
