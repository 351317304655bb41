// Runs the tuned SpMV kernel that sparsetune emitted for a matrix, checks it against a plain
// CSR loop and times both. Usage: spmv_example [MATRIX.mtx]  (default: the matrix the build was
// tuned for)
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "sparsetune_spmv.h"

namespace {

// The value type the kernel was tuned with (float unless tuned with --dtype f64).
using Value = sparsetune_spmv_value;

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col_idx;
  std::vector<Value> values;
};

// A small Matrix Market reader: coordinate format, real, integer or pattern, general, symmetric
// or skew-symmetric. A pattern file's values are all 1, as the file says (a kernel tuned on it
// keeps one value, as tune timed it). Duplicate entries are summed (the emitted packer wants
// distinct ones).
Csr ReadMatrixMarket(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line, banner, object, format, field, symmetry;
  std::getline(in, line);
  std::istringstream(line) >> banner >> object >> format >> field >> symmetry;
  for (std::string* s : {&object, &format, &field, &symmetry})
    std::transform(s->begin(), s->end(), s->begin(), ::tolower);
  if (banner != "%%MatrixMarket" || object != "matrix" || format != "coordinate")
    throw std::runtime_error(path + ": not a Matrix Market coordinate matrix");
  if (field != "real" && field != "integer" && field != "pattern")
    throw std::runtime_error(path + ": field '" + field + "' is not supported");
  if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric")
    throw std::runtime_error(path + ": symmetry '" + symmetry + "' is not supported");
  while (std::getline(in, line) && (line.empty() || line[0] == '%')) {
  }
  Csr m;
  int64_t entries = 0;
  if (!(std::istringstream(line) >> m.rows >> m.cols >> entries))
    throw std::runtime_error(path + ": bad size line");
  std::vector<std::tuple<int64_t, int64_t, double>> coo;
  for (int64_t e = 0; e < entries; ++e) {
    int64_t r = 0, c = 0;
    double v = 0;
    if (!(in >> r >> c)) throw std::runtime_error(path + ": fewer entries than declared");
    if (field == "pattern") {
      v = 1.0;
    } else if (!(in >> v)) {
      throw std::runtime_error(path + ": entry " + std::to_string(e + 1) + " has no value");
    }
    if (r < 1 || r > m.rows || c < 1 || c > m.cols)
      throw std::runtime_error(path + ": entry " + std::to_string(e + 1) + " out of range");
    coo.emplace_back(r - 1, c - 1, v);
    if (symmetry != "general" && r != c)
      coo.emplace_back(c - 1, r - 1, symmetry == "symmetric" ? v : -v);
  }
  std::sort(coo.begin(), coo.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  m.row_ptr.assign(m.rows + 1, 0);
  for (size_t k = 0; k < coo.size(); ++k) {
    const auto [r, c, v] = coo[k];
    if (k > 0 && r == std::get<0>(coo[k - 1]) && c == std::get<1>(coo[k - 1])) {
      m.values.back() += static_cast<Value>(v);
      continue;
    }
    m.col_idx.push_back(static_cast<int32_t>(c));
    m.values.push_back(static_cast<Value>(v));
    ++m.row_ptr[r + 1];
  }
  for (int64_t r = 0; r < m.rows; ++r) m.row_ptr[r + 1] += m.row_ptr[r];
  return m;
}

// y = A x with one OpenMP loop over the rows: what a user writes without sparsetune.
void PlainCsr(const Csr& m, const Value* x, Value* y) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m.rows; ++i) {
    Value sum = 0;
    for (int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) sum += m.values[p] * x[m.col_idx[p]];
    y[i] = sum;
  }
}

