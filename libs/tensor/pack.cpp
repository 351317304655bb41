#include "tensor/pack.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <type_traits>

#include <omp.h>
#ifdef _OPENMP
#include <parallel/algorithm>
#endif

namespace sparsetune {

namespace {

constexpr int64_t kMaxPositions = 2147483647;  // pos is int32

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Threads worth starting for n elements of simple work.
int ThreadsFor(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(n / 65536, 1, omp_get_max_threads()));
}

// Coordinates of every entry (in the tensor's entry order) at one level.
const int32_t* LevelCoordinates(const CooTensor& t, const StorageFormat& f, int level,
                                BulkVector<int32_t>& storage) {
  const LevelSpec& spec = f.levels[level];
  const auto& c = t.coords[spec.mode];
  if (spec.part == SplitPart::kWhole) return c.data();
  const int64_t s = f.split[spec.mode];
  const int64_t n = static_cast<int64_t>(c.size());
  storage.resize(n);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(n))
  for (int64_t e = 0; e < n; ++e)
    storage[e] = static_cast<int32_t>(LevelCoordinate(c[e], spec.part, s));
  return storage.data();
}

// Canonical COO order is lexicographic over the modes, each split mode as (outer, inner).
// Starting from it, stable sorts by levels j, j-1, ..., 0 give the format's order as soon as
// the levels after j already follow the canonical order among themselves. Returns j + 1, the
// number of sorting passes needed (0 for CSR, CSF and any format in mode order).
// The levels in the order entries are sorted by: the level order, except that a sliced level
// comes after its lanes (entries are grouped by lane, then ranked by coordinate).
std::vector<int> SortKeyOrder(const StorageFormat& f) {
  std::vector<int> order(f.levels.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t l = 0; l + 1 < order.size(); ++l) {
    if (f.levels[l].kind == LevelKind::kSliced) std::swap(order[l], order[l + 1]);
  }
  return order;
}

int SortPassesNeeded(const StorageFormat& f, const std::vector<int>& key_order) {
  auto canonical_rank = [&](int level) {
    return 2 * f.levels[level].mode + (f.levels[level].part == SplitPart::kInner);
  };
  const int levels = static_cast<int>(key_order.size());
  int passes = levels;
  for (int j = levels - 1; j >= -1; --j) {
    bool ordered = true;
    for (int l = j + 2; l < levels; ++l)
      ordered &= canonical_rank(key_order[l - 1]) < canonical_rank(key_order[l]);
    if (!ordered) break;
    passes = j + 1;
  }
  return passes;
}

// Stable sort of `perm` by key[perm[r]] in [0, extent): a parallel counting sort when the
// histograms are small next to the data, a parallel merge sort otherwise.
void StableSortByKey(BulkVector<int32_t>& perm, const int32_t* key, int64_t extent,
                     BulkVector<int32_t>& scratch) {
  const int64_t n = static_cast<int64_t>(perm.size());
  if (extent > n) {
    auto less = [key](int32_t a, int32_t b) { return key[a] < key[b]; };
#ifdef _OPENMP
    __gnu_parallel::stable_sort(perm.begin(), perm.end(), less);
#else
    std::stable_sort(perm.begin(), perm.end(), less);
#endif
    return;
  }
  const int threads = ThreadsFor(n);
  std::vector<int32_t> counts(static_cast<size_t>(threads) * extent, 0);
  scratch.resize(n);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    int32_t* mine = counts.data() + static_cast<size_t>(t) * extent;
    for (int64_t r = lo; r < hi; ++r) ++mine[key[perm[r]]];
#pragma omp barrier
#pragma omp single
    {
      int32_t running = 0;
      for (int64_t k = 0; k < extent; ++k) {
        for (int u = 0; u < threads; ++u) {
          int32_t& c = counts[static_cast<size_t>(u) * extent + k];
          const int32_t here = c;
          c = running;
          running += here;
        }
      }
    }
    for (int64_t r = lo; r < hi; ++r) scratch[mine[key[perm[r]]]++] = perm[r];
  }
  perm.swap(scratch);
}

}  // namespace

std::vector<CoordinateEncoding> PackedTensor::encodings() const {
  std::vector<CoordinateEncoding> out;
  for (const PackedLevel& l : levels) out.push_back(l.encoding);
  return out;
}

int64_t PackedTensor::bytes() const {
  int64_t total = static_cast<int64_t>(values_f32.size() * 4 + values_f64.size() * 8);
  for (const PackedLevel& l : levels)
    total += static_cast<int64_t>(l.pos.size() * 4 + l.crd_bytes.size() + l.base.size() * 4);
  return total;
}

namespace {

// Per segment (parent position) of a compressed or sliced level: its smallest coordinate, and
// the largest span (max - min) over all segments. Segment p holds coordinates
// [pos[p] * lanes, pos[p + 1] * lanes).
struct SegmentSpans {
  BulkVector<int32_t> min;
  int64_t max_span = 0;
};

SegmentSpans ComputeSpans(const BulkVector<int32_t>& pos, const BulkVector<int32_t>& crd,
                          int64_t lanes) {
  SegmentSpans out;
  const int64_t parents = static_cast<int64_t>(pos.size()) - 1;
  out.min.resize(parents);
  int64_t max_span = 0;
#pragma omp parallel for schedule(static) reduction(max         \
                                                    : max_span) \
    num_threads(ThreadsFor(static_cast <int64_t>(crd.size())))
  for (int64_t p = 0; p < parents; ++p) {
    int32_t lo = 0, hi = 0;
    const int64_t first = pos[p] * lanes, last = pos[p + 1] * lanes;
    if (first < last) {
      lo = hi = crd[first];
      for (int64_t q = first + 1; q < last; ++q) {
        lo = std::min(lo, crd[q]);
        hi = std::max(hi, crd[q]);
      }
    }
    out.min[p] = lo;
    max_span = std::max<int64_t>(max_span, hi - lo);
  }
  out.max_span = max_span;
  return out;
}

CoordinateEncoding ChooseEncoding(int64_t positions, int64_t parents, int64_t extent,
                                  int64_t max_span) {
  CoordinateEncoding best;  // 32-bit absolute
  int64_t best_bytes = 4 * positions;
  auto consider = [&](int bits, bool relative) {
    const int64_t bytes = positions * bits / 8 + (relative ? 4 * parents : 0);
    if (bytes < best_bytes) {
      best = {bits, relative};
      best_bytes = bytes;
    }
  };
  for (int bits : {16, 8}) {
    const int64_t limit = int64_t(1) << bits;
    if (extent <= limit) consider(bits, false);
    if (max_span < limit) consider(bits, true);
  }
  return best;
}

// Stores a level's coordinates (crd, one per position of the level, or of its lanes for a
// sliced level) as `level.encoding` says.
void EncodeCoordinates(PackedLevel& level, const BulkVector<int32_t>& crd,
                       const SegmentSpans& spans, int64_t lanes) {
  const int64_t positions = static_cast<int64_t>(crd.size());
  const int64_t parents = static_cast<int64_t>(level.pos.size()) - 1;
  const CoordinateEncoding e = level.encoding;
  if (e.relative) level.base = spans.min;
  level.crd_bytes.resize(positions * e.bits / 8);
  auto store = [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    if (!e.relative) {
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(positions))
      for (int64_t q = 0; q < positions; ++q) out[q] = static_cast<T>(crd[q]);
      return;
    }
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(positions))
    for (int64_t p = 0; p < parents; ++p) {
      for (int64_t q = level.pos[p] * lanes; q < level.pos[p + 1] * lanes; ++q)
        out[q] = static_cast<T>(crd[q] - level.base[p]);
    }
  };
  if (e.bits == 8) store(level.crd_bytes.data());
  if (e.bits == 16) store(reinterpret_cast<uint16_t*>(level.crd_bytes.data()));
  if (e.bits == 32) store(reinterpret_cast<int32_t*>(level.crd_bytes.data()));
}

void StoreCoordinates(PackedLevel& level, const BulkVector<int32_t>& crd, int64_t lanes,
                      bool narrow) {
  SegmentSpans spans;
  if (narrow) {
    spans = ComputeSpans(level.pos, crd, lanes);
    level.encoding =
        ChooseEncoding(static_cast<int64_t>(crd.size()), static_cast<int64_t>(level.pos.size()) - 1,
                       level.extent, spans.max_span);
  }
  EncodeCoordinates(level, crd, spans, lanes);
}

}  // namespace

CoordinateEncoding ChooseCoordinateEncoding(const BulkVector<int32_t>& pos,
                                            const BulkVector<int32_t>& crd, int64_t extent) {
  const SegmentSpans spans = ComputeSpans(pos, crd, 1);
  return ChooseEncoding(static_cast<int64_t>(crd.size()), static_cast<int64_t>(pos.size()) - 1,
                        extent, spans.max_span);
}

PackOutcome Pack(const CooTensor& t, const StorageFormat& f, DType dtype,
                 const PackOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PackOutcome outcome;
  if (std::string reason = f.Check(t.dims); !reason.empty()) {
    outcome.refusal = reason;
    return outcome;
  }
  const int num_levels = static_cast<int>(f.levels.size());
  const int64_t n = t.nnz();
  if (n > kMaxPositions) {
    outcome.refusal =
        "the tensor has " + std::to_string(n) + " entries, more than 32-bit positions can address";
    return outcome;
  }
  int64_t dim_sum = 0;
  for (int64_t d : t.dims) dim_sum += d;
  const double cap = options.padding_cap * double(std::max<int64_t>({n, dim_sum, 1}));

  auto packed = std::make_unique<PackedTensor>();
  packed->dims = t.dims;
  packed->format = f;
  packed->dtype = dtype;
  packed->nnz = n;

  std::vector<BulkVector<int32_t>> storage(num_levels);
  std::vector<const int32_t*> coords(num_levels);
  std::vector<int64_t> extents(num_levels);
  for (int l = 0; l < num_levels; ++l) {
    coords[l] = LevelCoordinates(t, f, l, storage[l]);
    extents[l] = f.LevelExtent(l, t.dims);
  }

  // perm[r]: the entry at sorted rank r (identity when no pass is needed).
  const std::vector<int> key_order = SortKeyOrder(f);
  const int passes = SortPassesNeeded(f, key_order);
  BulkVector<int32_t> perm;
  if (passes > 0) {
    perm.resize(n);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(n))
    for (int64_t r = 0; r < n; ++r) perm[r] = static_cast<int32_t>(r);
    BulkVector<int32_t> scratch;
    for (int k = passes - 1; k >= 0; --k)
      StableSortByKey(perm, coords[key_order[k]], extents[key_order[k]], scratch);
  }
  const int32_t* order = perm.empty() ? nullptr : perm.data();
  auto entry = [&order](int64_t r) -> int64_t { return order ? order[r] : r; };

  // position[r]: the position of the r-th sorted entry at the current level.
  const int threads = ThreadsFor(n);
  BulkVector<int32_t> position(n), next(n);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < n; ++r) position[r] = 0;
  int64_t parent_positions = 1;
  for (int l = 0; l < num_levels; ++l) {
    PackedLevel level;
    level.kind = f.levels[l].kind;
    level.extent = extents[l];
    const int32_t* c = coords[l];
    if (level.kind == LevelKind::kDense) {
      // U levels multiply positions: refuse before anything of this size is allocated.
      const double positions = double(parent_positions) * double(level.extent);
      if (positions > cap || positions > double(kMaxPositions)) {
        outcome.refusal = "level " + std::to_string(l) + " would hold " +
                          std::to_string(int64_t(positions)) +
                          " positions, over the padding cap of " +
                          std::to_string(int64_t(std::min(cap, double(kMaxPositions)))) + " (" +
                          std::to_string(int(options.padding_cap)) + " x max(nnz, sum of dims))";
        return outcome;
      }
      level.positions = parent_positions * level.extent;
      const int64_t extent = level.extent;
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int64_t r = 0; r < n; ++r)
        position[r] = static_cast<int32_t>(position[r] * extent + c[entry(r)]);
    } else if (level.kind == LevelKind::kSliced) {
      // The sliced level and its lanes together. Entries are sorted by parent, lane, then
      // coordinate: an entry's slot is the rank of its coordinate within its (parent, lane) run.
      const int64_t lanes = extents[l + 1];
      const int32_t* lane = coords[l + 1];
      // r continues the (parent, lane) run of r - 1; entries that differ only below the lanes
      // share their slot.
      auto continues = [&](int64_t r) {
        return r > 0 && position[r] == position[r - 1] && lane[entry(r)] == lane[entry(r - 1)];
      };
      auto shares_slot = [&](int64_t r) { return continues(r) && c[entry(r)] == c[entry(r - 1)]; };
      BulkVector<int32_t> rank(n);
      BulkVector<int32_t> slots(parent_positions + 1);
      BulkVector<int32_t> smallest(parent_positions);
      constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions))
      for (int64_t p = 0; p <= parent_positions; ++p) {
        slots[p] = 0;
        if (p < parent_positions) smallest[p] = kNone;
      }
      // Each thread ranks its slice as if it started a run, then the runs that cross a slice
      // boundary are continued in slice order. Per parent: the longest lane (slots) and the
      // smallest coordinate; a thread's first and last parents may be shared, so those are
      // merged after the others.
      std::vector<int32_t> edge_slots(2 * threads, 0), edge_smallest(2 * threads, kNone);
#pragma omp parallel num_threads(threads)
      {
        const int u = omp_get_thread_num();
        const int64_t lo = n * u / threads, hi = n * (u + 1) / threads;
        for (int64_t r = lo; r < hi; ++r)
          rank[r] = r == lo || !continues(r) ? 0 : rank[r - 1] + !shares_slot(r);
#pragma omp barrier
#pragma omp single
        for (int v = 1; v < threads; ++v) {
          const int64_t first = n * v / threads, end = n * (v + 1) / threads;
          if (first >= end || !continues(first)) continue;
          const int32_t offset = rank[first - 1] + !shares_slot(first);
          for (int64_t r = first; r < end && (r == first || continues(r)); ++r) rank[r] += offset;
        }
        if (lo < hi) {
          const int64_t first_parent = position[lo], last_parent = position[hi - 1];
          for (int64_t r = lo; r < hi; ++r) {
            const int64_t parent = position[r];
            const int32_t length = rank[r] + 1, coordinate = c[entry(r)];
            const int edge = parent == first_parent  ? 2 * u
                             : parent == last_parent ? 2 * u + 1
                                                     : -1;
            int32_t& longest = edge < 0 ? slots[parent + 1] : edge_slots[edge];
            int32_t& least = edge < 0 ? smallest[parent] : edge_smallest[edge];
            longest = std::max(longest, length);
            least = std::min(least, coordinate);
          }
        }
#pragma omp barrier
#pragma omp single
        for (int v = 0; v < threads; ++v) {
          const int64_t first = n * v / threads, end = n * (v + 1) / threads;
          if (first >= end) continue;
          for (int side = 0; side < 2; ++side) {
            const int64_t parent = position[side == 0 ? first : end - 1];
            slots[parent + 1] = std::max(slots[parent + 1], edge_slots[2 * v + side]);
            smallest[parent] = std::min(smallest[parent], edge_smallest[2 * v + side]);
          }
        }
      }
      level.pos.resize(parent_positions + 1);
      level.pos[0] = 0;
      for (int64_t p = 0; p < parent_positions; ++p) level.pos[p + 1] = level.pos[p] + slots[p + 1];
      level.positions = level.pos[parent_positions];
      PackedLevel lane_level;
      lane_level.kind = LevelKind::kDense;
      lane_level.extent = lanes;
      const double lane_positions = double(level.positions) * double(lanes);
      if (lane_positions > cap || lane_positions > double(kMaxPositions)) {
        outcome.refusal = "sliced level " + std::to_string(l) + " would pad to " +
                          std::to_string(int64_t(lane_positions)) +
                          " positions, over the padding cap of " +
                          std::to_string(int64_t(std::min(cap, double(kMaxPositions))));
        return outcome;
      }
      lane_level.positions = level.positions * lanes;
      // Coordinates per lane position; padding repeats the lane's last coordinate (or, for an
      // empty lane, the smallest of the slice), so it stays inside the slice's span.
      BulkVector<int32_t> crd(lane_level.positions);
