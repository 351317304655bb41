#include "search/schedule_index.hpp"

#include <hnswlib/hnswlib.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"
#include "costmodel/model_files.hpp"

namespace sparsetune {

namespace {

// L2 between schedule projections while the graph is built; the head's score of the prepared
// matrix and a schedule while it is searched (the query argument is then unused).
struct DistanceState {
  size_t dim = 0;  // first: hnswlib reads the dimension from the start of the parameter
  bool use_head = false;
  const MlpHead* head = nullptr;
  std::vector<float> prepared;
  mutable int64_t evaluations = 0;
};

float Distance(const void* a, const void* b, const void* param) {
  const auto* state = static_cast<const DistanceState*>(param);
  const float* y = static_cast<const float*>(b);
  if (state->use_head) {
    ++state->evaluations;
    return state->head->ScoreProjected(state->prepared.data(), y);
  }
  const float* x = static_cast<const float*>(a);
  float sum = 0;
  for (size_t k = 0; k < state->dim; ++k) {
    const float d = x[k] - y[k];
    sum += d * d;
  }
  return sum;
}

class HeadSpace : public hnswlib::SpaceInterface<float> {
 public:
  explicit HeadSpace(size_t dim) { state.dim = dim; }
  size_t get_data_size() override { return state.dim * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &Distance; }
  void* get_dist_func_param() override { return &state; }
  DistanceState state;
};

std::string FileDigest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  StableHasher hasher;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) hasher.Update(buffer, in.gcount());
  return hasher.HexDigest();
}

}  // namespace

struct ScheduleIndex::Impl {
  std::unique_ptr<HeadSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  // Each schedule as the head's first layer sees it, W1[:, e:] s (n x dim): the graph's points,
  // and what a score needs of a schedule.
  std::vector<float> projections;
  MlpHead head;
  size_t dim = 0, n = 0;
  SearchOptions options;
};

ScheduleIndex::ScheduleIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScheduleIndex::~ScheduleIndex() = default;

size_t ScheduleIndex::size() const {
  return impl_->n;
}

std::unique_ptr<ScheduleIndex> ScheduleIndex::Open(CostModel& model, const std::string& cache_dir,
                                                   const SearchOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->head = MlpHead::Load(model.directory());
  impl->dim = static_cast<size_t>(impl->head.projection_size());
  impl->n = model.schedule_set().size();
  impl->space = std::make_unique<HeadSpace>(impl->dim);
  impl->space->state.head = &impl->head;

  // The graph depends on the embedder's and the head's weights and the schedule set only. A
  // cached graph holds the projections too, so the schedules need not be embedded again.
  const std::filesystem::path dir = model.directory();
  StableHasher key;
  key.UpdateString("projections-1");
  key.UpdateString(FileDigest((dir / kModelEmbedder).string()));
  key.UpdateString(FileDigest((dir / kModelHead).string()));
  key.UpdateString(FileDigest((dir / kModelSchedules).string()));
  key.UpdateU64(static_cast<uint64_t>(options.m));
  key.UpdateU64(static_cast<uint64_t>(options.ef_construction));
  EnsureDirectory(cache_dir);
  const std::string path = cache_dir + "/hnsw-" + key.HexDigest() + ".bin";
  if (std::filesystem::exists(path)) {
    try {
      impl->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(impl->space.get(), path, false,
                                                                     impl->n);
      if (impl->graph->cur_element_count != impl->n) throw std::runtime_error("another set");
      impl->projections.reserve(impl->n * impl->dim);
      for (size_t s = 0; s < impl->n; ++s) {
        const std::vector<float> p = impl->graph->getDataByLabel<float>(s);
        impl->projections.insert(impl->projections.end(), p.begin(), p.end());
      }
    } catch (const std::exception&) {
      impl->graph.reset();  // unreadable or stale: rebuilt below
      impl->projections.clear();
    }
  }
  if (!impl->graph) {
    auto waco = WacoTemplate::ForKernel(model.kernel());
    std::vector<ScheduleEncoding> encodings;
    for (const auto& s : model.schedule_set()) encodings.push_back(waco->Encode(s));
    const std::vector<float> embeddings = model.EmbedSchedules(encodings);
    const size_t e = static_cast<size_t>(model.embedding_size());
    impl->projections.reserve(impl->n * impl->dim);
    for (size_t s = 0; s < impl->n; ++s) {
      const std::vector<float> p = impl->head.ProjectSchedule(embeddings.data() + s * e);
      impl->projections.insert(impl->projections.end(), p.begin(), p.end());
    }
    impl->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
        impl->space.get(), std::max<size_t>(impl->n, 1), options.m, options.ef_construction);
    for (size_t s = 0; s < impl->n; ++s)
      impl->graph->addPoint(impl->projections.data() + s * impl->dim, s);
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    impl->graph->saveIndex(tmp);
    std::filesystem::rename(tmp, path);
  }
  return std::unique_ptr<ScheduleIndex>(new ScheduleIndex(std::move(impl)));
}

