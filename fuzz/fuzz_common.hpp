#pragma once

// Shared by the fuzz targets: each input is parsed on one thread and in many small chunks on
// several threads, and both must end the same way (same tensor, or same error and line).

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "base/errors.hpp"
#include "io/read_internal.hpp"
#include "tensor/coo.hpp"

namespace sparsetune::fuzz {

struct Outcome {
  bool failed = false;
  std::string message;  // the InputError text
  CooTensor tensor;
};

inline Outcome Run(const std::function<CooTensor()>& parse) {
  Outcome outcome;
  try {
    outcome.tensor = parse();
  } catch (const InputError& e) {
    outcome.failed = true;
    outcome.message = e.what();
    if (outcome.message.find('\n') != std::string::npos) std::abort();  // one line only
  }
  return outcome;
}

inline bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

inline void CheckSame(const Outcome& a, const Outcome& b) {
  if (a.failed != b.failed || a.message != b.message) std::abort();
  if (a.failed) return;
  const CooTensor& x = a.tensor;
  const CooTensor& y = b.tensor;
  if (x.dims != y.dims || x.coords != y.coords || !SameBits(x.values, y.values) ||
      x.symmetry != y.symmetry || x.pattern_only != y.pattern_only ||
      x.duplicates_summed != y.duplicates_summed || x.explicit_zeros != y.explicit_zeros) {
    std::abort();
  }
  if (!x.IsCanonical()) std::abort();
  for (int m = 0; m < x.order(); ++m) {
    for (const int32_t c : x.coords[static_cast<size_t>(m)]) {
      if (c < 0 || c >= x.dims[static_cast<size_t>(m)]) std::abort();
    }
  }
}

inline io_internal::ParseOptions Sequential() {
  io_internal::ParseOptions options;
  options.threads = 1;
  return options;
}

inline io_internal::ParseOptions Chunked() {
  io_internal::ParseOptions options;
  options.threads = 3;
  options.min_chunk_bytes = 8;
  return options;
}

// Inflates inputs that look gzip-compressed, as reading a .gz file would; false when the
// compressed data is rejected.
inline bool MaybeGunzip(std::string_view* text, io_internal::Bytes* storage) {
  if (!io_internal::LooksGzipped(*text)) return true;
  try {
    *storage = io_internal::Gunzip(*text, "fuzz.gz", size_t(1) << 20);
  } catch (const InputError&) {
    return false;
  }
  *text = storage->view();
  return true;
}

}  // namespace sparsetune::fuzz
