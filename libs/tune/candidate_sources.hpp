// Where the schedules measured on an operand come from: one interface over every source, so
// that tune, bench and collect gather them alike. Sources: FixedCSR, the rules taken from
// libraries, Scorch, GroupCOO, the cost model's top k, SparseAuto, sampled SuperSchedules.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/expression.hpp"
#include "tensor/coo.hpp"
#include "tune/candidates.hpp"

namespace sparsetune {

// What a source may look at.
struct CandidateContext {
  std::string kernel;      // a named kernel, or "" for an expression
  std::string kernel_key;  // the database's key of the kernel; seeds the sampler
  const Expression* expression = nullptr;
  std::map<std::string, int64_t> sizes;  // of every index
  const CooTensor* tensor = nullptr;     // the operand
  std::string fingerprint;
  std::vector<int64_t> prefix_nnz;  // the operand's PatternStats::prefix_nnz
  int64_t value_bytes = 4;          // of a value of the operands (the dtype's size)
  // What the sources asked before proposed (GatherCandidates sets it).
  const std::vector<TuneCandidate>* proposed = nullptr;
};

class CandidateSource {
 public:
  virtual ~CandidateSource() = default;
  // The tag stored with each measurement of the source's schedules.
  virtual std::string tag() const = 0;
  // What a progress display shows while the source works; "" for a source that takes no time.
  virtual std::string stage() const { return ""; }
  // The source's schedules, canonical, best first where the source ranks them; nullopt when it
  // has nothing to say about this kernel or operand.
  virtual std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) = 0;
};

// TACO's default CSR kernel, the baseline every speedup is measured against.
std::unique_ptr<CandidateSource> FixedCsrSource();
// LibraryRuleCandidates (tag "heuristic").
std::unique_ptr<CandidateSource> LibraryRuleSource();
// Scorch's millisecond heuristic schedule.
std::unique_ptr<CandidateSource> ScorchSource();
// GroupCooCandidates.
std::unique_ptr<CandidateSource> GroupCooSource();
// SparseAutoCandidates, at most `limit`; nothing for expressions SparseAuto cannot take.
std::unique_ptr<CandidateSource> SparseAutoSource(int limit);

struct SampleOptions {
  int samples = 100;
  uint64_t seed = 1;
  bool uniform = false;  // the whole WACO template, without the artifact's sub-spaces
  // Only schedules whose format the operand packs in (the measuring's padding cap): the packer
  // refuses half of the template's random points on many matrices (a dense level over a long
  // dimension), and a refused one is never measured, so `tune --samples N` would measure far
  // fewer than N. Redraws up to kMaxSampleDraws times `samples`. `collect` keeps the refusals.
  bool packable_only = false;
};
constexpr int kMaxSampleDraws = 10;
// Up to `samples` distinct valid sampled schedules, none of them FixedCSR. Deterministic in the
// seed, the kernel key and the fingerprint, so that a rerun finds the same ones. Kernels with a
// WACO template are sampled from it; others from the generic sampler.
std::unique_ptr<CandidateSource> SampledSource(const SampleOptions& options);

// The cost model's top k SuperSchedules for the operand, found by the HNSW search over the
// model's schedule set (only those valid for these sizes): k schedules that no earlier source
// proposed, so that the rules the model learned do not take the places of its own picks.
class ModelTopKSource : public CandidateSource {
 public:
  ModelTopKSource(std::string model_dir, int top_k, int search_ef);
  std::string tag() const override { return "model"; }
  std::string stage() const override { return "searching"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override;

  // After Propose: how long loading, embedding and searching took, and the head's evaluations.
  const std::map<std::string, double>& stage_ms() const { return stage_ms_; }
  int64_t evaluations() const { return evaluations_; }

 private:
  std::string model_dir_;
  int top_k_;
  int search_ef_;
  std::map<std::string, double> stage_ms_;
  int64_t evaluations_ = 0;
};

struct GatheredCandidates {
  std::vector<TuneCandidate> candidates;
  std::vector<std::string> sources_used;  // the tags of the sources that had something to say
};

// Asks each source in turn; a schedule two sources propose keeps the first one's tag. `stage`
// hears the stage of each source that names one.
GatheredCandidates GatherCandidates(const std::vector<CandidateSource*>& sources,
                                    const CandidateContext& context,
                                    const std::function<void(const std::string&)>& stage = {});

}  // namespace sparsetune