std::vector<RankedSchedule> ScheduleIndex::Search(const std::vector<float>& matrix, int k,
                                                  const std::function<bool(size_t)>& valid,
                                                  int64_t* evaluations) const {
  DistanceState& state = impl_->space->state;
  state.use_head = true;
  state.prepared = impl_->head.PrepareMatrix(matrix.data());
  state.evaluations = 0;
  std::vector<RankedSchedule> out;
  // Ask for more than k when filtering drops some; widen until k are found.
  for (size_t want = static_cast<size_t>(k); out.size() < size_t(k); want *= 4) {
    impl_->graph->setEf(std::max<size_t>(impl_->options.ef, want));
    auto queue = impl_->graph->searchKnn(matrix.data(), std::min(want, impl_->n));
    out.clear();
    std::vector<RankedSchedule> all;
    while (!queue.empty()) {
      all.push_back({queue.top().second, queue.top().first});
      queue.pop();
    }
    std::reverse(all.begin(), all.end());
    for (const auto& r : all) {
      if (static_cast<int>(out.size()) < k && (!valid || valid(r.index))) out.push_back(r);
    }
    if (want >= impl_->n) break;
  }
  if (evaluations) *evaluations = state.evaluations;
  state.use_head = false;
  return out;
}

std::vector<RankedSchedule> ScheduleIndex::Exhaustive(const std::vector<float>& matrix, int k,
                                                      const std::function<bool(size_t)>& valid) const {
  const std::vector<float> prepared = impl_->head.PrepareMatrix(matrix.data());
  std::vector<RankedSchedule> all;
  for (size_t s = 0; s < impl_->n; ++s) {
    if (valid && !valid(s)) continue;
    all.push_back({s, impl_->head.ScoreProjected(prepared.data(),
                                                 impl_->projections.data() + s * impl_->dim)});
  }
  const size_t keep = std::min(all.size(), static_cast<size_t>(k));
  std::partial_sort(all.begin(), all.begin() + keep, all.end(),
                    [](const RankedSchedule& a, const RankedSchedule& b) { return a.score < b.score; });
  all.resize(keep);
  return all;
}

std::vector<RankedSchedule> ScheduleIndex::Random(const std::vector<float>& matrix, int k,
                                                  const std::function<bool(size_t)>& valid,
                                                  std::mt19937_64& rng) const {
  const std::vector<float> prepared = impl_->head.PrepareMatrix(matrix.data());
  std::vector<size_t> order(impl_->n);
  for (size_t s = 0; s < impl_->n; ++s) order[s] = s;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<RankedSchedule> out;
  for (size_t s : order) {
    if (static_cast<int>(out.size()) >= k) break;
    if (valid && !valid(s)) continue;
    out.push_back({s, impl_->head.ScoreProjected(prepared.data(),
                                                 impl_->projections.data() + s * impl_->dim)});
  }
  return out;
}

}  // namespace sparsetune