#pragma omp parallel num_threads(threads)
      {
#pragma omp for schedule(static)
        for (int64_t q = 0; q < lane_level.positions; ++q) crd[q] = -1;
          // One writer per slot: the first of the entries that share it.
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; ++r) {
          const int64_t leaf = (level.pos[position[r]] + rank[r]) * lanes + lane[entry(r)];
          if (!shares_slot(r)) crd[leaf] = c[entry(r)];
          next[r] = static_cast<int32_t>(leaf);
        }
      }
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions))
      for (int64_t p = 0; p < parent_positions; ++p) {
        for (int64_t c_lane = 0; c_lane < lanes; ++c_lane) {
          int32_t last = smallest[p] == kNone ? 0 : smallest[p];
          for (int64_t q = level.pos[p]; q < level.pos[p + 1]; ++q) {
            int32_t& slot = crd[q * lanes + c_lane];
            if (slot < 0) {
              slot = last;
            } else {
              last = slot;
            }
          }
        }
      }
      position.swap(next);
      if (l + 2 < num_levels) {
        // Levels below the lanes are built in position order: sort the entries by lane
        // position (stable, so entries sharing one keep their order below it).
        BulkVector<int32_t> by_leaf(n), scratch;
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t r = 0; r < n; ++r) by_leaf[r] = static_cast<int32_t>(r);
        StableSortByKey(by_leaf, position.data(), lane_level.positions, scratch);
        BulkVector<int32_t> reordered(n);
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t r = 0; r < n; ++r) {
          reordered[r] = static_cast<int32_t>(entry(by_leaf[r]));
          next[r] = position[by_leaf[r]];
        }
        perm.swap(reordered);
        order = perm.data();
        position.swap(next);
      }
      StoreCoordinates(level, crd, lanes, options.narrow_coordinates);
      packed->levels.push_back(std::move(level));
      packed->levels.push_back(std::move(lane_level));
      parent_positions = packed->levels.back().positions;
      ++l;
      continue;
    } else if (level.kind == LevelKind::kSingleton) {
      // The level above gave every entry its own position: each holds the entry's coordinate.
      level.positions = parent_positions;
      BulkVector<int32_t> crd(parent_positions);
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int64_t r = 0; r < n; ++r) crd[position[r]] = c[entry(r)];
      if (options.narrow_coordinates)
        level.encoding = ChooseEncoding(n, 0, level.extent, level.extent);
      EncodeCoordinates(level, crd, SegmentSpans{}, 1);
    } else {
      // An entry starts a new position when its parent or its coordinate differs from the
      // previous entry's, or always above a singleton level (a coordinate list repeats
      // coordinates). Each thread counts the starts in its slice, then numbers them.
      const bool every_entry = l + 1 < num_levels && f.levels[l + 1].kind == LevelKind::kSingleton;
      std::vector<int64_t> starts(threads + 1, 0);
      BulkVector<int32_t> crd;
#pragma omp parallel num_threads(threads)
      {
        const int u = omp_get_thread_num();
        const int64_t lo = n * u / threads, hi = n * (u + 1) / threads;
        auto is_start = [&](int64_t r) {
          return every_entry || r == 0 || position[r] != position[r - 1] ||
                 c[entry(r)] != c[entry(r - 1)];
        };
        int64_t count = 0;
        for (int64_t r = lo; r < hi; ++r) count += is_start(r);
        starts[u + 1] = count;
#pragma omp barrier
#pragma omp single
        {
          for (int v = 0; v < threads; ++v) starts[v + 1] += starts[v];
          crd.resize(starts[threads]);
          level.pos.resize(parent_positions + 1);  // every entry is written below
        }
        int64_t q = starts[u] - 1;
        for (int64_t r = lo; r < hi; ++r) {
          if (is_start(r)) {
            ++q;
            crd[q] = c[entry(r)];
            // pos[p] counts the positions whose parent is below p: every p in
            // (previous entry's parent, this entry's parent] starts at q.
            const int64_t parent = position[r];
            const int64_t previous = r == 0 ? -1 : position[r - 1];
            for (int64_t p = previous + 1; p <= parent; ++p) level.pos[p] = static_cast<int32_t>(q);
          }
          next[r] = static_cast<int32_t>(q);
        }
      }
      int64_t total = starts[threads];
      const int64_t last_parent = n > 0 ? position[n - 1] : -1;
      for (int64_t p = last_parent + 1; p <= parent_positions; ++p)
        level.pos[p] = static_cast<int32_t>(total);
      position.swap(next);  // next: each entry's parent position
      if (const int group = f.levels[l].group; group > 1) {
        // Every segment padded to whole groups, repeating its last coordinate (zero values).
        BulkVector<int32_t> padded(parent_positions + 1);
        padded[0] = 0;
        for (int64_t p = 0; p < parent_positions; ++p) {
          const int64_t length = level.pos[p + 1] - level.pos[p];
          padded[p + 1] = static_cast<int32_t>(
              std::min<int64_t>(padded[p] + (length + group - 1) / group * group, kMaxPositions));
        }
        const int64_t padded_total = padded[parent_positions];
        if (double(padded_total) > cap || padded_total >= kMaxPositions) {
          outcome.refusal = "grouped level " + std::to_string(l) + " would pad to " +
                            std::to_string(padded_total) + " positions, over the padding cap";
          return outcome;
        }
        BulkVector<int32_t> grouped(padded_total);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions))
        for (int64_t p = 0; p < parent_positions; ++p) {
          const int64_t from = level.pos[p], length = level.pos[p + 1] - from;
          for (int64_t q = 0; q < padded[p + 1] - padded[p]; ++q)
            grouped[padded[p] + q] = crd[from + std::min(q, length - 1)];
        }
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t r = 0; r < n; ++r)
          position[r] = static_cast<int32_t>(padded[next[r]] + (position[r] - level.pos[next[r]]));
        level.pos.swap(padded);
        crd.swap(grouped);
        total = padded_total;
      }
      level.positions = total;
      StoreCoordinates(level, crd, 1, options.narrow_coordinates);
    }
    parent_positions = level.positions;
    packed->levels.push_back(std::move(level));
  }

  // Leaf positions of distinct entries are distinct: no two entries write the same value.
  const int64_t stored = packed->stored();
  auto fill = [&](auto& values) {
    using V = typename std::decay_t<decltype(values)>::value_type;
    values.resize(stored);
    V* out = values.data();
#pragma omp parallel num_threads(ThreadsFor(stored))
    {
      if (stored > n) {  // padding: positions no entry writes
#pragma omp for schedule(static)
        for (int64_t q = 0; q < stored; ++q) out[q] = 0;
      }
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n; ++r) out[position[r]] = static_cast<V>(t.values[entry(r)]);
    }
  };
  if (dtype == DType::kF32) {
    fill(packed->values_f32);
  } else {
    fill(packed->values_f64);
  }
  packed->pack_ms = MsSince(start);
  outcome.packed = std::move(packed);
  return outcome;
}

