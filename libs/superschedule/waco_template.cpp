#include "superschedule/waco_template.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "base/errors.hpp"
#include "base/threads.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"

namespace sparsetune {

namespace {

constexpr int kSparseSplitValues = 17;  // log2 0..16, WACO's embedding table
constexpr int kDenseSplitValues = 8;    // log2 0..7
constexpr int kSubspaceMaxLog2 = 5;     // the artifact's sub-spaces split A's modes by 1..32
constexpr int64_t kWideInner = 8;       // a dense inner loop of 8+ iterations may move outwards
constexpr int kMaxLog2Unroll = 3;       // partial sums: 1, 2, 4, 8

int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive, portable
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

bool IsPowerOfTwo(int64_t v) {
  return v >= 1 && (v & (v - 1)) == 0;
}

int Log2(int64_t v) {
  int l = 0;
  while ((int64_t(1) << (l + 1)) <= v) ++l;
  return l;
}

const char* KindText(LevelKind kind) {
  return LevelKindLetter(kind);
}

// Format ids of the encoding: C = 0, U = 1 (the artifact's convention), S = 2.
int FormatId(LevelKind kind) {
  return kind == LevelKind::kCompressed ? 0 : kind == LevelKind::kDense ? 1 : 2;
}

constexpr int kMaxLog2Lanes = 5;  // sliced SpMV: 2 to 32 rows per slice

std::string JoinNames(const std::vector<std::string>& items) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) out += (k ? " " : "") + items[k];
  return out;
}

}  // namespace

struct WacoTemplate::Spec {
  std::string kernel;
  int max_log2_chunk = 8;
  std::vector<std::string> parallel_candidates;  // the first of these in loop order is parallel
  std::string inner_dense;                       // this index's x0 is innermost ("": none)
  std::string dense_after;  // inner_dense's x1 comes after this index's x1 ("": none)
  bool exclude_all_u = false;
  double subspace_fraction = 0;
  // Share of samples from the sliced family (SELL-C): rows in slices of i0 lanes, A stored
  // i1:U k:S i0:U, loop order i1 k i0 (spmv only).
  double sliced_fraction = 0;
  // A dense input the kernel may read through a transposed copy ("": none).
  std::string transposable;
  std::vector<std::vector<std::string>> subspace_orders;
  std::map<std::string, LevelKind> subspace_formats;  // fixed formats; the others are drawn
};

nlohmann::json SuperSchedule::ToJson() const {
  nlohmann::json j;
  j["splits"] = splits;
  j["order"] = order;
  j["formats"] = nlohmann::json::array();
  for (LevelKind kind : formats) j["formats"].push_back(KindText(kind));
  j["parallel"] = parallel;
  j["chunk"] = chunk;
  j["threads"] = threads;
  j["partition"] = PartitionName(partition);
  j["unroll"] = unroll;
  j["narrow"] = narrow;
  j["transposed"] = transposed;
  return j;
}

std::vector<float> ScheduleEncoding::Flat(int num_splits) const {
  std::vector<float> out;
  for (int k = 0; k < num_splits; ++k) out.push_back(float(categorical[k]));
  out.insert(out.end(), order.begin(), order.end());
  for (size_t k = num_splits; k < categorical.size(); ++k) out.push_back(float(categorical[k]));
  return out;
}

int WacoTemplate::Version() {
  return 4;  // 2: threads, partition, unroll, coordinate width; 3: sliced SpMV; 4: SDDMM's C^T
}

const std::vector<std::string>& WacoTemplate::Kernels() {
  static const std::vector<std::string> kernels = {"spmv", "spmm", "sddmm", "sddmm_nt", "mttkrp"};
  return kernels;
}