// Microseconds per call of `call`: the median of 7 rounds, each of enough calls to take about
// 20 ms, after a warm-up round.
template <class Call>
double MicrosecondsPerCall(Call call) {
  using Clock = std::chrono::steady_clock;
  int64_t calls = 1;
  for (;;) {  // warm up, and find how many calls take 20 ms
    const auto start = Clock::now();
    for (int64_t k = 0; k < calls; ++k) call();
    if (Clock::now() - start > std::chrono::milliseconds(20) || calls >= (int64_t(1) << 20)) break;
    calls *= 2;
  }
  std::vector<double> rounds;
  for (int round = 0; round < 7; ++round) {
    const auto start = Clock::now();
    for (int64_t k = 0; k < calls; ++k) call();
    rounds.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                     double(calls));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : EXAMPLE_MATRIX;
  Csr m;
  try {
    m = ReadMatrixMarket(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmv_example: %s\n", e.what());
    return 2;
  }
  std::printf("%s: %lld x %lld, %lld nonzeros\n", path.c_str(), (long long)m.rows,
              (long long)m.cols, (long long)m.row_ptr[m.rows]);

  // Pack once into the tuned format (the ordering too, when the schedule renumbers); the
  // operand is reused for every compute call.
  const auto pack_start = std::chrono::steady_clock::now();
  sparsetune_spmv_operand* a =
      sparsetune_spmv_pack_csr(m.rows, m.cols, m.row_ptr.data(), m.col_idx.data(), m.values.data());
  if (!a) {
    std::fprintf(stderr, "spmv_example: pack failed: %s\n", sparsetune_spmv_last_error());
    return 1;
  }
  std::printf("packed in %.1f ms\n", std::chrono::duration<double, std::milli>(
                                         std::chrono::steady_clock::now() - pack_start)
                                         .count());
  if (sparsetune_spmv_output_size(a) != m.rows) {
    std::fprintf(stderr, "spmv_example: output size %lld, expected %lld\n",
                 (long long)sparsetune_spmv_output_size(a), (long long)m.rows);
    sparsetune_spmv_free(a);
    return 1;
  }
  // A non-constant x: a kernel that reads the wrong column gives a wrong y.
  std::vector<Value> x(m.cols), y(m.rows, std::numeric_limits<Value>::quiet_NaN());
  for (int64_t j = 0; j < m.cols; ++j)
    x[j] = static_cast<Value>(std::sin(0.37 * j) + 0.1 * (j % 5));
  const Value* inputs[] = {x.data()};
  const int status = sparsetune_spmv_compute(a, inputs, y.data());
  if (status != 0) {
    std::fprintf(stderr, "spmv_example: compute failed: %s\n", sparsetune_spmv_last_error());
    sparsetune_spmv_free(a);
    return 1;
  }

  // The reference in double; each row's error is taken relative to the magnitude of its terms,
  // and the tolerance allows the rounding of a sum of that many terms in Value.
  double max_error = 0;
  int64_t worst = 0, longest = 0;
  for (int64_t i = 0; i < m.rows; ++i) {
    double sum = 0, magnitude = 0;
    for (int64_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) {
      const double term = static_cast<double>(m.values[p]) * x[m.col_idx[p]];
      sum += term;
      magnitude += std::fabs(term);
    }
    longest = std::max(longest, m.row_ptr[i + 1] - m.row_ptr[i]);
    const double error = std::fabs(y[i] - sum) / std::max(1.0, magnitude);
    if (!(error <= max_error)) {  // also catches NaN: an output row never written
      max_error = std::isnan(error) ? std::numeric_limits<double>::infinity() : error;
      worst = i;
    }
  }
  const double tolerance = std::numeric_limits<Value>::epsilon() * (16 + longest);
  std::printf("max error %.3g (row %lld), tolerance %.3g\n", max_error, (long long)worst,
              tolerance);
  if (!(max_error <= tolerance)) {
    std::fprintf(stderr, "spmv_example: MISMATCH: the tuned kernel disagrees with CSR\n");
    sparsetune_spmv_free(a);
    return 1;
  }
  std::printf("OK: the tuned kernel matches the CSR loop\n");

  // Both on the same threads: the kernel's (OpenMP's, unless its schedule was tuned for one) for
  // the plain loop too. In the tuned order an iterative method skips the permutations a
  // renumbering schedule makes per call (a copy otherwise).
  const int threads = sparsetune_spmv_threads();
  omp_set_num_threads(threads);
  std::vector<Value> x_tuned(m.cols), y_tuned(m.rows);
  sparsetune_spmv_to_tuned_order_x(a, x.data(), x_tuned.data());
  const Value* tuned_inputs[] = {x_tuned.data()};
  const double tuned_us =
      MicrosecondsPerCall([&] { sparsetune_spmv_compute(a, inputs, y.data()); });
  const double tuned_order_us = MicrosecondsPerCall(
      [&] { sparsetune_spmv_compute_tuned_order(a, tuned_inputs, y_tuned.data()); });
  const double plain_us = MicrosecondsPerCall([&] { PlainCsr(m, x.data(), y.data()); });
  sparsetune_spmv_free(a);
  std::printf(
      "time per call on %d threads: tuned kernel %.1f us (%.1f us in the tuned order), "
      "plain CSR loop %.1f us\n",
      threads, tuned_us, tuned_order_us, plain_us);
  std::printf("speedup over the plain CSR loop: %.2fx\n", plain_us / tuned_us);
  return 0;
}
