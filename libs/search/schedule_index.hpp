// The search of WACO (section 3 of the digest): an HNSW graph (hnswlib) over a model's schedule
// set, built in L2 once per model and cached; a query walks it with the model's head as the
// distance, evaluated in plain C++ on [matrix embedding, schedule embedding]. Each schedule is
// stored as the head's first layer sees it (W1's schedule half times its embedding): the
// graph's geometry is then the head's, and a score costs the head's later layers only.
// Exhaustive scoring and random sampling are there to compare against.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "costmodel/cost_model.hpp"
#include "costmodel/head.hpp"

namespace sparsetune {

struct SearchOptions {
  int ef = 200;  // candidates kept while walking, as the artifact
  int m = 32;    // graph degree, as the artifact
  int ef_construction = 200;
};

// One ranked schedule: its index in the model's schedule set and its score (lower: faster).
struct RankedSchedule {
  size_t index = 0;
  float score = 0;
};

class ScheduleIndex {
 public:
  // Embeds and projects the model's schedule set and builds the graph, or loads it from
  // <cache_dir>/hnsw-<hash of the model files>.bin when it was built before.
  static std::unique_ptr<ScheduleIndex> Open(CostModel& model, const std::string& cache_dir,
                                             const SearchOptions& options = {});
  ~ScheduleIndex();

  size_t size() const;
  // The k best by the head, walking the graph; `valid` filters (schedules that do not fit this
  // matrix are skipped, and the walk widens until k are found or the graph is exhausted).
  // `evaluations` counts the head's evaluations.
  std::vector<RankedSchedule> Search(const std::vector<float>& matrix_embedding, int k,
                                     const std::function<bool(size_t)>& valid,
                                     int64_t* evaluations = nullptr) const;
  // Every schedule scored: the exact top k.
  std::vector<RankedSchedule> Exhaustive(const std::vector<float>& matrix_embedding, int k,
                                         const std::function<bool(size_t)>& valid) const;
  // k valid schedules drawn uniformly, scored.
  std::vector<RankedSchedule> Random(const std::vector<float>& matrix_embedding, int k,
                                     const std::function<bool(size_t)>& valid,
                                     std::mt19937_64& rng) const;

 private:
  struct Impl;
  explicit ScheduleIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsetune
