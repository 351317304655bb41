#include "tune/candidate_sources.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"
#include "base/threads.hpp"
#include "costmodel/cost_model.hpp"
#include "heuristic/scorch.hpp"
#include "ir/loop_nest.hpp"
#include "search/schedule_index.hpp"
#include "superschedule/random_schedule.hpp"
#include "superschedule/waco_template.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {

namespace {

std::optional<std::vector<TuneCandidate>> UnlessEmpty(std::vector<TuneCandidate> candidates) {
  if (candidates.empty()) return std::nullopt;
  return candidates;
}

// Whether the operand packs in the schedule's format under the padding cap that measuring
// applies (KernelRunner); a refused format is refused before its large arrays are made.
bool Packs(const Expression& e, const Schedule& schedule, const CooTensor& tensor) {
  const LowerOutcome lowered = Lower(e, schedule);
  if (!lowered.nest) return false;
  PackOptions options;
  options.narrow_coordinates = schedule.narrow_coordinates;
  return Pack(tensor, lowered.nest->storage, DType::kF32, options).packed != nullptr;
}

class FixedCsr : public CandidateSource {
 public:
  std::string tag() const override { return "fixed_csr"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    std::vector<TuneCandidate> out;
    AddDistinct(out, {FixedCsrSchedule(*context.expression), "", tag()});
    return out;
  }
};

class LibraryRules : public CandidateSource {
 public:
  std::string tag() const override { return "heuristic"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    return UnlessEmpty(LibraryRuleCandidates(context.kernel, *context.expression, context.sizes,
                                             context.tensor->nnz(), context.value_bytes,
                                             context.tensor));
  }
};

class Scorch : public CandidateSource {
 public:
  std::string tag() const override { return "scorch"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    HeuristicInput input;
    input.sizes = context.sizes;
    input.prefix_nnz = context.prefix_nnz;
    std::vector<TuneCandidate> out;
    AddDistinct(out, {ScorchSchedule(*context.expression, input).schedule, "", tag()});
    return out;
  }
};

class GroupCoo : public CandidateSource {
 public:
  std::string tag() const override { return "groupcoo"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    return UnlessEmpty(GroupCooCandidates(context.kernel, *context.expression, context.sizes,
                                          context.tensor->nnz()));
  }
};

class SparseAuto : public CandidateSource {
 public:
  explicit SparseAuto(int limit) : limit_(limit) {}
  std::string tag() const override { return "sparseauto"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    const Expression& e = *context.expression;
    try {
      return UnlessEmpty(SparseAutoCandidates(e, context.tensor->dims, context.prefix_nnz,
                                              DenseOnlySizes(e, context.sizes), limit_));
    } catch (const InputError&) {
      return std::nullopt;  // SparseAuto has nothing to say about this expression
    }
  }

 private:
  int limit_;
};

class Sampled : public CandidateSource {
 public:
  explicit Sampled(const SampleOptions& options) : options_(options) {}
  std::string tag() const override { return "sampled"; }
  std::optional<std::vector<TuneCandidate>> Propose(const CandidateContext& context) override {
    const Expression& e = *context.expression;
    std::set<std::string> seen = {FixedCsrSchedule(e).CanonicalJson()};
    StableHasher hasher;
    hasher.UpdateU64(options_.seed);
    hasher.UpdateString(context.kernel_key);
    hasher.UpdateString(context.fingerprint);
    std::mt19937_64 rng(hasher.Digest64());
    std::vector<Schedule> schedules;
    if (auto waco = WacoTemplate::ForKernel(context.kernel_key)) {
      WacoSampleOptions sample_options;
      sample_options.subspaces = !options_.uniform;
      const bool screen = options_.packable_only && context.tensor;
      int64_t drawn = 0;
      while (static_cast<int>(schedules.size()) < options_.samples &&
             drawn < int64_t(kMaxSampleDraws) * options_.samples) {
        const int wanted = options_.samples - static_cast<int>(schedules.size());
        const auto batch = waco->SampleDistinct(context.sizes, wanted, rng, sample_options, seen);
        if (batch.empty()) break;  // the space holds no more distinct points
        drawn += static_cast<int64_t>(batch.size());
        for (const auto& point : batch) {
          Schedule s = waco->ToSchedule(point);
          seen.insert(s.CanonicalJson());
          if (!screen || Packs(e, s, *context.tensor)) schedules.push_back(std::move(s));
        }
        if (!screen) break;
      }
    } else {
      GenericSampleOptions sample_options;
      sample_options.max_threads = HardwareThreads();
      // Small spaces run out of distinct valid schedules: stop after a long run of misses.
      int misses = 0;
      while (static_cast<int>(schedules.size()) < options_.samples &&
             misses < 200 + 20 * options_.samples) {
        Schedule s = SampleGenericSchedule(e, context.sizes, rng, sample_options);
        if (!Lower(e, s).nest || !seen.insert(s.CanonicalJson()).second) {
          ++misses;
          continue;
        }
        misses = 0;
        schedules.push_back(std::move(s));
      }
    }
    std::vector<TuneCandidate> out;
    for (Schedule& s : schedules) AddDistinct(out, {std::move(s), "", tag()});
    return out;
  }