std::unique_ptr<WacoTemplate> WacoTemplate::ForKernel(const std::string& kernel) {
  Spec spec;
  spec.kernel = kernel;
  const LevelKind U = LevelKind::kDense, C = LevelKind::kCompressed;
  if (kernel == "spmv") {
    spec.parallel_candidates = {"i1"};
    spec.sliced_fraction = 0.25;
  } else if (kernel == "spmm") {
    spec.parallel_candidates = {"i1"};
    spec.inner_dense = "j";
    spec.dense_after = "i";
    spec.subspace_fraction = 0.32;
    spec.subspace_orders = {{"i1", "k1", "j1", "i0", "k0", "j0"}};
    spec.subspace_formats = {{"i0", U}, {"k1", C}, {"k0", U}};
  } else if (kernel == "sddmm" || kernel == "sddmm_nt") {
    spec.max_log2_chunk = 5;
    // sddmm's C(k,j) is row-major, so its k0 loop is strided unless C is transposed;
    // sddmm_nt's C(j,k) is already contiguous in k.
    if (kernel == "sddmm") spec.transposable = "C";
    spec.parallel_candidates = {"i1", "j1"};
    spec.inner_dense = "k";
    spec.exclude_all_u = true;
    spec.subspace_fraction = 0.68;
    spec.subspace_orders = {{"i1", "j1", "k1", "i0", "j0", "k0"},
                            {"j1", "i1", "k1", "j0", "i0", "k0"},
                            {"i1", "j1", "k1", "j0", "i0", "k0"},
                            {"j1", "i1", "k1", "i0", "j0", "k0"}};
    spec.subspace_formats = {{"i0", U}, {"j0", U}};
  } else if (kernel == "mttkrp") {
    spec.parallel_candidates = {"i1"};
    spec.inner_dense = "j";
    spec.dense_after = "i";
    spec.exclude_all_u = true;
    spec.subspace_fraction = 0.32;
    spec.subspace_orders = {{"i1", "k1", "l1", "i0", "k0", "l0", "j1", "j0"}};
    spec.subspace_formats = {{"k1", C}, {"l1", C}, {"i0", U}, {"k0", U}, {"l0", U}};
  } else {
    return nullptr;
  }
  return std::unique_ptr<WacoTemplate>(new WacoTemplate(spec));
}

WacoTemplate::WacoTemplate(const Spec& spec)
    : spec_(std::make_unique<Spec>(spec)),
      kernel_(spec.kernel),
      expression_(KernelExpression(spec.kernel)),
      max_log2_chunk_(spec.max_log2_chunk) {
  indices_ = expression_.sparse_input().indices;
  for (const auto& index : expression_.DenseOnlyIndices()) indices_.push_back(index);
  for (const auto& index : indices_) {
    variables_.push_back(SplitVarName(index, SplitPart::kOuter));
    variables_.push_back(SplitVarName(index, SplitPart::kInner));
  }
  level_variables_.assign(variables_.begin(),
                          variables_.begin() + 2 * expression_.sparse_input().indices.size());
}

WacoTemplate::~WacoTemplate() = default;

int WacoTemplate::VarId(const std::string& var) const {
  auto it = std::find(variables_.begin(), variables_.end(), var);
  return it == variables_.end() ? -1 : static_cast<int>(it - variables_.begin());
}

bool WacoTemplate::IsDense(const std::string& index) const {
  return !expression_.IsSparseIndex(index);
}

int WacoTemplate::SplitCardinality(const std::string& index) const {
  return IsDense(index) ? kDenseSplitValues : kSparseSplitValues;
}

int WacoTemplate::MaxLog2Split(const std::string& index,
                               const std::map<std::string, int64_t>& sizes) const {
  auto it = sizes.find(index);
  if (it == sizes.end()) throw InputError("no size for index " + index);
  // Split sizes up to half the extent: 2^0 .. 2^(floor(log2 dim) - 1), as the artifact.
  const int top = it->second >= 2 ? Log2(it->second) - 1 : 0;
  return std::clamp(top, 0, SplitCardinality(index) - 1);
}

bool WacoTemplate::FullOrderAllowed(const std::vector<int>& position,
                                    const std::map<std::string, int64_t>& splits) const {
  const int n = static_cast<int>(variables_.size());
  for (size_t t = 0; t < indices_.size(); ++t) {
    const int outer = position[2 * t], inner = position[2 * t + 1];
    if (outer > inner) return false;
    if (splits.at(indices_[t]) == 1 && inner != outer + 1) return false;  // normal form
  }
  if (!spec_->inner_dense.empty()) {
    const int d = VarId(spec_->inner_dense + "1");
    if (position[d + 1] != n - 1) return false;
    if (splits.at(spec_->inner_dense) < kWideInner && position[d] != n - 2) return false;
    if (!spec_->dense_after.empty() && position[d] < position[VarId(spec_->dense_after + "1")])
      return false;
  }
  return true;
}

