#include "collect/candidates.hpp"

#include <random>
#include <set>

#include "base/hash.hpp"
#include "base/threads.hpp"
#include "db/database.hpp"
#include "ir/loop_nest.hpp"
#include "superschedule/random_schedule.hpp"
#include "superschedule/waco_template.hpp"

namespace sparsetune {

std::vector<Candidate> SampleCandidates(const std::string& kernel_name,
                                        const Expression& expression,
                                        const std::map<std::string, int64_t>& sizes,
                                        const std::string& fingerprint,
                                        const CandidateOptions& options) {
  std::vector<Candidate> out;
  Candidate csr;
  csr.schedule = FixedCsrSchedule(expression);
  csr.source = "fixed_csr";
  out.push_back(csr);
  std::set<std::string> seen = {csr.schedule.CanonicalJson()};
  StableHasher hasher;
  hasher.UpdateU64(options.seed);
  hasher.UpdateString(kernel_name);
  hasher.UpdateString(fingerprint);
  std::mt19937_64 rng(hasher.Digest64());
  if (auto waco = WacoTemplate::ForKernel(kernel_name)) {
    WacoSampleOptions sample_options;
    sample_options.subspaces = !options.uniform;
    for (const auto& s : waco->SampleDistinct(sizes, options.samples, rng, sample_options, seen)) {
      Candidate c;
      c.schedule = waco->ToSchedule(s);
      c.source = "sampled";
      out.push_back(c);
    }
  } else {
    GenericSampleOptions sample_options;
    sample_options.max_threads = HardwareThreads();
    // Small spaces run out of distinct valid schedules: stop after a long run of misses.
    int misses = 0;
    while (static_cast<int>(out.size()) < options.samples + 1 &&
           misses < 200 + 20 * options.samples) {
      Candidate c;
      c.schedule = SampleGenericSchedule(expression, sizes, rng, sample_options);
      if (!Lower(expression, c.schedule).nest || !seen.insert(c.schedule.CanonicalJson()).second) {
        ++misses;
        continue;
      }
      misses = 0;
      c.source = "sampled";
      out.push_back(c);
    }
  }
  for (auto& c : out) {
    c.schedule.Canonicalize();
    c.json = c.schedule.CanonicalJson();
    c.hash = ScheduleHash(c.json);
  }
  return out;
}

}  // namespace sparsetune
