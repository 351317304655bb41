// The schedules measured on one matrix: FixedCSR, then distinct sampled SuperSchedules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "ir/schedule.hpp"

namespace sparsetune {

struct Candidate {
  Schedule schedule;   // canonicalized
  std::string json;    // canonical JSON
  std::string hash;    // ScheduleHash(json), the database key
  std::string source;  // fixed_csr or sampled
};

struct CandidateOptions {
  int samples = 100;  // sampled schedules besides FixedCSR
  uint64_t seed = 1;
  bool uniform = false;  // the whole WACO template, without the artifact's sub-spaces
};

// FixedCSR and up to `samples` distinct valid sampled schedules. Deterministic in the seed,
// the kernel's name and the matrix's fingerprint, so that a rerun finds the same ones.
// Kernels with a WACO template are sampled from it; others from the generic sampler.
std::vector<Candidate> SampleCandidates(const std::string& kernel_name,
                                        const Expression& expression,
                                        const std::map<std::string, int64_t>& sizes,
                                        const std::string& fingerprint,
                                        const CandidateOptions& options);

}  // namespace sparsetune