const std::vector<std::vector<int>>& WacoTemplate::ValidOrders(
    const std::map<std::string, int64_t>& splits) const {
  // The rules only look at which indices are unsplit and whether the dense inner split is wide.
  std::string key;
  for (const auto& index : indices_) key += splits.at(index) == 1 ? '1' : 's';
  if (!spec_->inner_dense.empty()) key += splits.at(spec_->inner_dense) < kWideInner ? 'n' : 'w';
  std::lock_guard<std::mutex> lock(orders_mutex_);
  auto it = orders_.find(key);
  if (it != orders_.end()) return it->second;
  std::vector<std::vector<int>> valid;
  std::vector<int> order(variables_.size());  // order[pos] = variable id
  std::iota(order.begin(), order.end(), 0);
  std::vector<int> position(order.size());
  do {
    for (size_t p = 0; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);
    if (FullOrderAllowed(position, splits)) valid.push_back(order);
  } while (std::next_permutation(order.begin(), order.end()));
  return orders_.emplace(key, std::move(valid)).first->second;
}

std::string WacoTemplate::ParallelFor(const std::vector<std::string>& order) const {
  for (const auto& var : order) {
    if (std::find(spec_->parallel_candidates.begin(), spec_->parallel_candidates.end(), var) !=
        spec_->parallel_candidates.end())
      return var;
  }
  return spec_->parallel_candidates.front();
}

void WacoTemplate::Normalize(SuperSchedule& s) const {
  if (s.partition == Partition::kBalanced) s.chunk = 1;
  if (s.unroll > 1 && !s.order.empty() && s.formats.size() == level_variables_.size() &&
      !HasPartialSums(s))
    s.unroll = 1;
  for (const auto& index : indices_) {
    auto split = s.splits.find(index);
    if (split == s.splits.end() || split->second != 1) continue;
    const std::string outer = SplitVarName(index, SplitPart::kOuter);
    const std::string inner = SplitVarName(index, SplitPart::kInner);
    auto at = std::find(s.order.begin(), s.order.end(), inner);
    if (at == s.order.end()) continue;
    s.order.erase(at);
    auto o = std::find(s.order.begin(), s.order.end(), outer);
    s.order.insert(o == s.order.end() ? o : o + 1, inner);
    const int level = VarId(inner);
    if (level >= 0 && level < static_cast<int>(s.formats.size()) &&
        level < static_cast<int>(level_variables_.size()))
      s.formats[level] = LevelKind::kDense;
  }
}

void WacoTemplate::SampleCodeChoices(SuperSchedule& s, std::mt19937_64& rng, int threads) const {
  s.threads = rng() % 4 == 0 ? 1 : threads;
  s.partition = rng() % 2 ? Partition::kBalanced : Partition::kDynamic;
  s.unroll = 1 << UniformInt(rng, 0, kMaxLog2Unroll);
  s.narrow = true;
  s.transposed = !spec_->transposable.empty() && rng() % 2 == 0;
  Normalize(s);
}

bool WacoTemplate::HasPartialSums(const SuperSchedule& s) const {
  SuperSchedule probe = s;
  probe.unroll = 2;
  LowerOutcome lowered = Lower(expression_, ToSchedule(probe));
  if (!lowered.nest) return false;
  std::function<bool(const NestNode&)> visit = [&](const NestNode& n) {
    if (n.kind == NestNode::Kind::kLoop && n.unroll > 1) return true;
    for (const auto& c : n.children) {
      if (visit(*c)) return true;
    }
    return false;
  };
  return visit(*lowered.nest->root);
}

SuperSchedule WacoTemplate::SampleFull(const std::map<std::string, int64_t>& sizes,
                                       std::mt19937_64& rng, int threads) const {
  SuperSchedule s;
  for (const auto& index : indices_)
    s.splits[index] = int64_t(1) << UniformInt(rng, 0, MaxLog2Split(index, sizes));
  const auto& orders = ValidOrders(s.splits);
  const auto& order = orders[UniformInt(rng, 0, int64_t(orders.size()) - 1)];
  for (int id : order) s.order.push_back(variables_[id]);
  while (true) {
    s.formats.clear();
    bool all_u = true;
    for (size_t v = 0; v < level_variables_.size(); ++v) {
      const bool trivial = v % 2 == 1 && s.splits.at(indices_[v / 2]) == 1;
      const LevelKind kind = trivial || rng() % 2 ? LevelKind::kDense : LevelKind::kCompressed;
      all_u &= kind == LevelKind::kDense;
      s.formats.push_back(kind);
    }
    if (!(spec_->exclude_all_u && all_u)) break;
  }
  s.parallel = ParallelFor(s.order);
  s.chunk = int64_t(1) << UniformInt(rng, 0, max_log2_chunk_);
  SampleCodeChoices(s, rng, threads);
  return s;
}