 private:
  SampleOptions options_;
};

}  // namespace

std::unique_ptr<CandidateSource> FixedCsrSource() {
  return std::make_unique<FixedCsr>();
}
std::unique_ptr<CandidateSource> LibraryRuleSource() {
  return std::make_unique<LibraryRules>();
}
std::unique_ptr<CandidateSource> ScorchSource() {
  return std::make_unique<Scorch>();
}
std::unique_ptr<CandidateSource> GroupCooSource() {
  return std::make_unique<GroupCoo>();
}
std::unique_ptr<CandidateSource> SparseAutoSource(int limit) {
  return std::make_unique<SparseAuto>(limit);
}
std::unique_ptr<CandidateSource> SampledSource(const SampleOptions& options) {
  return std::make_unique<Sampled>(options);
}

ModelTopKSource::ModelTopKSource(std::string model_dir, int top_k, int search_ef)
    : model_dir_(std::move(model_dir)), top_k_(top_k), search_ef_(search_ef) {}

std::optional<std::vector<TuneCandidate>> ModelTopKSource::Propose(
    const CandidateContext& context) {
  const auto model_start = std::chrono::steady_clock::now();
  auto model = LoadCostModel(model_dir_, context.kernel);
  SearchOptions search;
  search.ef = search_ef_;
  auto index = ScheduleIndex::Open(*model, CacheDirectory() + "/search", search);
  stage_ms_["model_load"] = MsSince(model_start);
  const auto embed_start = std::chrono::steady_clock::now();
  const std::vector<float> embedding = model->EmbedMatrix(*context.tensor);
  stage_ms_["model_embed"] = MsSince(embed_start);
  auto waco = WacoTemplate::ForKernel(context.kernel);
  const auto& set = model->schedule_set();
  // Kernels an earlier source proposed, as they run here: points of the set that differ only in
  // what the schedule's canonical form drops (a balanced partition's chunk) or in how they name
  // every thread are the same kernel.
  std::set<std::string> taken;
  if (context.proposed) {
    for (const TuneCandidate& c : *context.proposed) taken.insert(KernelJsonHere(c.schedule));
  }
  const auto search_start = std::chrono::steady_clock::now();
  const auto ranked = index->Search(
      embedding, top_k_,
      [&](size_t s) {
        return waco->CheckMember(set[s], context.sizes).empty() &&
               !taken.count(KernelJsonHere(waco->ToSchedule(set[s])));
      },
      &evaluations_);
  stage_ms_["model_search"] = MsSince(search_start);
  std::vector<TuneCandidate> out;
  for (const auto& r : ranked) AddDistinct(out, {waco->ToSchedule(set[r.index]), "", tag()});
  stage_ms_["model"] = MsSince(model_start);
  return out;
}

GatheredCandidates GatherCandidates(const std::vector<CandidateSource*>& sources,
                                    const CandidateContext& context,
                                    const std::function<void(const std::string&)>& stage) {
  GatheredCandidates gathered;
  CandidateContext asking = context;
  asking.proposed = &gathered.candidates;
  for (CandidateSource* source : sources) {
    if (stage && !source->stage().empty()) stage(source->stage());
    std::optional<std::vector<TuneCandidate>> proposed = source->Propose(asking);
    if (!proposed) continue;
    gathered.sources_used.push_back(source->tag());
    for (TuneCandidate& c : *proposed) AddDistinct(gathered.candidates, std::move(c));
  }
  return gathered;
}

}  // namespace sparsetune