namespace {
void VisitLevel(const PackedTensor& p, int level, int depth, int64_t parent,
                std::vector<int64_t>& modes,
                const std::function<void(int64_t, const std::vector<int64_t>&)>& visit) {
  if (level == depth) {
    for (size_t m = 0; m < p.dims.size(); ++m) {
      if (modes[m] >= p.dims[m]) return;  // padding outside the tensor
    }
    visit(parent, modes);
    return;
  }
  const PackedLevel& l = p.levels[level];
  const LevelSpec& spec = p.format.levels[level];
  const int64_t s = p.format.split[spec.mode];
  auto descend = [&](int64_t coord, int64_t position) {
    const int64_t saved = modes[spec.mode];
    if (spec.part == SplitPart::kWhole) modes[spec.mode] = coord;
    if (spec.part == SplitPart::kOuter) modes[spec.mode] = saved % s + coord * s;
    if (spec.part == SplitPart::kInner) modes[spec.mode] = (saved / s) * s + coord;
    VisitLevel(p, level + 1, depth, position, modes, visit);
    modes[spec.mode] = saved;
  };
  if (l.kind == LevelKind::kSliced) {
    // Each slot holds one coordinate per lane of the next level.
    const PackedLevel& lanes = p.levels[level + 1];
    const LevelSpec& lane_spec = p.format.levels[level + 1];
    const int64_t lane_split = p.format.split[lane_spec.mode];
    if (depth == level + 1) {
      for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q)
        VisitLevel(p, depth, depth, q, modes, visit);
      return;
    }
    const int64_t saved_mode = modes[spec.mode], saved_lane = modes[lane_spec.mode];
    for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q) {
      for (int64_t c = 0; c < lanes.extent; ++c) {
        const int64_t leaf = q * lanes.extent + c;
        const int64_t coord = l.Coordinate(parent, leaf);
        if (spec.part == SplitPart::kWhole) modes[spec.mode] = coord;
        if (spec.part == SplitPart::kOuter) modes[spec.mode] = saved_mode % s + coord * s;
        if (spec.part == SplitPart::kInner) modes[spec.mode] = (saved_mode / s) * s + coord;
        modes[lane_spec.mode] = (saved_lane / lane_split) * lane_split + c;
        VisitLevel(p, level + 2, depth, leaf, modes, visit);
      }
    }
    modes[spec.mode] = saved_mode;
    modes[lane_spec.mode] = saved_lane;
    return;
  }
  if (l.kind == LevelKind::kDense) {
    for (int64_t c = 0; c < l.extent; ++c) descend(c, parent * l.extent + c);
  } else if (l.kind == LevelKind::kSingleton) {
    descend(l.Coordinate(parent, parent), parent);
  } else {
    for (int64_t q = l.pos[parent]; q < l.pos[parent + 1]; ++q) descend(l.Coordinate(parent, q), q);
  }
}
}  // namespace

void ForEachPosition(const PackedTensor& p, int depth,
                     const std::function<void(int64_t, const std::vector<int64_t>&)>& visit) {
  std::vector<int64_t> modes(p.dims.size(), 0);
  VisitLevel(p, 0, depth, 0, modes, visit);
}

CooTensor Unpack(const PackedTensor& p) {
  CooTensor out;
  out.Reset(p.dims, p.stored());
  std::vector<int32_t> coordinate(p.dims.size());
  ForEachPosition(p, static_cast<int>(p.levels.size()),
                  [&](int64_t position, const std::vector<int64_t>& modes) {
                    for (size_t m = 0; m < modes.size(); ++m)
                      coordinate[m] = static_cast<int32_t>(modes[m]);
                    out.Append(coordinate.data(), p.value(position));
                  });
  out.Canonicalize();
  return out;
}

}  // namespace sparsetune