SuperSchedule WacoTemplate::SampleSliced(const std::map<std::string, int64_t>& sizes,
                                         std::mt19937_64& rng, int threads) const {
  SuperSchedule s;
  const std::string& rows = indices_[0];
  const std::string& cols = indices_[1];
  const int top = std::min(MaxLog2Split(rows, sizes), kMaxLog2Lanes);
  s.splits[rows] = int64_t(1) << UniformInt(rng, 1, top);
  s.splits[cols] = 1;
  s.order = {rows + "1", cols + "1", cols + "0", rows + "0"};
  s.formats.assign(level_variables_.size(), LevelKind::kDense);
  s.formats[VarId(cols + "1")] = LevelKind::kSliced;
  s.parallel = ParallelFor(s.order);
  s.chunk = int64_t(1) << UniformInt(rng, 0, max_log2_chunk_);
  SampleCodeChoices(s, rng, threads);
  return s;
}

std::string WacoTemplate::CheckSliced(const SuperSchedule& s,
                                      const std::map<std::string, int64_t>& sizes) const {
  if (spec_->sliced_fraction == 0) return "the template has no sliced formats";
  const std::string& rows = indices_[0];
  const std::string& cols = indices_[1];
  const int lanes = Log2(s.splits.at(rows));
  if (lanes < 1 || lanes > std::min(MaxLog2Split(rows, sizes), kMaxLog2Lanes))
    return "a sliced format needs 2 to 32 lanes";
  if (s.splits.at(cols) != 1) return "a sliced format keeps " + cols + " whole";
  if (s.order != std::vector<std::string>{rows + "1", cols + "1", cols + "0", rows + "0"})
    return "a sliced format needs the loop order " + rows + "1 " + cols + " " + rows + "0";
  for (size_t v = 0; v < level_variables_.size(); ++v) {
    const bool s_level = level_variables_[v] == cols + "1";
    if ((s.formats[v] == LevelKind::kSliced) != s_level ||
        (!s_level && s.formats[v] != LevelKind::kDense))
      return "a sliced format is " + rows + "1:U " + cols + ":S " + rows + "0:U";
  }
  if (Log2(s.chunk) > max_log2_chunk_) return "chunk out of range";
  return "";
}

SuperSchedule WacoTemplate::SampleSubspace(const std::map<std::string, int64_t>& sizes,
                                           std::mt19937_64& rng, int threads) const {
  SuperSchedule s;
  for (const auto& index : indices_) {
    int top = MaxLog2Split(index, sizes);
    if (!IsDense(index)) top = std::min(top, kSubspaceMaxLog2);
    s.splits[index] = int64_t(1) << UniformInt(rng, 0, top);
  }
  const auto& orders = spec_->subspace_orders;
  s.order = orders[UniformInt(rng, 0, int64_t(orders.size()) - 1)];
  while (true) {
    s.formats.clear();
    bool all_u = true;
    for (const auto& var : level_variables_) {
      auto fixed = spec_->subspace_formats.find(var);
      const LevelKind kind = fixed != spec_->subspace_formats.end() ? fixed->second
                             : rng() % 2                            ? LevelKind::kDense
                                                                    : LevelKind::kCompressed;
      s.formats.push_back(kind);
    }
    Normalize(s);
    for (LevelKind kind : s.formats) all_u &= kind == LevelKind::kDense;
    if (!(spec_->exclude_all_u && all_u)) break;
  }
  s.parallel = ParallelFor(s.order);
  s.chunk = int64_t(1) << UniformInt(rng, 0, max_log2_chunk_);
  SampleCodeChoices(s, rng, threads);
  return s;
}

SuperSchedule WacoTemplate::Sample(const std::map<std::string, int64_t>& sizes,
                                   std::mt19937_64& rng, const WacoSampleOptions& options) const {
  const int threads = options.threads > 0 ? options.threads : HardwareThreads();
  std::string last_error;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    // The branch draw comes first so that a seed picks the same branch on every machine.
    const double branch = double(rng() % 1000000) / 1e6;
    const bool subspace = options.subspaces && branch < spec_->subspace_fraction;
    const bool sliced = !subspace && branch < spec_->subspace_fraction + spec_->sliced_fraction &&
                        MaxLog2Split(indices_[0], sizes) >= 1;
    SuperSchedule s = subspace ? SampleSubspace(sizes, rng, threads)
                      : sliced ? SampleSliced(sizes, rng, threads)
                               : SampleFull(sizes, rng, threads);
    LowerOutcome lowered = Lower(expression_, ToSchedule(s));
    if (lowered.nest) return s;
    last_error = lowered.error;
  }
  throw InternalError("the " + kernel_ +
                      " template produced no schedule that lowers: " + last_error);
}

std::vector<SuperSchedule> WacoTemplate::Neighbours(const SuperSchedule& s,
                                                    const std::map<std::string, int64_t>& sizes,
                                                    std::vector<std::string>* moves) const {
  std::vector<SuperSchedule> out;
  if (moves) moves->clear();
  auto member = [&](SuperSchedule& n) {
    n.parallel = ParallelFor(n.order);
    Normalize(n);
    return CheckMember(n, sizes).empty();
  };
  // All threads are written as their count (a rule's 0 means the same), so that no neighbour
  // repeats another's code under another name.
  const int threads = s.threads > 1 ? s.threads : HardwareThreads();
  SuperSchedule base = s;
  if (base.threads != 1) base.threads = threads;
  auto add = [&](SuperSchedule n, const std::string& move) {
    if (!member(n) || n == s || n == base || std::find(out.begin(), out.end(), n) != out.end())
      return;
    if (!Lower(expression_, ToSchedule(n)).nest) return;
    out.push_back(std::move(n));
    if (moves) moves->push_back(move);
  };
  for (const auto& index : indices_) {
    const int log = Log2(s.splits.at(index));
    for (int step : {-2, -1, 1, 2}) {
      const int to = log + step;
      if (to < 0 || to > MaxLog2Split(index, sizes)) continue;
      const std::string move = "split " + index + (step > 0 ? " up" : " down");
      SuperSchedule n = base;
      n.splits[index] = int64_t(1) << to;
      if (member(n)) {
        add(std::move(n), move);
        continue;
      }
      // A narrow dense inner split keeps its outer loop next to it: move it there.
      const std::string outer = SplitVarName(index, SplitPart::kOuter);
      const std::string inner = SplitVarName(index, SplitPart::kInner);
      n.order.erase(std::find(n.order.begin(), n.order.end(), outer));
      n.order.insert(std::find(n.order.begin(), n.order.end(), inner), outer);
      add(std::move(n), move);
    }
  }
  // One split doubled and another halved: a register tile of the same size in another shape
  // (4 rows x 64 columns to 8 x 32), where doubling one alone would spill.
  for (const auto& grow : indices_) {
    for (const auto& shrink : indices_) {
      const int grow_log = Log2(s.splits.at(grow)), shrink_log = Log2(s.splits.at(shrink));
      if (grow == shrink || shrink_log < 1 || grow_log + 1 > MaxLog2Split(grow, sizes)) continue;
      SuperSchedule n = base;
      n.splits[grow] *= 2;
      n.splits[shrink] /= 2;
      add(std::move(n), "reshape");
    }
  }
  for (size_t p = 0; p + 1 < s.order.size(); ++p) {
    SuperSchedule n = base;
    std::swap(n.order[p], n.order[p + 1]);
    add(std::move(n), "order");
  }
  for (size_t v = 0; v < s.formats.size(); ++v) {
    if (s.formats[v] == LevelKind::kSliced) continue;
    SuperSchedule n = base;
    n.formats[v] = s.formats[v] == LevelKind::kDense ? LevelKind::kCompressed : LevelKind::kDense;
    add(std::move(n), "format");
  }
  {
    SuperSchedule n = base;
    n.partition = s.partition == Partition::kBalanced ? Partition::kDynamic : Partition::kBalanced;
    add(n, "partition");
    if (n.partition == Partition::kDynamic) {
      n.chunk = 16;
      add(n, "partition");
    }
  }
  if (s.partition == Partition::kDynamic) {
    for (int64_t chunk : {s.chunk / 4, s.chunk * 4}) {
      if (chunk < 1 || Log2(chunk) > max_log2_chunk_) continue;
      SuperSchedule n = base;
      n.chunk = chunk;
      add(std::move(n), "chunk");
    }
  }
  for (int unroll : {s.unroll / 2, s.unroll * 2}) {
    if (unroll < 1) continue;
    SuperSchedule n = base;
    n.unroll = unroll;
    add(std::move(n), "unroll");
  }
  {
    SuperSchedule n = base;
    n.threads = base.threads == 1 ? threads : 1;
    add(std::move(n), "threads");
  }
  if (!spec_->transposable.empty()) {
    SuperSchedule n = base;
    n.transposed = !s.transposed;
    add(std::move(n), "transpose");
  }
  return out;
}

std::vector<SuperSchedule> WacoTemplate::SampleDistinct(
    const std::map<std::string, int64_t>& sizes, int count, std::mt19937_64& rng,
    const WacoSampleOptions& options, const std::set<std::string>& exclude) const {
  std::vector<SuperSchedule> out;
  std::set<std::string> seen = exclude;
  // Small tensors have small spaces: stop after many consecutive repeats.
  int misses = 0;
  while (static_cast<int>(out.size()) < count && misses < 200 + 20 * count) {
    SuperSchedule s = Sample(sizes, rng, options);
    if (seen.insert(ToSchedule(s).CanonicalJson()).second) {
      out.push_back(std::move(s));
      misses = 0;
    } else {
      ++misses;
    }
  }
  return out;
}

Schedule WacoTemplate::ToSchedule(const SuperSchedule& s) const {
  Schedule out;
  for (const auto& [index, size] : s.splits) out.splits[index] = size;
  out.root.loops = s.order;
  for (const auto& var : s.order) {
    const int id = VarId(var);
    if (id >= 0 && id < static_cast<int>(level_variables_.size()) &&
        id < static_cast<int>(s.formats.size()))
      out.format.emplace_back(var, s.formats[id]);
  }
  out.parallel = s.parallel;
  out.chunk = s.chunk;
  out.threads = s.threads;
  out.partition = s.partition;
  out.unroll = s.unroll;
  out.narrow_coordinates = s.narrow;
  if (s.transposed) out.transposed = {spec_->transposable};
  out.Canonicalize();
  return out;
}

std::optional<SuperSchedule> WacoTemplate::FromSchedule(const Schedule& schedule,
                                                        std::string* error) const {
  auto fail = [&](const std::string& why) -> std::optional<SuperSchedule> {
    if (error) *error = why;
    return std::nullopt;
  };
  Schedule c = schedule;
  c.Canonicalize();
  if (c.root.is_where() || !c.root.compute.empty())
    return fail("a branched schedule is not a " + kernel_ + " SuperSchedule");
  // Choices the encoding has no slot for: a point without them would stand for another kernel.
  if (!c.groups.empty()) return fail("grouped levels are not in the template");
  if (c.prefetch != 0) return fail("prefetching is not in the template");
  if (c.merge_runs) return fail("merged runs are not in the template");
  // A fact of the operand (its values all equal), not a choice: its times are not the point's.
  if (c.uniform_values) return fail("one value for every entry is not in the template");
  if (c.ordering != OrderingKind::kNone) return fail("orderings are not in the template");
  SuperSchedule s;
  for (const auto& index : indices_) s.splits[index] = 1;
  for (const auto& [index, size] : c.splits) {
    if (!s.splits.count(index)) return fail("split of unknown index " + index);
    if (!IsPowerOfTwo(size))
      return fail("split of " + index + " is " + std::to_string(size) + ", not a power of two");
    if (Log2(size) >= SplitCardinality(index))
      return fail("split of " + index + " is " + std::to_string(size) + ", over the template's " +
                  std::to_string(int64_t(1) << (SplitCardinality(index) - 1)));
    s.splits[index] = size;
  }
  // An unsplit index x appears as x; its slots are x1 (the loop) and x0 (one iteration) next
  // to it.
  auto slot = [&](const std::string& var) -> std::string {
    if (s.splits.count(var) && s.splits.at(var) == 1) return var + "1";
    if (VarId(var) >= 0 && s.splits.at(var.substr(0, var.size() - 1)) > 1) return var;
    return "";
  };
  for (const auto& var : c.root.loops) {
    const std::string name = slot(var);
    if (name.empty()) return fail("loop " + var + " is not a variable of the template");
    if (std::find(s.order.begin(), s.order.end(), name) != s.order.end())
      return fail("loop " + var + " appears twice");
    s.order.push_back(name);
    if (s.splits.count(var)) s.order.push_back(var + "0");
  }
  if (s.order.size() != variables_.size())
    return fail("the loops " + JoinNames(c.root.loops) + " do not cover every index once");
  s.formats.assign(level_variables_.size(), LevelKind::kDense);
  std::vector<std::string> level_order, loop_levels;
  for (const auto& [var, kind] : c.format) {
    const std::string name = slot(var);
    const int id = VarId(name);
    if (id < 0 || id >= static_cast<int>(level_variables_.size()))
      return fail("format level " + var + " is not a level of " + expression_.sparse_input().name);
    if (kind == LevelKind::kSingleton ||
        (kind == LevelKind::kSliced && spec_->sliced_fraction == 0))
      return fail(std::string("level kind ") + LevelKindLetter(kind) + " is not in the template");
    s.formats[id] = kind;
    level_order.push_back(name);
  }
  for (const auto& var : s.order) {
    const int id = VarId(var);
    const bool trivial = id % 2 == 1 && s.splits.at(indices_[id / 2]) == 1;
    if (id < static_cast<int>(level_variables_.size()) && !trivial) loop_levels.push_back(var);
  }
  if (level_order != loop_levels)
    return fail("the level order " + JoinNames(level_order) +
                " is not the loop order over A's variables (" + JoinNames(loop_levels) + ")");
  if (c.parallel.empty()) return fail("a serial schedule is not in the template");
  s.parallel = slot(c.parallel);
  if (s.parallel.empty()) return fail("parallel loop " + c.parallel + " is not a variable");
  if (!IsPowerOfTwo(c.chunk) || Log2(c.chunk) > max_log2_chunk_)
    return fail("chunk " + std::to_string(c.chunk) + " is not a power of two up to " +
                std::to_string(int64_t(1) << max_log2_chunk_));
  s.chunk = c.chunk;
  s.threads = c.threads;
  s.partition = c.partition;
  if (c.unroll != 1 && c.unroll != 2 && c.unroll != 4 && c.unroll != 8)
    return fail("unroll " + std::to_string(c.unroll) + " is not 1, 2, 4 or 8");
  s.unroll = c.unroll;
  s.narrow = c.narrow_coordinates;
  if (!c.transposed.empty()) {
    if (c.transposed != std::vector<std::string>{spec_->transposable})
      return fail("the template transposes only " +
                  (spec_->transposable.empty() ? std::string("nothing") : spec_->transposable));
    s.transposed = true;
  }
  Normalize(s);
  return s;
}

std::string WacoTemplate::CheckFull(const SuperSchedule& s,
                                    const std::map<std::string, int64_t>& sizes) const {
  for (const auto& index : indices_) {
    if (Log2(s.splits.at(index)) > MaxLog2Split(index, sizes))
      return "split of " + index + " is over its range";
  }
  std::vector<int> position(variables_.size());
  for (size_t p = 0; p < s.order.size(); ++p) position[VarId(s.order[p])] = static_cast<int>(p);
  if (!FullOrderAllowed(position, s.splits))
    return "loop order " + JoinNames(s.order) + " breaks the template's rules";
  if (Log2(s.chunk) > max_log2_chunk_) return "chunk out of range";
  return "";
}

std::string WacoTemplate::CheckSubspace(const SuperSchedule& s,
                                        const std::map<std::string, int64_t>& sizes) const {
  if (spec_->subspace_orders.empty()) return "no sub-space";
  for (const auto& index : indices_) {
    int top = MaxLog2Split(index, sizes);
    if (!IsDense(index)) top = std::min(top, kSubspaceMaxLog2);
    if (Log2(s.splits.at(index)) > top) return "split of " + index + " is over its range";
  }
  bool order_ok = false;
  for (const auto& pattern : spec_->subspace_orders) {
    SuperSchedule p = s;
    p.order = pattern;
    Normalize(p);
    order_ok |= p.order == s.order;
  }
  if (!order_ok) return "loop order " + JoinNames(s.order) + " is not a sub-space order";
  for (const auto& [var, kind] : spec_->subspace_formats) {
    const int id = VarId(var);
    const bool trivial = id % 2 == 1 && s.splits.at(indices_[id / 2]) == 1;
    if (!trivial && s.formats[id] != kind) return "format of " + var + " is not the sub-space's";
  }
  return "";
}

std::string WacoTemplate::CheckMember(const SuperSchedule& s,
                                      const std::map<std::string, int64_t>& sizes) const {
  if (s.splits.size() != indices_.size()) return "splits must name every index once";
  for (const auto& index : indices_) {
    auto it = s.splits.find(index);
    if (it == s.splits.end()) return "no split for " + index;
    if (!IsPowerOfTwo(it->second)) return "split of " + index + " is not a power of two";
  }
  std::vector<std::string> sorted_order = s.order, sorted_vars = variables_;
  std::sort(sorted_order.begin(), sorted_order.end());
  std::sort(sorted_vars.begin(), sorted_vars.end());
  if (sorted_order != sorted_vars) return "the order must list every variable once";
  if (s.formats.size() != level_variables_.size()) return "one format per level of A";
  SuperSchedule normal = s;
  Normalize(normal);
  if (normal != s) return "not in normal form";
  if (!IsPowerOfTwo(s.chunk)) return "chunk is not a power of two";
  if (!IsPowerOfTwo(s.unroll) || Log2(s.unroll) > kMaxLog2Unroll)
    return "unroll is not 1, 2, 4 or 8";
  if (s.threads < 0) return "negative thread count";
  if (s.parallel != ParallelFor(s.order))
    return "parallel variable " + s.parallel + " is not the template's " + ParallelFor(s.order);
  if (spec_->exclude_all_u && std::all_of(s.formats.begin(), s.formats.end(),
                                          [](LevelKind k) { return k == LevelKind::kDense; }))
    return "every level of A is U";
  if (std::find(s.formats.begin(), s.formats.end(), LevelKind::kSliced) != s.formats.end())
    return CheckSliced(s, sizes);
  const std::string full = CheckFull(s, sizes);
  if (full.empty()) return "";
  if (CheckSubspace(s, sizes).empty()) return "";
  return full;
}

EncodingLayout WacoTemplate::Layout() const {
  EncodingLayout layout;
  for (const auto& index : indices_) {
    layout.names.push_back("split_" + index);
    layout.cardinalities.push_back(SplitCardinality(index));
  }
  for (const auto& var : level_variables_) {
    layout.names.push_back("format_" + var);
    layout.cardinalities.push_back(3);  // C, U, S
  }
  layout.names.push_back("parallel");
  layout.cardinalities.push_back(static_cast<int>(variables_.size()));
  layout.names.push_back("chunk");
  layout.cardinalities.push_back(max_log2_chunk_ + 1);
  layout.names.push_back("threads");
  layout.cardinalities.push_back(2);
  layout.names.push_back("partition");
  layout.cardinalities.push_back(2);
  layout.names.push_back("unroll");
  layout.cardinalities.push_back(kMaxLog2Unroll + 1);
  layout.names.push_back("coordinates");
  layout.cardinalities.push_back(2);
  if (!spec_->transposable.empty()) {
    layout.names.push_back("transpose_" + spec_->transposable);
    layout.cardinalities.push_back(2);
  }
  layout.order_size = static_cast<int>(variables_.size());
  return layout;
}

ScheduleEncoding WacoTemplate::Encode(const SuperSchedule& s) const {
  ScheduleEncoding e;
  for (const auto& index : indices_) e.categorical.push_back(Log2(s.splits.at(index)));
  for (LevelKind kind : s.formats) e.categorical.push_back(FormatId(kind));
  e.categorical.push_back(VarId(s.parallel));
  e.categorical.push_back(Log2(s.chunk));
  e.categorical.push_back(s.threads == 1 ? 0 : 1);
  e.categorical.push_back(s.partition == Partition::kBalanced ? 1 : 0);
  e.categorical.push_back(std::min(Log2(s.unroll), kMaxLog2Unroll));
  e.categorical.push_back(s.narrow ? 1 : 0);
  if (!spec_->transposable.empty()) e.categorical.push_back(s.transposed ? 1 : 0);
  const int n = static_cast<int>(variables_.size());
  e.order.assign(size_t(n) * n, 0.0f);
  for (int pos = 0; pos < n; ++pos) e.order[size_t(VarId(s.order[pos])) * n + pos] = 1.0f;
  return e;
}

}  // namespace sparsetune
