// The packer of sparse tensors into level formats, shared by the library (Pack, pack.cpp) and
// every emitted kernel, whose source carries this file verbatim: the arrays a generated kernel
// reads are laid out by one code wherever the packing happens.
//
// Self-contained on purpose: C++17 and its standard library, OpenMP when compiled with it, no
// other include. An include guard rather than #pragma once, which warns once pasted into an
// emitted source file.
#ifndef SPARSETUNE_TENSOR_LEVEL_PACKER_HPP
#define SPARSETUNE_TENSOR_LEVEL_PACKER_HPP

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#ifdef __GLIBCXX__
#include <parallel/algorithm>
#endif
#endif

namespace sparsetune {
namespace packer {
// Internal linkage: an emitted kernel carries its own copy of the packer, so kernels emitted by
// different versions link into one program without one taking the other's functions.
namespace {

// Level kinds and the part of a mode a level stores, numbered as the library's LevelKind and
// SplitPart.
constexpr int kDenseLevel = 0;       // U: a dense range, position = parent * extent + coordinate
constexpr int kCompressedLevel = 1;  // C: pos and one coordinate per position
constexpr int kSlicedLevel = 2;      // S: compressed across the lanes of the U level below it
constexpr int kSingletonLevel = 3;   // Q: one coordinate per position of the level above
constexpr int kWholeMode = 0;
constexpr int kOuterPart = 1;  // i1 = i / split
constexpr int kInnerPart = 2;  // i0 = i % split

constexpr int64_t kMaxPositions = 2147483647;  // pos arrays are int32

struct LevelLayout {
  int mode = 0;
  int part = kWholeMode;
  int kind = kDenseLevel;
  int group = 1;  // compressed levels: segments padded to whole groups of this many entries
};

// A format for a tensor of given dims: a split size per mode and levels from outer to inner.
struct Layout {
  std::vector<int64_t> dims;
  std::vector<int64_t> split;
  std::vector<LevelLayout> levels;

  int64_t LevelExtent(int level) const {
    const LevelLayout& l = levels[level];
    const int64_t dim = dims[l.mode], s = split[l.mode];
    return l.part == kWholeMode ? dim : l.part == kOuterPart ? (dim + s - 1) / s : s;
  }
};

// Unsigned coordinates of `bits` bits, absolute or relative to their segment's smallest.
struct Encoding {
  int bits = 32;
  bool relative = false;
};

struct Options {
  // No level may hold more than padding_cap x max(nnz, sum of dims) positions; infinity: only
  // the 32-bit positions bound the padding.
  double padding_cap = std::numeric_limits<double>::infinity();
  // true: each compressed level stores its coordinates in the fewest bytes; false: as
  // `encodings` says (one per level; 32-bit absolute where it is empty), and a coordinate that
  // does not fit is refused.
  bool choose_encodings = false;
  std::vector<Encoding> encodings;
  // Records the position of every entry after this many levels (RecordedPosition), when > 0.
  int record_after_levels = 0;
};

#ifdef _OPENMP
inline int MaxThreads() {
  return omp_get_max_threads();
}
inline int ThreadNumber() {
  return omp_get_thread_num();
}
inline int TeamSize() {
  return omp_get_num_threads();
}
#else
inline int MaxThreads() {
  return 1;
}
inline int ThreadNumber() {
  return 0;
}
inline int TeamSize() {
  return 1;
}
#endif

// Inside a parallel region: body(slice) for every slice in [0, slices), each on one thread of
// the team. A region may get fewer threads than it asks for (OMP_THREAD_LIMIT, OMP_DYNAMIC, a
// caller's own parallel region), so a thread takes every TeamSize()-th slice.
template <class Body>
inline void ForEachSlice(int slices, Body body) {
  for (int slice = ThreadNumber(); slice < slices; slice += TeamSize()) body(slice);
}

// A stable parallel counting sort of n entries, split into `threads` contiguous slices: each
// thread counts its slice's keys (key(e) in [0, buckets)), then places each of its entries
// (place(e, slot)), the slots running bucket by bucket and, within one, thread by thread.
template <class Key, class Place>
inline void CountingSort(int64_t n, int threads, int64_t buckets, Key key, Place place) {
  std::vector<int64_t> counts(static_cast<size_t>(threads) * buckets, 0);
#pragma omp parallel num_threads(threads)
  {
    ForEachSlice(threads, [&](int t) {
      const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      int64_t* mine = counts.data() + static_cast<size_t>(t) * buckets;
      for (int64_t e = lo; e < hi; ++e) ++mine[key(e)];
    });
#pragma omp barrier
#pragma omp single
    {
      int64_t running = 0;
      for (int64_t b = 0; b < buckets; ++b) {
        for (int u = 0; u < threads; ++u) {
          int64_t& c = counts[static_cast<size_t>(u) * buckets + b];
          const int64_t here = c;
          c = running;
          running += here;
        }
      }
    }
    ForEachSlice(threads, [&](int t) {
      const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      int64_t* mine = counts.data() + static_cast<size_t>(t) * buckets;
      for (int64_t e = lo; e < hi; ++e) place(e, mine[key(e)]++);
    });
  }
}

// Threads worth starting for n elements of simple work.
inline int ThreadsFor(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>(n / 65536, 1, MaxThreads()));
}

// Of a matrix's entries in canonical order: each row's first entry (rows + 1 offsets), found
// where the row changes, in parallel; rows without entries start at the next row's first.
inline std::vector<int64_t> RowStarts(int64_t rows, int64_t nnz, const int32_t* row_of) {
  std::vector<int64_t> start(rows + 1, nnz);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(nnz))
  for (int64_t e = 0; e < nnz; ++e) {
    if (e > 0 && row_of[e] == row_of[e - 1]) continue;
    for (int64_t r = e == 0 ? 0 : row_of[e - 1] + 1; r <= row_of[e]; ++r) start[r] = e;
  }
  return start;
}

// std::allocator whose resize() leaves new elements uninitialized (default-initialized): the
// packer writes every array it sizes right away, and clearing it first costs a pass over memory
// as large as the matrix (the library's BulkAllocator does the same, and more).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
};

// One packed level. pos: parent positions + 1 offsets (C and S levels); crd: one coordinate per
// position (per lane position for S levels) in `encoding.bits / 8` bytes; base: per parent
// position, the smallest coordinate of its segment (relative encodings).
template <template <class> class Allocator>
struct PackedLevelArrays {
  template <class T>
  using Array = std::vector<T, Allocator<T>>;
  int kind = kDenseLevel;
  int64_t extent = 0;
  int64_t positions = 0;
  Array<int32_t> pos;
  Encoding encoding;
  Array<uint8_t> crd;
  Array<int32_t> base;
};

// Builds the levels of a format from coordinates, outer level first. The levels' arrays use
// Allocator, those only the packer reads (sort keys, per-entry positions) ScratchAllocator: the
// library's skip clearing memory that is written right away, and only the first gives it huge
// pages.
template <template <class> class Allocator = std::allocator,
          template <class> class ScratchAllocator = Allocator>
class LevelPacker {
 public:
  template <class T>
  using Array = std::vector<T, Allocator<T>>;
  template <class T>
  using Scratch = std::vector<T, ScratchAllocator<T>>;
  using Level = PackedLevelArrays<Allocator>;

  // coords[mode][entry] for nnz entries, distinct and inside the layout's dims. `canonical`
  // lists the entries in canonical order (lexicographic over the modes: RankEntries), borrowed
  // for the packer's life; null when the entries already are in that order.
  LevelPacker(const Layout& layout, const Options& options, int64_t nnz,
              const int32_t* const* coords, const int32_t* canonical = nullptr)
      : layout_(layout),
        options_(options),
        n_(nnz),
        threads_(ThreadsFor(nnz)),
        mode_coords_(coords),
        canonical_(canonical) {}

  // Whether a layout packs rows taken in a new order (TakeRowsInOrder): a sliced level whose
  // lanes are the rows' last level (SELL: i1:U k:S i0:U), where each row fills one lane.
  static bool PacksRowsInOrder(const Layout& layout) {
    const std::vector<LevelLayout>& l = layout.levels;
    return layout.split.size() == 2 && l.size() == 3 && l[0].mode == 0 && l[0].part == kOuterPart &&
           l[0].kind == kDenseLevel && l[1].mode == 1 && l[1].part == kWholeMode &&
           l[1].kind == kSlicedLevel && l[1].group == 1 && l[2].mode == 0 &&
           l[2].part == kInnerPart && l[2].kind == kDenseLevel;
  }
  // Packs the rows in a new order, row r of the format being given row old_of_new[r] (borrowed
  // for the packer's life), straight from entries in canonical order: no renumbered copy of
  // them, which costs more than the packing itself (12 bytes an entry, written to fresh
  // memory). Entries keep their indices, so their values and positions follow them. Only for
  // layouts that PacksRowsInOrder; Run refuses others.
  void TakeRowsInOrder(const int32_t* old_of_new) { rows_in_order_ = old_of_new; }

  // Builds every level; false when the format does not apply (Refusal() says why).
  bool Run() {
    if (n_ > kMaxPositions) {
      return Refuse("the tensor has " + std::to_string(n_) +
                    " entries, more than 32-bit positions can address");
    }
    const int num_levels = static_cast<int>(layout_.levels.size());
    int64_t dim_sum = 0;
    for (int64_t d : layout_.dims) dim_sum += d;
    cap_ = options_.padding_cap * double(std::max<int64_t>({n_, dim_sum, 1}));
    extents_.resize(num_levels);
    key_shift_.assign(num_levels, -1);
    split_shift_.assign(num_levels, -1);
    for (int l = 0; l < num_levels; ++l) {
      extents_[l] = layout_.LevelExtent(l);
      const int64_t split = layout_.split[layout_.levels[l].mode];
      if (split > 0 && (split & (split - 1)) == 0) split_shift_[l] = BitsFor(split);
    }
    if (rows_in_order_) return PackSlicesOfRowsInOrder();
    if (PackColumnSegments() || PackBlockCoordinates()) return true;
    SortEntries();
    position_.resize(n_);
    next_.resize(n_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) position_[r] = 0;
    parent_positions_ = 1;
    for (int l = 0; l < num_levels; ++l) {
      const int kind = layout_.levels[l].kind;
      const bool packed = kind == kDenseLevel        ? PackDense(l)
                          : kind == kCompressedLevel ? PackCompressed(l)
                          : kind == kSingletonLevel  ? PackSingleton(l)
                                                     : PackSliced(l);
      if (!packed) return false;
      if (kind == kSlicedLevel) ++l;  // the lanes were packed with it
      if (l + 1 == options_.record_after_levels) RecordPositions();
    }
    if (!entry_rank_.empty() && Stored() == n_) {
      bool at_rank = true;
#pragma omp parallel for schedule(static) num_threads(threads_) reduction(&& : at_rank)
      for (int64_t r = 0; r < n_; ++r) at_rank = at_rank && position_[r] == r;
      leaf_at_rank_ = at_rank;
    }
    return true;
  }

  const std::string& Refusal() const {
    return refusal_;
  }
  // Refused because a coordinate does not fit the given encodings (options.encodings): the
  // same entries pack with 32-bit coordinates.
  bool RefusedForWidth() const {
    return refused_for_width_;
  }
  std::vector<Level>& Levels() {
    return levels_;
  }
  // Positions of the last level (1 without levels): the values' count.
  int64_t Stored() const {
    return levels_.empty() ? 1 : levels_.back().positions;
  }
  // The position of `entry` after options.record_after_levels levels.
  int32_t RecordedPosition(int64_t entry) const {
    return recorded_[entry];
  }

  // Each entry's position among the values (the leaf level's), in the order the entries were
  // given: new values of the same entries go there (ScatterValues does the same at packing,
  // `source_entry` alike). Empty when every entry sits at its own index, as a canonical CSR's do.
  Array<int32_t> EntryPositions(const int32_t* source_entry = nullptr) const {
    Array<int32_t> positions(n_);
    bool identity = true;
    if (leaf_at_rank_ && !source_entry) {
#pragma omp parallel for schedule(static) num_threads(threads_) reduction(&& : identity)
      for (int64_t e = 0; e < n_; ++e) {
        positions[e] = entry_rank_[e];
        identity = identity && entry_rank_[e] == e;
      }
      if (identity) positions = Array<int32_t>();
      return positions;
    }
#pragma omp parallel for schedule(static) num_threads(threads_) reduction(&& : identity)
    for (int64_t r = 0; r < n_; ++r) {
      const int64_t entry = source_entry ? source_entry[Entry(r)] : Entry(r);
      positions[entry] = position_[r];
      identity = identity && position_[r] == entry;
    }
    if (identity) positions = Array<int32_t>();
    return positions;
  }

  // values[position] = source[entry] at each entry's leaf position, zero at padding; with
  // `source_entry`, entry e's value is source[source_entry[e]] (RenumberRowEntries).
  template <class Value, class Source>
  void ScatterValues(Array<Value>& values, const Source* source,
                     const int32_t* source_entry = nullptr) const {
    const int64_t stored = Stored();
    values.resize(stored);
    Value* out = values.data();
    // Leaf positions of distinct entries are distinct: no two entries write the same value.
#pragma omp parallel num_threads(ThreadsFor(stored))
    {
      if (stored > n_) {  // padding: positions no entry writes
#pragma omp for schedule(static)
        for (int64_t q = 0; q < stored; ++q) out[q] = 0;
      }
      if (leaf_at_rank_) {  // in the entries' order: read in order, written to a few streams
#pragma omp for schedule(static)
        for (int64_t e = 0; e < n_; ++e)
          out[entry_rank_[e]] = static_cast<Value>(source[source_entry ? source_entry[e] : e]);
      } else {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n_; ++r) {
          const int64_t e = Entry(r);
          out[position_[r]] = static_cast<Value>(source[source_entry ? source_entry[e] : e]);
        }
      }
    }
  }

 private:
  int64_t Entry(int64_t r) const {
    return order_ ? order_[r] : r;
  }

  bool Refuse(std::string reason) {
    refusal_ = std::move(reason);
    return false;
  }

  // The coordinate of `entry` at level l.
  int32_t LevelCoordinate(int l, int64_t entry) const {
    return PartOf(layout_.levels[l].part, mode_coords_[layout_.levels[l].mode][entry],
                  layout_.split[layout_.levels[l].mode], split_shift_[l]);
  }
  // The part of coordinate v that a level stores; a split by a power of two shifts and masks
  // (a division per entry and level dominated sorting).
  static int32_t PartOf(int part, int64_t v, int64_t split, int shift) {
    if (part == kWholeMode) return static_cast<int32_t>(v);
    if (shift >= 0) return static_cast<int32_t>(part == kOuterPart ? v >> shift : v & (split - 1));
    return static_cast<int32_t>(part == kOuterPart ? v / split : v % split);
  }

  // Reads the coordinates of one level by sorted rank: out of the sorted keys when the level is
  // one of them (in order, no gather), else through the order from the entry's mode.
  struct LevelReader {
    const uint32_t* keys32 = nullptr;
    const uint64_t* keys64 = nullptr;
    int shift = 0;
    uint64_t mask = 0;
    const int32_t* mode = nullptr;
    const int32_t* order = nullptr;
    int part = kWholeMode;
    int64_t split = 1;
    int split_shift = -1;
    int32_t operator()(int64_t r) const {
      if (keys32) return static_cast<int32_t>((keys32[r] >> shift) & mask);
      if (keys64) return static_cast<int32_t>((keys64[r] >> shift) & mask);
      return PartOf(part, mode[order ? order[r] : r], split, split_shift);
    }
  };
  // Calls body(read), read(r) being the level's coordinate at sorted rank r, with a callable of
  // its own type for each way of reading: the loops over every entry then compile without a
  // branch per read (a compressed level took 5 ns an entry through LevelReader).
  template <class Body>
  auto WithReader(int l, Body&& body) const {
    const LevelReader c = Reader(l);
    if (c.keys32) {
      return body([keys = c.keys32, shift = c.shift, mask = static_cast<uint32_t>(c.mask)](
                      int64_t r) { return static_cast<int32_t>((keys[r] >> shift) & mask); });
    }
    if (c.keys64) {
      return body([keys = c.keys64, shift = c.shift, mask = c.mask](int64_t r) {
        return static_cast<int32_t>((keys[r] >> shift) & mask);
      });
    }
    if (!c.order && c.part == kWholeMode)
      return body([mode = c.mode](int64_t r) { return mode[r]; });
    if (!c.order && c.split_shift >= 0 && c.part == kInnerPart) {
      return body([mode = c.mode, mask = static_cast<int32_t>(c.split - 1)](int64_t r) {
        return mode[r] & mask;
      });
    }
    if (!c.order && c.split_shift >= 0) {
      return body([mode = c.mode, shift = c.split_shift](int64_t r) { return mode[r] >> shift; });
    }
    return body(c);
  }
  LevelReader Reader(int l) const {
    LevelReader reader;
    const LevelLayout& spec = layout_.levels[l];
    if (key_shift_[l] >= 0) {
      reader.keys32 = keys32_.empty() ? nullptr : keys32_.data();
      reader.keys64 = keys64_.empty() ? nullptr : keys64_.data();
      reader.shift = key_shift_[l];
      reader.mask = (uint64_t(1) << BitsFor(extents_[l])) - 1;
      return reader;
    }
    if (!ranked_coords_.empty() && !ranked_coords_[spec.mode].empty()) {
      reader.mode = ranked_coords_[spec.mode].data();
    } else {
      reader.mode = mode_coords_[spec.mode];
      reader.order = order_;
    }
    reader.part = spec.part;
    reader.split = layout_.split[spec.mode];
    reader.split_shift = split_shift_[l];
    return reader;
  }

  // The sorted keys no longer follow the ranks (the entries were sorted again).
  void ForgetKeys() {
    std::fill(key_shift_.begin(), key_shift_.end(), -1);
    keys32_ = Scratch<uint32_t>();
    keys64_ = Scratch<uint64_t>();
  }

  // The levels in the order entries are sorted by: the level order, except that a sliced level
  // comes after its lanes (entries are grouped by lane, then ranked by coordinate).
  std::vector<int> SortKeyOrder() const {
    std::vector<int> order(layout_.levels.size());
    std::iota(order.begin(), order.end(), 0);
    for (size_t l = 0; l + 1 < order.size(); ++l) {
      if (layout_.levels[l].kind == kSlicedLevel) std::swap(order[l], order[l + 1]);
    }
    return order;
  }

  // Canonical COO order is lexicographic over the modes, each split mode as (outer, inner).
  // Starting from it, stable sorts by keys j, j-1, ..., 0 give the format's order as soon as
  // the keys after j already follow the canonical order among themselves. Returns j + 1, the
  // number of sorting passes needed (0 for CSR, CSF and any format in mode order).
  int SortPassesNeeded(const std::vector<int>& key_order) const {
    auto canonical_rank = [&](int level) {
      return 2 * layout_.levels[level].mode + (layout_.levels[level].part == kInnerPart);
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
  void StableSortByKey(Scratch<int32_t>& perm, const int32_t* key, int64_t extent,
                       Scratch<int32_t>& scratch) const {
    const int64_t n = static_cast<int64_t>(perm.size());
    if (extent > n) {
      auto less = [key](int32_t a, int32_t b) { return key[a] < key[b]; };
#if defined(_OPENMP) && defined(__GLIBCXX__)
      __gnu_parallel::stable_sort(perm.begin(), perm.end(), less);
#else
      std::stable_sort(perm.begin(), perm.end(), less);
#endif
      return;
    }
    scratch.resize(n);
    CountingSort(
        n, ThreadsFor(n), extent, [&](int64_t r) { return key[perm[r]]; },
        [&](int64_t r, int64_t at) { scratch[at] = perm[r]; });
    perm.swap(scratch);
  }

  // Puts the entries in the format's order: order_[r] is the entry of sorted rank r (null for
  // the identity).
  void SortEntries() {
    const std::vector<int> key_order = SortKeyOrder();
    const int passes = SortPassesNeeded(key_order);
    if (passes == 1 && !canonical_ && extents_[key_order[0]] <= n_) {
      SortByOneKey(key_order[0]);
      return;
    }
    if (passes > 0) {  // sorted from the canonical order, in an array of its own
      perm_.resize(n_);
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (int64_t r = 0; r < n_; ++r)
        perm_[r] = canonical_ ? canonical_[r] : static_cast<int32_t>(r);
    }
    // The sort keys side by side in one integer per entry, when they fit in 64 bits: one radix
    // sort of contiguous (key, entry) pairs instead of a pass per level that gathers each key
    // through the permutation (7x faster for COO blocks of an 11M-entry graph).
    int bits = 0;
    for (int k = 0; k < passes; ++k) bits += BitsFor(extents_[key_order[k]]);
    if (passes > 1 && bits <= 32) {
      SortByCompositeKey(keys32_, key_order, passes, bits);
    } else if (passes > 1 && bits <= 64) {
      SortByCompositeKey(keys64_, key_order, passes, bits);
    } else {
      Scratch<int32_t> scratch, key(passes > 0 ? n_ : 0);
      for (int k = passes - 1; k >= 0; --k) {
        const int level = key_order[k];
#pragma omp parallel for schedule(static) num_threads(threads_)
        for (int64_t e = 0; e < n_; ++e) key[e] = LevelCoordinate(level, e);
        StableSortByKey(perm_, key.data(), extents_[level], scratch);
      }
    }
    order_ = passes > 0 ? perm_.data() : canonical_;
    GatherRankedCoordinates();
  }

  // One stable counting sort of entries given in canonical order by one level's coordinate (a
  // column-segmented CSR's segment, CSC's column). The coordinates of every mode and each
  // entry's rank move with the entries: gathered through the order afterwards, the entries of a
  // segment lie a line or more apart, so each input line was fetched again for every segment
  // (a column-segmented CSR of 20M entries: 90 of its 140 ms of sorting).
  void SortByOneKey(int level) {
    const LevelLayout& spec = layout_.levels[level];
    const int32_t* key_mode = mode_coords_[spec.mode];
    const int64_t split = layout_.split[spec.mode], extent = extents_[level];
    const int part = spec.part, shift = split_shift_[level];
    const int modes = static_cast<int>(layout_.dims.size());
    perm_.resize(n_);
    entry_rank_.resize(n_);
    ranked_coords_.assign(modes, Scratch<int32_t>());
    std::vector<int32_t*> ranked(modes);
    for (int m = 0; m < modes; ++m) {
      ranked_coords_[m].resize(n_);
      ranked[m] = ranked_coords_[m].data();
    }
    CountingSort(
        n_, threads_, extent, [&](int64_t e) { return PartOf(part, key_mode[e], split, shift); },
        [&](int64_t e, int64_t at) {
          perm_[at] = static_cast<int32_t>(e);
          entry_rank_[e] = static_cast<int32_t>(at);
          for (int m = 0; m < modes; ++m) ranked[m][at] = mode_coords_[m][e];
        });
    order_ = perm_.data();
  }

  // The coordinates of the modes that levels read (and not out of the sorted keys), gathered by
  // sorted rank once, the entries a few ranks ahead fetched early: read through the order on
  // every pass over a level instead, each entry costs a miss per pass where sorting scattered
  // them (a column-blocked CSR of 20M entries packed in 8x CSR's time).
  void GatherRankedCoordinates() {
    ranked_coords_.clear();
    if (!order_) return;
    ranked_coords_.resize(layout_.dims.size());
    constexpr int64_t kAhead = 16;
    for (size_t l = 0; l < layout_.levels.size(); ++l) {
      const int mode = layout_.levels[l].mode;
      if (key_shift_[l] >= 0 || !ranked_coords_[mode].empty()) continue;
      Scratch<int32_t>& ranked = ranked_coords_[mode];
      ranked.resize(n_);
      const int32_t* coords = mode_coords_[mode];
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (int64_t r = 0; r < n_; ++r) {
        if (r + kAhead < n_) __builtin_prefetch(coords + order_[r + kAhead]);
        ranked[r] = coords[order_[r]];
      }
    }
  }

  // Sorts by the first `passes` levels' coordinates side by side in one key per entry, and
  // keeps the sorted keys: the levels read their coordinates out of them.
  template <class Key>
  void SortByCompositeKey(Scratch<Key>& keys, const std::vector<int>& key_order, int passes,
                          int bits) {
    keys.resize(n_);
    // Each key level's mode, part and width, looked up once rather than per entry.
    struct KeyPart {
      const int32_t* mode;
      int part;
      int64_t split;
      int split_shift;
      int bits;
    };
    std::vector<KeyPart> parts;
    for (int k = 0; k < passes; ++k) {
      const int level = key_order[k];
      const LevelLayout& spec = layout_.levels[level];
      parts.push_back({mode_coords_[spec.mode], spec.part, layout_.split[spec.mode],
                       split_shift_[level], BitsFor(extents_[level])});
    }
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) {
      const int64_t entry = perm_[r];
      Key key = 0;
      for (const KeyPart& p : parts)
        key = static_cast<Key>(key << p.bits |
                               Key(PartOf(p.part, p.mode[entry], p.split, p.split_shift)));
      keys[r] = key;
    }
    // The entries come in canonical order, so a leading key over the first mode (its whole
    // coordinate or outer part) is sorted already: each of its runs is sorted on its own by the
    // bits below it, a run at a time per thread and in cache, when there are enough of them.
    const LevelLayout& lead = layout_.levels[key_order[0]];
    const int low_bits = bits - BitsFor(extents_[key_order[0]]);
    const bool lead_sorted = lead.mode == 0 && lead.part != kInnerPart && low_bits > 0;
    if (!lead_sorted || !SortRunsOfLeadingKey(keys, perm_, low_bits))
      RadixSortPairs(keys, perm_, bits);
    int shift = 0;
    for (int k = passes - 1; k >= 0; --k) {
      key_shift_[key_order[k]] = shift;
      shift += BitsFor(extents_[key_order[k]]);
    }
  }

  // Sorts (keys, values) whose keys' bits above `low_bits` never decrease: each run of equal
  // high bits by its low bits (stable LSD radix sort, 8 bits a pass: a run's 256 destinations
  // stay in L1 where 2048 did not; 2-D blocks of 20M uniform entries 218 -> 195-205 ms). False,
  // sorting nothing, when the runs are too few to share among the threads or too short to sort this
  // way.
  template <class Key>
  bool SortRunsOfLeadingKey(Scratch<Key>& keys, Scratch<int32_t>& values, int low_bits) const {
    const int64_t n = n_;
    // Each run's end by bisection, given up once the runs average under 4096 entries.
    const int64_t most_runs = n / 4096;
    std::vector<int64_t> starts = {0};
    while (starts.back() < n && static_cast<int64_t>(starts.size()) <= most_runs) {
      const Key high = keys[starts.back()] >> low_bits;
      starts.push_back(std::partition_point(keys.begin() + starts.back(), keys.end(),
                                            [&](Key k) { return (k >> low_bits) == high; }) -
                       keys.begin());
    }
    const int64_t runs = static_cast<int64_t>(starts.size()) - 1;
    if (starts.back() < n || runs < 4 * threads_) return false;
    constexpr int kDigitBits = 8;
    constexpr int64_t kBuckets = int64_t(1) << kDigitBits;
    Scratch<Key> key_scratch(n);
    Scratch<int32_t> value_scratch(n);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<int64_t> count(kBuckets);
#pragma omp for schedule(dynamic, 1)
      for (int64_t run = 0; run < runs; ++run) {
        const int64_t lo = starts[run], hi = starts[run + 1];
        Key* from_keys = keys.data();
        int32_t* from_values = values.data();
        Key* to_keys = key_scratch.data();
        int32_t* to_values = value_scratch.data();
        for (int shift = 0; shift < low_bits; shift += kDigitBits) {
          const Key mask =
              static_cast<Key>(std::min<int64_t>(kBuckets, int64_t(1) << (low_bits - shift)) - 1);
          std::fill(count.begin(), count.end(), 0);
          for (int64_t r = lo; r < hi; ++r) ++count[(from_keys[r] >> shift) & mask];
          int64_t running = lo;
          for (int64_t& c : count) {
            const int64_t here = c;
            c = running;
            running += here;
          }
          for (int64_t r = lo; r < hi; ++r) {
            const int64_t at = count[(from_keys[r] >> shift) & mask]++;
            to_keys[at] = from_keys[r];
            to_values[at] = from_values[r];
          }
          std::swap(from_keys, to_keys);
          std::swap(from_values, to_values);
        }
        if (from_keys != keys.data()) {  // an odd number of passes: back where the run was
          std::copy(from_keys + lo, from_keys + hi, keys.data() + lo);
          std::copy(from_values + lo, from_values + hi, values.data() + lo);
        }
      }
    }
    return true;
  }

  // Bits that hold coordinates in [0, extent).
  static int BitsFor(int64_t extent) {
    int bits = 0;
    while (bits < 63 && (int64_t(1) << bits) < extent) ++bits;
    return bits;
  }

  // Stable LSD radix sort of (keys[r], values[r]) by the low `bits` bits of the keys, 11 bits a
  // pass; each thread counts and scatters its own contiguous slice, in slice order.
  template <class Key>
  void RadixSortPairs(Scratch<Key>& keys, Scratch<int32_t>& values, int bits) const {
    constexpr int kDigitBits = 11;
    constexpr int64_t kBuckets = int64_t(1) << kDigitBits;
    const int64_t n = n_;
    const int threads = threads_;
    Scratch<Key> key_scratch(n);
    Scratch<int32_t> value_scratch(n);
    for (int shift = 0; shift < bits; shift += kDigitBits) {
      CountingSort(
          n, threads, kBuckets, [&](int64_t r) { return (keys[r] >> shift) & (kBuckets - 1); },
          [&](int64_t r, int64_t at) {
            key_scratch[at] = keys[r];
            value_scratch[at] = values[r];
          });
      keys.swap(key_scratch);
      values.swap(value_scratch);
    }
  }

  std::string CapText() const {
    return std::to_string(int64_t(std::min(cap_, double(kMaxPositions))));
  }

  // U: positions multiply; refused before anything of that size is allocated.
  bool PackDense(int l) {
    Level level;
    level.kind = kDenseLevel;
    level.extent = extents_[l];
    const double positions = double(parent_positions_) * double(level.extent);
    if (positions > cap_ || positions > double(kMaxPositions)) {
      return Refuse(
          "level " + std::to_string(l) + " would hold " + std::to_string(int64_t(positions)) +
          " positions, over the padding cap of " + CapText() +
          (options_.padding_cap < kMaxPositions
               ? " (" + std::to_string(int(options_.padding_cap)) + " x max(nnz, sum of dims))"
               : std::string()));
    }
    level.positions = parent_positions_ * level.extent;
    const int64_t extent = level.extent;
    const LevelReader c = Reader(l);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r)
      position_[r] = static_cast<int32_t>(position_[r] * extent + c(r));
    return AddLevel(std::move(level));
  }

  // C: an entry starts a new position when its parent or its coordinate differs from the
  // previous entry's, and always above a singleton level (a coordinate list keeps every entry,
  // repeating coordinates). Each thread counts the starts in its slice, then numbers them.
  bool PackCompressed(int l) {
    Level level;
    level.kind = kCompressedLevel;
    level.extent = extents_[l];
    // Every entry starts a position above a singleton level, and at the leaf: the entries are
    // distinct, so no two share a parent and a leaf coordinate.
    const int levels = static_cast<int>(layout_.levels.size());
    const bool every_entry = l + 1 == levels || layout_.levels[l + 1].kind == kSingletonLevel;
    std::vector<int64_t> starts(threads_ + 1, 0);
    Scratch<int32_t> crd;
    const int32_t* parent_of = position_.data();
    int32_t* next = next_.data();
    WithReader(l, [&](auto c) {
      auto is_start = [&](int64_t r) {
        return every_entry || r == 0 || parent_of[r] != parent_of[r - 1] || c(r) != c(r - 1);
      };
#pragma omp parallel num_threads(threads_)
      {
        ForEachSlice(threads_, [&](int u) {
          const int64_t lo = n_ * u / threads_, hi = n_ * (u + 1) / threads_;
          int64_t count = 0;
          for (int64_t r = lo; r < hi; ++r) count += is_start(r);
          starts[u + 1] = count;
        });
#pragma omp barrier
#pragma omp single
        {
          for (int v = 0; v < threads_; ++v) starts[v + 1] += starts[v];
          crd.resize(starts[threads_]);
          level.pos.resize(parent_positions_ + 1);  // every entry is written below
        }
        int32_t* out_crd = crd.data();
        int32_t* pos = level.pos.data();
        ForEachSlice(threads_, [&](int u) {
          const int64_t lo = n_ * u / threads_, hi = n_ * (u + 1) / threads_;
          int64_t q = starts[u] - 1;
          for (int64_t r = lo; r < hi; ++r) {
            if (is_start(r)) {
              ++q;
              out_crd[q] = c(r);
              // pos[p] counts the positions whose parent is below p: every p in
              // (previous entry's parent, this entry's parent] starts at q.
              const int64_t parent = parent_of[r];
              const int64_t previous = r == 0 ? -1 : parent_of[r - 1];
              for (int64_t p = previous + 1; p <= parent; ++p) pos[p] = static_cast<int32_t>(q);
            }
            next[r] = static_cast<int32_t>(q);
          }
        });
      }
      return true;
    });
    const int64_t total = starts[threads_];
    const int64_t last_parent = n_ > 0 ? position_[n_ - 1] : -1;
    for (int64_t p = last_parent + 1; p <= parent_positions_; ++p)
      level.pos[p] = static_cast<int32_t>(total);
    position_.swap(next_);  // next_: each entry's parent position
    level.positions = total;
    const int group = layout_.levels[l].group;
    if (group > 1 && !PadToGroups(l, group, level, crd)) return false;
    if (!StoreCoordinates(level, l, crd.data(), static_cast<int64_t>(crd.size()), 1)) return false;
    return AddLevel(std::move(level));
  }

  // Q: the level above gave every entry its own position; each holds the entry's coordinate,
  // absolute (a segment is one entry: nothing to be relative to).
  bool PackSingleton(int l) {
    Level level;
    level.kind = kSingletonLevel;
    level.extent = extents_[l];
    level.positions = parent_positions_;
    const LevelReader c = Reader(l);
    Scratch<int32_t> crd(parent_positions_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) crd[position_[r]] = c(r);
    if (options_.choose_encodings) {
      level.encoding.bits = level.extent <= 256 ? 8 : level.extent <= 65536 ? 16 : 32;
    } else if (l < static_cast<int>(options_.encodings.size())) {
      level.encoding = options_.encodings[l];
      if (level.encoding.relative)
        return Refuse("singleton level " + std::to_string(l) + " has no relative coordinates");
      for (int64_t q = 0; level.encoding.bits < 32 && q < level.positions; ++q) {
        if (crd[q] < (int64_t(1) << level.encoding.bits)) continue;
        refused_for_width_ = true;
        return Refuse("level " + std::to_string(l) + ": coordinate " + std::to_string(crd[q]) +
                      " does not fit the " + std::to_string(level.encoding.bits) +
                      "-bit coordinates this kernel was tuned with (another sparsity pattern?)");
      }
    }
    const int bits = level.encoding.bits;
    level.crd.resize(level.positions * bits / 8);
    auto store = [&](auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(level.positions))
      for (int64_t q = 0; q < level.positions; ++q) out[q] = static_cast<T>(crd[q]);
    };
    if (bits == 8) store(level.crd.data());
    if (bits == 16) store(reinterpret_cast<uint16_t*>(level.crd.data()));
    if (bits == 32) store(reinterpret_cast<int32_t*>(level.crd.data()));
    return AddLevel(std::move(level));
  }

  // G: every segment of a compressed level padded to whole groups, repeating its last
  // coordinate (zero values). next_ holds each entry's parent position.
  bool PadToGroups(int l, int group, Level& level, Scratch<int32_t>& crd) {
    Array<int32_t> padded(parent_positions_ + 1);
    padded[0] = 0;
    for (int64_t p = 0; p < parent_positions_; ++p) {
      const int64_t length = level.pos[p + 1] - level.pos[p];
      padded[p + 1] = static_cast<int32_t>(
          std::min<int64_t>(padded[p] + (length + group - 1) / group * group, kMaxPositions));
    }
    const int64_t padded_total = padded[parent_positions_];
    if (double(padded_total) > cap_ || padded_total >= kMaxPositions) {
      return Refuse("grouped level " + std::to_string(l) + " would pad to " +
                    std::to_string(padded_total) + " positions, over the padding cap");
    }
    Scratch<int32_t> grouped(padded_total);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions_))
    for (int64_t p = 0; p < parent_positions_; ++p) {
      const int64_t from = level.pos[p], length = level.pos[p + 1] - from;
      for (int64_t q = 0; q < padded[p + 1] - padded[p]; ++q)
        grouped[padded[p] + q] = crd[from + std::min(q, length - 1)];
    }
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r)
      position_[r] = static_cast<int32_t>(padded[next_[r]] + (position_[r] - level.pos[next_[r]]));
    level.pos.swap(padded);
    crd.swap(grouped);
    level.positions = padded_total;
    return true;
  }

  // S and its lanes together. Entries are sorted by parent, lane, then coordinate: an entry's
  // slot is the rank of its coordinate within its (parent, lane) run.
  bool PackSliced(int l) {
    // Lanes that are the last level: no entry shares a slot, each (parent, lane) run's entries
    // fill its slots in order, and the runs are few next to the entries (a SELL's rows).
    if (l + 2 == static_cast<int>(layout_.levels.size()) &&
        double(parent_positions_) * double(extents_[l + 1]) <= 2.0 * double(n_) + 65536.0)
      return PackSlicedLanesLast(l);
    Level level;
    level.kind = kSlicedLevel;
    level.extent = extents_[l];
    const LevelReader c = Reader(l);
    const int64_t lanes = extents_[l + 1];
    const LevelReader lane = Reader(l + 1);
    // r continues the (parent, lane) run of r - 1; entries that differ only below the lanes
    // share their slot.
    auto continues = [&](int64_t r) {
      return r > 0 && position_[r] == position_[r - 1] && lane(r) == lane(r - 1);
    };
    auto shares_slot = [&](int64_t r) { return continues(r) && c(r) == c(r - 1); };
    // Each entry's slot within its run; next_ is free until the end, where each entry's rank
    // becomes its leaf position in place (one array of fresh memory fewer: 4 bytes a nonzero).
    int32_t* const rank = next_.data();
    Scratch<int32_t> slots(parent_positions_ + 1);
    Scratch<int32_t> smallest(parent_positions_);
    constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions_))
    for (int64_t p = 0; p <= parent_positions_; ++p) {
      slots[p] = 0;
      if (p < parent_positions_) smallest[p] = kNone;
    }
    // Each thread ranks its slice as if it started a run, then the runs that cross a slice
    // boundary are continued in slice order. Per parent: the longest lane (slots) and the
    // smallest coordinate; a thread's first and last parents may be shared, so those are
    // merged after the others.
    const int threads = threads_;
    std::vector<int32_t> edge_slots(2 * threads, 0), edge_smallest(2 * threads, kNone);
#pragma omp parallel num_threads(threads)
    {
      ForEachSlice(threads, [&](int u) {
        const int64_t lo = n_ * u / threads, hi = n_ * (u + 1) / threads;
        for (int64_t r = lo; r < hi; ++r)
          rank[r] = r == lo || !continues(r) ? 0 : rank[r - 1] + !shares_slot(r);
      });
#pragma omp barrier
#pragma omp single
      for (int v = 1; v < threads; ++v) {
        const int64_t first = n_ * v / threads, end = n_ * (v + 1) / threads;
        if (first >= end || !continues(first)) continue;
        const int32_t offset = rank[first - 1] + !shares_slot(first);
        for (int64_t r = first; r < end && (r == first || continues(r)); ++r) rank[r] += offset;
      }
      ForEachSlice(threads, [&](int u) {
        const int64_t lo = n_ * u / threads, hi = n_ * (u + 1) / threads;
        if (lo >= hi) return;
        const int64_t first_parent = position_[lo], last_parent = position_[hi - 1];
        for (int64_t r = lo; r < hi; ++r) {
          const int64_t parent = position_[r];
          const int32_t length = rank[r] + 1, coordinate = c(r);
          const int edge = parent == first_parent ? 2 * u : parent == last_parent ? 2 * u + 1 : -1;
          int32_t& longest = edge < 0 ? slots[parent + 1] : edge_slots[edge];
          int32_t& least = edge < 0 ? smallest[parent] : edge_smallest[edge];
          longest = std::max(longest, length);
          least = std::min(least, coordinate);
        }
      });
#pragma omp barrier
#pragma omp single
      for (int v = 0; v < threads; ++v) {
        const int64_t first = n_ * v / threads, end = n_ * (v + 1) / threads;
        if (first >= end) continue;
        for (int side = 0; side < 2; ++side) {
          const int64_t parent = position_[side == 0 ? first : end - 1];
          slots[parent + 1] = std::max(slots[parent + 1], edge_slots[2 * v + side]);
          smallest[parent] = std::min(smallest[parent], edge_smallest[2 * v + side]);
        }
      }
    }
    level.pos.resize(parent_positions_ + 1);
    level.pos[0] = 0;
    for (int64_t p = 0; p < parent_positions_; ++p) level.pos[p + 1] = level.pos[p] + slots[p + 1];
    level.positions = level.pos[parent_positions_];
    Level lane_level;
    if (!LanesOf(level, l, lanes, &lane_level)) return false;
    // Coordinates per lane position; padding repeats the lane's last coordinate (or, for an
    // empty lane, the smallest of the slice), so it stays inside the slice's span.
    Scratch<int32_t> crd(lane_level.positions);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (int64_t q = 0; q < lane_level.positions; ++q) crd[q] = -1;
        // One writer per slot: the first of the entries that share it.
#pragma omp for schedule(static)
      for (int64_t r = 0; r < n_; ++r) {
        const int64_t leaf = (level.pos[position_[r]] + rank[r]) * lanes + lane(r);
        if (!shares_slot(r)) crd[leaf] = c(r);
        next_[r] = static_cast<int32_t>(leaf);
      }
    }
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(parent_positions_))
    for (int64_t p = 0; p < parent_positions_; ++p) {
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
    position_.swap(next_);
    if (l + 2 < static_cast<int>(layout_.levels.size())) SortByPosition(lane_level.positions);
    if (!StoreCoordinates(level, l, crd.data(), static_cast<int64_t>(crd.size()), lanes))
      return false;
    levels_.push_back(std::move(level));
    return AddLevel(std::move(lane_level));
  }

  // The U level of a sliced level's lanes, refused when its slots pad past the cap.
  bool LanesOf(const Level& sliced, int l, int64_t lanes, Level* lane_level) {
    lane_level->kind = kDenseLevel;
    lane_level->extent = lanes;
    const double lane_positions = double(sliced.positions) * double(lanes);
    if (lane_positions > cap_ || lane_positions > double(kMaxPositions)) {
      return Refuse("sliced level " + std::to_string(l) + " would pad to " +
                    std::to_string(int64_t(lane_positions)) +
                    " positions, over the padding cap of " + CapText());
    }
    lane_level->positions = sliced.positions * lanes;
    return true;
  }

  // Fills slots [count(c), to - from) of each lane c of the slice at slots [from, to): each lane
  // repeats its last coordinate, an empty lane the smallest of the slice (which some lane's
  // first slot holds), so the padding stays inside the slice's span.
  template <class Count>
  static void PadSlice(int32_t* crd, int64_t from, int64_t to, int64_t lanes, Count count) {
    int32_t least = std::numeric_limits<int32_t>::max();
    for (int64_t c = 0; c < lanes; ++c) {
      if (count(c) > 0) least = std::min(least, crd[from * lanes + c]);
    }
    if (least == std::numeric_limits<int32_t>::max()) least = 0;
    for (int64_t c = 0; c < lanes; ++c) {
      const int64_t n = count(c);
      const int32_t last = n > 0 ? crd[(from + n - 1) * lanes + c] : least;
      for (int64_t q = from + n; q < to; ++q) crd[q * lanes + c] = last;
    }
  }

  // PackSliced when the lanes are the last level. Entries are sorted by parent, lane, then
  // coordinate and distinct, so a run of one (parent, lane) holds that lane's coordinates in
  // slot order: the run lengths size the slices, then each run is written where it goes, with
  // no per-entry rank and no pass to mark unwritten slots (a renumbered graph500_s19 in SELL-16:
  // 165-320 ms -> 70-130 ms, the same arrays).
  bool PackSlicedLanesLast(int l) {
    Level level;
    level.kind = kSlicedLevel;
    level.extent = extents_[l];
    const LevelReader c = Reader(l);
    const int64_t lanes = extents_[l + 1];
    const LevelReader lane = Reader(l + 1);
    const int64_t parents = parent_positions_;
    auto run_of = [&](int64_t r) { return int64_t(position_[r]) * lanes + lane(r); };
    // Each thread takes the runs that start in its slice of the entries.
    const int threads = threads_;
    std::vector<int64_t> begin(threads + 1, n_);
    Scratch<int32_t> length(parents * lanes);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (int64_t q = 0; q < parents * lanes; ++q) length[q] = 0;
      // The first run that starts at or after the slice's first entry: runs end where the
      // next thread's begin, a run start or the end, is.
      ForEachSlice(threads, [&](int u) {
        int64_t r = n_ * u / threads;
        while (r > 0 && r < n_ && run_of(r) == run_of(r - 1)) ++r;
        begin[u] = r;
      });
#pragma omp barrier
      ForEachSlice(threads, [&](int u) {
        const int64_t end = begin[u + 1];
        int64_t r = begin[u];
        while (r < end) {
          const int64_t run = run_of(r);
          int64_t next = r + 1;
          while (next < n_ && run_of(next) == run) ++next;
          length[run] = static_cast<int32_t>(next - r);
          r = next;
        }
      });
    }
    level.pos.resize(parents + 1);
    level.pos[0] = 0;
    for (int64_t p = 0; p < parents; ++p) {
      int32_t longest = 0;
      for (int64_t c_lane = 0; c_lane < lanes; ++c_lane)
        longest = std::max(longest, length[p * lanes + c_lane]);
      level.pos[p + 1] = level.pos[p] + longest;
    }
    level.positions = level.pos[parents];
    Level lane_level;
    if (!LanesOf(level, l, lanes, &lane_level)) return false;
    // Written as 32-bit integers where the level keeps its coordinates: kept there when that is
    // their encoding, else stored narrower from there (StoreCoordinates).
    level.crd.resize(lane_level.positions * sizeof(int32_t));
    int32_t* const crd = reinterpret_cast<int32_t*>(level.crd.data());
#pragma omp parallel num_threads(threads)
    {
      // Slot k of a run's lane: its k-th entry; each entry's position becomes its leaf's.
      ForEachSlice(threads, [&](int u) {
        const int64_t end = begin[u + 1];
        int64_t r = begin[u];
        while (r < end) {
          const int64_t parent = position_[r], c_lane = lane(r);
          const int64_t count = length[parent * lanes + c_lane];
          const int64_t first = int64_t(level.pos[parent]) * lanes + c_lane;
          for (int64_t k = 0; k < count; ++k) {
            const int64_t leaf = first + k * lanes;
            crd[leaf] = c(r + k);
            position_[r + k] = static_cast<int32_t>(leaf);
          }
          r += count;
        }
      });
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t p = 0; p < parents; ++p) {
        PadSlice(crd, level.pos[p], level.pos[p + 1], lanes,
                 [&](int64_t c_lane) { return int64_t(length[p * lanes + c_lane]); });
      }
    }
    if (!StoreCoordinates(level, l, crd, lane_level.positions, lanes)) return false;
    levels_.push_back(std::move(level));
    return AddLevel(std::move(lane_level));
  }

  // PackDense and PackSlicedLanesLast of SELL with the rows taken in the order
  // TakeRowsInOrder gave: each row's run is its given row's entries, read where they are
  // (canonical, so in column order), and each entry's position is kept at its own index (no
  // order: Entry(r) is r).
  bool PackSlicesOfRowsInOrder() {
    if (!PacksRowsInOrder(layout_) || canonical_ || options_.record_after_levels > 0)
      return Refuse("rows in a new order pack only into SELL, from entries in canonical order");
    const int64_t rows = layout_.dims[0], slices = extents_[0], lanes = extents_[2];
    const int32_t* col_of = mode_coords_[1];
    const std::vector<int64_t> start = RowStarts(rows, n_, mode_coords_[0]);
    const int32_t* given = rows_in_order_;
    auto count_of = [&](int64_t r) {
      return r < rows ? start[given[r] + 1] - start[given[r]] : int64_t(0);
    };
    if (double(slices) > cap_) return Refuse("level 0 would hold more positions than the cap");
    Level top;
    top.kind = kDenseLevel;
    top.extent = slices;
    top.positions = slices;
    AddLevel(std::move(top));
    Level level;
    level.kind = kSlicedLevel;
    level.extent = extents_[1];
    // Each row's start is a jump in memory (rows in a new order): fetched a few slices ahead.
    constexpr int64_t kSlicesAhead = 4;
    auto fetch_starts = [&](int64_t p) {
      for (int64_t r = p * lanes; r < std::min(rows, (p + 1) * lanes); ++r)
        __builtin_prefetch(&start[given[r]]);
    };
    level.pos.resize(slices + 1);
    level.pos[0] = 0;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t p = 0; p < slices; ++p) {
      if (p + kSlicesAhead < slices) fetch_starts(p + kSlicesAhead);
      int64_t longest = 0;
      for (int64_t c = 0; c < lanes; ++c) longest = std::max(longest, count_of(p * lanes + c));
      level.pos[p + 1] = static_cast<int32_t>(longest);
    }
    for (int64_t p = 0; p < slices; ++p) {
      if (double(level.pos[p]) + level.pos[p + 1] > double(kMaxPositions))
        return Refuse("the sliced level would pass 32-bit positions");
      level.pos[p + 1] += level.pos[p];
    }
    level.positions = level.pos[slices];
    Level lane_level;
    if (!LanesOf(level, 1, lanes, &lane_level)) return false;
    level.crd.resize(lane_level.positions * sizeof(int32_t));
    int32_t* const crd = reinterpret_cast<int32_t*>(level.crd.data());
    position_.resize(n_);
    // Rows sorted by length make the first slices the longest: small chunks, taken as they come.
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads_)
    for (int64_t p = 0; p < slices; ++p) {
      if (p + 2 * kSlicesAhead < slices) fetch_starts(p + 2 * kSlicesAhead);
      if (p + kSlicesAhead < slices) {
        for (int64_t r = (p + kSlicesAhead) * lanes;
             r < std::min(rows, (p + kSlicesAhead + 1) * lanes); ++r)
          __builtin_prefetch(col_of + start[given[r]]);
      }
      const int64_t from = level.pos[p];
      for (int64_t c = 0; c < lanes; ++c) {
        const int64_t r = p * lanes + c, count = count_of(r);
        const int64_t first = r < rows ? start[given[r]] : 0;
        for (int64_t k = 0; k < count; ++k) {
          const int64_t leaf = (from + k) * lanes + c;
          crd[leaf] = col_of[first + k];
          position_[first + k] = static_cast<int32_t>(leaf);
        }
      }
      PadSlice(crd, from, level.pos[p + 1], lanes,
               [&](int64_t c) { return count_of(p * lanes + c); });
    }
    if (!StoreCoordinates(level, 1, crd, lane_level.positions, lanes)) return false;
    levels_.push_back(std::move(level));
    return AddLevel(std::move(lane_level));
  }

  // Column segments (k1:U i:C k0:C) or column blocks (k1:U i:U k0:C) of a matrix: k's outer
  // part, the rows, then k's inner part.
  static bool IsColumnSegments(const Layout& layout) {
    const std::vector<LevelLayout>& l = layout.levels;
    return layout.dims.size() == 2 && layout.split.size() == 2 && l.size() == 3 && l[0].mode == 1 &&
           l[0].part == kOuterPart && l[0].kind == kDenseLevel && l[1].mode == 0 &&
           l[1].part == kWholeMode &&
           (l[1].kind == kDenseLevel || (l[1].kind == kCompressedLevel && l[1].group == 1)) &&
           l[2].mode == 1 && l[2].part == kInnerPart && l[2].kind == kCompressedLevel &&
           l[2].group == 1;
  }

  // Whether a given encoding holds coordinates whose largest is `most` and whose widest segment
  // spans `span` (the direct paths' check, from their first pass's statistics).
  static bool FitsEncoding(const Encoding& e, int64_t most, int64_t span) {
    return e.bits >= 32 || (e.relative ? span : most) < (int64_t(1) << e.bits);
  }

  // Calls body(T{}) with T the integer type that holds coordinates of `bits` bits.
  template <class Body>
  static void WithCoordinateType(int bits, Body&& body) {
    if (bits == 8) {
      body(uint8_t{});
    } else if (bits == 16) {
      body(uint16_t{});
    } else {
      body(int32_t{});
    }
  }

  // IsColumnSegments packed straight from entries in canonical order, with no sort: each
  // thread counts, per segment, its rows' entries and the rows that have some (runs), then
  // writes each entry where it goes. Sorting the entries by segment first took 3-4.5x a CSR's
  // packing at 20M entries, which a cache-blocked layout then had to pay back call by call.
  // Builds the arrays the sorting path builds; false, with nothing built, where that path
  // should decide: a refusal (it words them) or a matrix this one does not cover.
  bool PackColumnSegments() {
    if (!IsColumnSegments(layout_) || canonical_ || rows_in_order_ ||
        options_.record_after_levels > 0 || n_ == 0 || extents_[0] > n_)
      return false;
    const bool dense_rows = layout_.levels[1].kind == kDenseLevel;
    const int64_t rows = layout_.dims[0], segments = extents_[0], width = extents_[2];
    const int64_t split = layout_.split[1];
    const int shift = split_shift_[2];
    const double positions_cap = std::min(cap_, double(kMaxPositions));
    if (double(segments) > positions_cap) return false;
    if (dense_rows && double(segments) * double(rows) > positions_cap) return false;
    const int32_t* col = mode_coords_[1];
    auto segment_of = [&](int32_t c) -> int64_t { return shift >= 0 ? c >> shift : c / split; };
    auto inner_of = [&](int32_t c) -> int32_t {
      return static_cast<int32_t>(shift >= 0 ? c & (split - 1) : c % split);
    };

    // Each thread takes whole rows, about as many entries as the others.
    const std::vector<int64_t> start = RowStarts(rows, n_, mode_coords_[0]);
    const int threads = threads_;
    std::vector<int64_t> row_lo(threads + 1, rows);
    for (int t = 0; t < threads; ++t) {
      row_lo[t] =
          std::lower_bound(start.begin(), start.begin() + rows, n_ * t / threads) - start.begin();
    }
    // Per thread and segment: runs and entries (then their offsets), first and last row.
    const size_t cells = static_cast<size_t>(threads) * segments;
    std::vector<int64_t> runs(cells, 0), entries(cells, 0);
    std::vector<int32_t> first_row(cells, -1), last_row(cells, -1);
    std::vector<int64_t> widest(threads, 0), largest(threads, 0);
#pragma omp parallel num_threads(threads)
    ForEachSlice(threads, [&](int t) {
      const size_t at = static_cast<size_t>(t) * segments;
      int64_t* my_runs = runs.data() + at;
      int64_t* my_entries = entries.data() + at;
      int32_t* my_first = first_row.data() + at;
      int32_t* my_last = last_row.data() + at;
      int64_t span = 0, most = 0;
      for (int64_t i = row_lo[t]; i < row_lo[t + 1]; ++i) {
        int64_t previous = -1, run_start = start[i];
        int32_t run_first = 0;
        for (int64_t e = start[i]; e < start[i + 1]; ++e) {
          const int64_t s = segment_of(col[e]);
          const int32_t inner = inner_of(col[e]);
          if (s != previous) {
            if (previous >= 0) my_entries[previous] += e - run_start;
            ++my_runs[s];
            if (my_first[s] < 0) my_first[s] = static_cast<int32_t>(i);
            my_last[s] = static_cast<int32_t>(i);
            previous = s;
            run_start = e;
            run_first = inner;
          }
          span = std::max<int64_t>(span, inner - run_first);  // a run's columns ascend
          most = std::max<int64_t>(most, inner);
        }
        if (previous >= 0) my_entries[previous] += start[i + 1] - run_start;
      }
      widest[t] = span;
      largest[t] = most;
    });
    const int64_t leaf_span = *std::max_element(widest.begin(), widest.end());
    const int64_t leaf_largest = *std::max_element(largest.begin(), largest.end());

    // Segment by segment, thread by thread: each thread's first run and entry in a segment.
    Level top, middle, leaf;
    top.kind = kDenseLevel;
    top.extent = top.positions = segments;
    middle.kind = dense_rows ? kDenseLevel : kCompressedLevel;
    middle.extent = rows;
    if (!dense_rows) middle.pos.resize(segments + 1);
    std::vector<int32_t> segment_first(segments, 0);  // each segment's first row (0: none)
    int64_t run_total = 0, entry_total = 0, row_span = 0, row_largest = 0;
    for (int64_t s = 0; s < segments; ++s) {
      if (!dense_rows) middle.pos[s] = static_cast<int32_t>(run_total);
      int32_t lo = -1, hi = -1;
      for (int t = 0; t < threads; ++t) {
        const size_t c = static_cast<size_t>(t) * segments + s;
        const int64_t r = runs[c], e = entries[c];
        runs[c] = run_total;
        entries[c] = entry_total;
        run_total += r;
        entry_total += e;
        if (first_row[c] >= 0 && lo < 0) lo = first_row[c];
        if (last_row[c] >= 0) hi = last_row[c];
      }
      if (lo >= 0) {
        segment_first[s] = lo;
        row_span = std::max<int64_t>(row_span, hi - lo);
        row_largest = std::max<int64_t>(row_largest, hi);
      }
    }
    if (!dense_rows) middle.pos[segments] = static_cast<int32_t>(run_total);
    const int64_t parents = dense_rows ? segments * rows : run_total;
    middle.positions = parents;
    if (options_.choose_encodings) {
      if (!dense_rows)
        middle.encoding = ChooseEncoding(parents, segments, rows, rows <= 256 ? rows : row_span);
      leaf.encoding = ChooseEncoding(n_, parents, width, width <= 256 ? width : leaf_span);
    } else {
      const std::vector<Encoding>& given = options_.encodings;
      if (!dense_rows && given.size() > 1) middle.encoding = given[1];
      if (given.size() > 2) leaf.encoding = given[2];
      if (!FitsEncoding(middle.encoding, row_largest, row_span) ||
          !FitsEncoding(leaf.encoding, leaf_largest, leaf_span))
        return false;
    }
    const bool row_relative = !dense_rows && middle.encoding.relative;
    const bool leaf_relative = leaf.encoding.relative;
    if (!dense_rows) middle.crd.resize(parents * middle.encoding.bits / 8);
    if (row_relative) middle.base.assign(segment_first.begin(), segment_first.end());
    leaf.kind = kCompressedLevel;
    leaf.extent = width;
    leaf.positions = n_;
    leaf.pos.resize(parents + 1);
    leaf.crd.resize(n_ * leaf.encoding.bits / 8);
    if (leaf_relative) leaf.base.resize(parents);
    position_.resize(n_);

    WithCoordinateType(middle.encoding.bits, [&](auto row_type) {
      WithCoordinateType(leaf.encoding.bits, [&](auto inner_type) {
        using Row = decltype(row_type);
        using Inner = decltype(inner_type);
        Row* row_crd = reinterpret_cast<Row*>(middle.crd.data());
        Inner* inner_crd = reinterpret_cast<Inner*>(leaf.crd.data());
        int32_t* leaf_pos = leaf.pos.data();
        int32_t* leaf_base = leaf.base.data();
#pragma omp parallel num_threads(threads)
        ForEachSlice(threads, [&](int t) {
          const size_t at = static_cast<size_t>(t) * segments;
          std::vector<int64_t> next_run(runs.begin() + at, runs.begin() + at + segments);
          std::vector<int64_t> next_entry(entries.begin() + at, entries.begin() + at + segments);
          for (int64_t i = row_lo[t]; i < row_lo[t + 1]; ++i) {
            if (dense_rows) {  // every (segment, row) is a parent, with entries or not
              for (int64_t s = 0; s < segments; ++s) {
                leaf_pos[s * rows + i] = static_cast<int32_t>(next_entry[s]);
                if (leaf_relative) leaf_base[s * rows + i] = 0;
              }
            }
            int64_t previous = -1;
            int32_t base = 0;
            for (int64_t e = start[i]; e < start[i + 1]; ++e) {
              const int64_t s = segment_of(col[e]);
              const int32_t inner = inner_of(col[e]);
              if (s != previous) {
                previous = s;
                base = leaf_relative ? inner : 0;
                const int64_t parent = dense_rows ? s * rows + i : next_run[s]++;
                if (!dense_rows) {
                  row_crd[parent] = static_cast<Row>(i - (row_relative ? segment_first[s] : 0));
                  leaf_pos[parent] = static_cast<int32_t>(next_entry[s]);
                }
                if (leaf_relative) leaf_base[parent] = inner;
              }
              const int64_t q = next_entry[s]++;
              inner_crd[q] = static_cast<Inner>(inner - base);
              position_[e] = static_cast<int32_t>(q);
            }
          }
        });
      });
    });
    leaf.pos[parents] = static_cast<int32_t>(n_);
    AddLevel(std::move(top));
    AddLevel(std::move(middle));
    return AddLevel(std::move(leaf));
  }

  // Blocks of a matrix stored as a coordinate list per block (i1:U k1:C k0:C i0:Q): row
  // blocks, their column blocks, then each block's entries by column and row.
  static bool IsBlockCoordinates(const Layout& layout) {
    const std::vector<LevelLayout>& l = layout.levels;
    return layout.dims.size() == 2 && layout.split.size() == 2 && l.size() == 4 && l[0].mode == 0 &&
           l[0].part == kOuterPart && l[0].kind == kDenseLevel && l[1].mode == 1 &&
           l[1].part == kOuterPart && l[1].kind == kCompressedLevel && l[1].group == 1 &&
           l[2].mode == 1 && l[2].part == kInnerPart && l[2].kind == kCompressedLevel &&
           l[2].group == 1 && l[3].mode == 0 && l[3].part == kInnerPart &&
           l[3].kind == kSingletonLevel;
  }

  // A band's block rows, counted into place by column: the columns they span, over the entries,
  // at most.
  static constexpr double kMostSpanPerEntry = 0.25;

  // IsBlockCoordinates packed block row by block row from entries in canonical order. A block
  // row is one range of the entries and of the leaf positions alike. Where its columns span
  // few next to its entries (a band), a stable counting sort by column over that span puts
  // them in block, column, row order at once (canonical order gives the rows in order);
  // elsewhere (graphs) a counting sort by column block, then each block sorted by a key of its
  // column and row. Either writes the levels out in order, with little scratch: the sorting
  // path, a radix sort of every entry by a key of all four levels and then a pass per level,
  // took 2-2.4x a CSR's packing on a band and 3-4x on scattered patterns, and on fresh memory,
  // where its scratch arrays are faulted in, 1.3-2.8x this path's time. False, with nothing
  // built, as PackColumnSegments.
  bool PackBlockCoordinates() {
    if (!IsBlockCoordinates(layout_) || canonical_ || rows_in_order_ ||
        options_.record_after_levels > 0 || n_ == 0)
      return false;
    const int64_t rows = layout_.dims[0], row_split = layout_.split[0];
    const int64_t col_split = layout_.split[1];
    const int64_t block_rows = extents_[0], block_cols = extents_[1];
    // Pass 1 keeps a slot per column block for each block row: bounded by the entries.
    if (double(block_rows) * double(block_cols) > 4.0 * double(n_) + 65536.0) return false;
    if (double(block_rows) > std::min(cap_, double(kMaxPositions))) return false;
    const int col_shift = split_shift_[1];
    auto block_of = [&](int32_t c) -> int64_t {
      return col_shift >= 0 ? c >> col_shift : c / col_split;
    };
    auto inner_of = [&](int32_t c) -> int32_t {
      return static_cast<int32_t>(col_shift >= 0 ? c & (col_split - 1) : c % col_split);
    };
    const int32_t* col = mode_coords_[1];
    // The columns of a few entries of each block row bound its span from below: most matrices
    // that are no band are told apart before their rows are counted.
    const int32_t* row_of = mode_coords_[0];
    double least_spans = 0;
    for (int64_t b = 0; b < block_rows; ++b) {
      const int64_t lo = std::lower_bound(row_of, row_of + n_, b * row_split) - row_of;
      const int64_t hi = std::lower_bound(row_of + lo, row_of + n_, (b + 1) * row_split) - row_of;
      if (lo == hi) continue;
      int32_t least = col[lo], most = col[lo];
      for (int64_t k = 1; k < 64; ++k) {
        const int32_t c = col[lo + (hi - lo - 1) * k / 63];
        least = std::min(least, c);
        most = std::max(most, c);
      }
      least_spans += double(most) - least + 1;
    }
    bool narrow = least_spans <= kMostSpanPerEntry * double(n_);
    // Elsewhere each block is sorted by a key of its column and row in 32 bits.
    const int row_bits = BitsFor(row_split), column_bits = BitsFor(col_split);
    if (!narrow && row_bits + column_bits > 32) return false;
    const std::vector<int64_t> start = RowStarts(rows, n_, row_of);
    auto first_entry = [&](int64_t b) { return start[std::min(rows, b * row_split)]; };
    const int threads = threads_;
    std::vector<int64_t> block_lo(threads + 1, block_rows);
    for (int t = 0; t < threads; ++t) {
      int64_t b = 0, hi = block_rows;  // the first block row starting at or after its share
      while (b < hi) {
        const int64_t mid = (b + hi) / 2;
        if (first_entry(mid) < n_ * t / threads) {
          b = mid + 1;
        } else {
          hi = mid;
        }
      }
      block_lo[t] = b;
    }

    // Each block row's columns span from its rows' smallest first column to their largest last
    // one (two reads a row). A counting sort over spans wide next to the entries scatters them
    // over more memory than the caches hold (20M uniform entries in blocks of 64K: 5.8x a CSR's
    // packing); those are sorted block by block instead.
    std::vector<int32_t> col_lo(block_rows, 0), col_hi(block_rows, -1);  // -1: no entries
    double spans = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : spans)
    for (int64_t b = 0; b < (narrow ? block_rows : 0); ++b) {
      const int64_t r0 = b * row_split, r1 = std::min(rows, r0 + row_split);
      for (int64_t r = r0; r < r1; ++r) {
        if (start[r] == start[r + 1]) continue;
        if (col_hi[b] < 0 || col[start[r]] < col_lo[b]) col_lo[b] = col[start[r]];
        col_hi[b] = std::max(col_hi[b], col[start[r + 1] - 1]);
      }
      spans += double(col_hi[b]) - col_lo[b] + 1;
    }
    narrow = narrow && spans <= kMostSpanPerEntry * double(n_);

    // Per block row: its blocks; per thread: the widest span of block columns in a block row,
    // of columns in a block, and the largest coordinates (for given encodings).
    std::vector<int64_t> blocks_in(block_rows + 1, 0);
    std::vector<int64_t> block_span(threads, 0), inner_span(threads, 0), block_most(threads, 0),
        inner_most(threads, 0), row_most(threads, 0);
#pragma omp parallel num_threads(threads)
    ForEachSlice(threads, [&](int t) {
      std::vector<int32_t> lo(block_cols, -1), hi(block_cols, -1);
      std::vector<int64_t> touched;
      for (int64_t b = block_lo[t]; b < block_lo[t + 1]; ++b) {
        const int64_t r0 = b * row_split, r1 = std::min(rows, r0 + row_split);
        for (int64_t e = start[r0]; e < start[r1]; ++e) {
          const int64_t k1 = block_of(col[e]);
          const int32_t k0 = inner_of(col[e]);
          if (lo[k1] < 0) {
            touched.push_back(k1);
            lo[k1] = hi[k1] = k0;
          }
          lo[k1] = std::min(lo[k1], k0);
          hi[k1] = std::max(hi[k1], k0);
        }
        for (int64_t r = r1 - 1; r >= r0; --r) {
          if (start[r] == start[r + 1]) continue;
          row_most[t] = std::max(row_most[t], r - r0);
          break;
        }
        blocks_in[b + 1] = static_cast<int64_t>(touched.size());
        if (touched.empty()) continue;
        const auto [least, most] = std::minmax_element(touched.begin(), touched.end());
        block_span[t] = std::max(block_span[t], *most - *least);
        block_most[t] = std::max(block_most[t], *most);
        for (int64_t k1 : touched) {
          inner_span[t] = std::max<int64_t>(inner_span[t], hi[k1] - lo[k1]);
          inner_most[t] = std::max<int64_t>(inner_most[t], hi[k1]);
          lo[k1] = hi[k1] = -1;
        }
        touched.clear();
      }
    });
    for (int64_t b = 0; b < block_rows; ++b) blocks_in[b + 1] += blocks_in[b];
    const int64_t blocks = blocks_in[block_rows];
    auto most_of = [](const std::vector<int64_t>& v) {
      return *std::max_element(v.begin(), v.end());
    };

    Level top, outer, inner, leaf;
    top.kind = kDenseLevel;
    top.extent = top.positions = block_rows;
    outer.kind = kCompressedLevel;
    outer.extent = block_cols;
    outer.positions = blocks;
    inner.kind = kCompressedLevel;
    inner.extent = col_split;
    inner.positions = n_;
    leaf.kind = kSingletonLevel;
    leaf.extent = row_split;
    leaf.positions = n_;
    if (options_.choose_encodings) {
      outer.encoding = ChooseEncoding(blocks, block_rows, block_cols,
                                      block_cols <= 256 ? block_cols : most_of(block_span));
      inner.encoding =
          ChooseEncoding(n_, blocks, col_split, col_split <= 256 ? col_split : most_of(inner_span));
      leaf.encoding.bits = row_split <= 256 ? 8 : row_split <= 65536 ? 16 : 32;
    } else {
      const std::vector<Encoding>& given = options_.encodings;
      if (given.size() > 1) outer.encoding = given[1];
      if (given.size() > 2) inner.encoding = given[2];
      if (given.size() > 3) leaf.encoding = given[3];
      if (leaf.encoding.relative ||
          !FitsEncoding(outer.encoding, most_of(block_most), most_of(block_span)) ||
          !FitsEncoding(inner.encoding, most_of(inner_most), most_of(inner_span)) ||
          !FitsEncoding(leaf.encoding, most_of(row_most), 0))
        return false;
    }
    const bool outer_relative = outer.encoding.relative, inner_relative = inner.encoding.relative;
    const uint64_t row_mask = (uint64_t(1) << row_bits) - 1;
    // The radix sort of a block: digits of at most 8 bits (a few KiB of counts, in L1), alike.
    const int column_passes = std::max(1, (column_bits + 7) / 8);
    const int digit_bits = std::max(1, (column_bits + column_passes - 1) / column_passes);
    const uint64_t digit_mask = (uint64_t(1) << digit_bits) - 1;
    outer.pos.resize(block_rows + 1);
    for (int64_t b = 0; b <= block_rows; ++b) outer.pos[b] = static_cast<int32_t>(blocks_in[b]);
    outer.crd.resize(blocks * outer.encoding.bits / 8);
    if (outer_relative) outer.base.resize(block_rows);
    inner.pos.resize(blocks + 1);
    inner.crd.resize(n_ * inner.encoding.bits / 8);
    if (inner_relative) inner.base.resize(blocks);
    leaf.crd.resize(n_ * leaf.encoding.bits / 8);
    position_.resize(n_);

    WithCoordinateType(outer.encoding.bits, [&](auto outer_type) {
      WithCoordinateType(inner.encoding.bits, [&](auto inner_type) {
        WithCoordinateType(leaf.encoding.bits, [&](auto leaf_type) {
          using Outer = decltype(outer_type);
          using Inner = decltype(inner_type);
          using Row = decltype(leaf_type);
          Outer* outer_crd = reinterpret_cast<Outer*>(outer.crd.data());
          Inner* inner_crd = reinterpret_cast<Inner*>(inner.crd.data());
          Row* row_crd = reinterpret_cast<Row*>(leaf.crd.data());
#pragma omp parallel num_threads(threads)
          ForEachSlice(threads, [&](int t) {
            // Per column of the block row's span, its first slot, then its end; per slot, the
            // entry (from the block row's first) and its row in the block.
            std::vector<int32_t> at, slot_entry, slot_row;
            // Per column block, its first element, then its end; per element, the key of its
            // column and row in the block above its entry (from the block row's first): one
            // word to move where the sort moves it.
            std::vector<int64_t> block_at(narrow ? 0 : block_cols + 1);
            std::vector<int64_t> digit_at(narrow ? 0 : int64_t(1) << digit_bits);
            std::vector<uint64_t> element, element_scratch;
            for (int64_t b = block_lo[t]; b < block_lo[t + 1]; ++b) {
              const int64_t r0 = b * row_split, r1 = std::min(rows, r0 + row_split);
              const int64_t first = start[r0], count = start[r1] - first;
              if (outer_relative) outer.base[b] = 0;
              if (count == 0) continue;
              if (!narrow) {
                std::fill(block_at.begin(), block_at.end(), 0);
                for (int64_t e = first; e < first + count; ++e) ++block_at[block_of(col[e]) + 1];
                for (int64_t k1 = 0; k1 < block_cols; ++k1) block_at[k1 + 1] += block_at[k1];
                element.resize(count);
                element_scratch.resize(count);
                for (int64_t r = r0; r < r1; ++r) {
                  for (int64_t e = start[r]; e < start[r + 1]; ++e) {
                    const uint64_t key =
                        uint64_t(uint32_t(inner_of(col[e])) << row_bits | uint32_t(r - r0));
                    element[block_at[block_of(col[e])]++] = key << 32 | uint64_t(e - first);
                  }
                }
                // block_at[k1] is now block k1's end. A block's keys are distinct.
                int64_t q1 = blocks_in[b], lo = 0;
                bool first_block = true;
                for (int64_t k1 = 0; k1 < block_cols; ++k1) {
                  const int64_t hi = block_at[k1], size = hi - lo;
                  if (size == 0) continue;
                  uint64_t* const v = element.data() + lo;
                  if (size <= 512) {
                    std::sort(v, v + size);
                  } else {  // LSD radix by the column bits: its rows came in order
                    uint64_t* from = v;
                    uint64_t* to = element_scratch.data() + lo;
                    for (int shift = 32 + row_bits; shift < 32 + row_bits + column_bits;
                         shift += digit_bits) {
                      std::fill(digit_at.begin(), digit_at.end(), 0);
                      for (int64_t x = 0; x < size; ++x)
                        ++digit_at[(from[x] >> shift) & digit_mask];
                      int64_t running = 0;
                      for (int64_t& d : digit_at) {
                        const int64_t here = d;
                        d = running;
                        running += here;
                      }
                      for (int64_t x = 0; x < size; ++x)
                        to[digit_at[(from[x] >> shift) & digit_mask]++] = from[x];
                      std::swap(from, to);
                    }
                    if (from != v) std::copy(from, from + size, v);
                  }
                  if (first_block && outer_relative) outer.base[b] = static_cast<int32_t>(k1);
                  first_block = false;
                  const int32_t base =
                      inner_relative ? static_cast<int32_t>(v[0] >> (32 + row_bits)) : 0;
                  outer_crd[q1] = static_cast<Outer>(k1 - (outer_relative ? outer.base[b] : 0));
                  inner.pos[q1] = static_cast<int32_t>(first + lo);
                  if (inner_relative) inner.base[q1] = base;
                  ++q1;
                  for (int64_t x = 0; x < size; ++x) {
                    const uint64_t key = v[x] >> 32;
                    const int64_t q = first + lo + x;
                    inner_crd[q] = static_cast<Inner>(static_cast<int32_t>(key >> row_bits) - base);
                    row_crd[q] = static_cast<Row>(key & row_mask);
                    position_[first + static_cast<uint32_t>(v[x])] = static_cast<int32_t>(q);
                  }
                  lo = hi;
                }
                continue;
              }
              const int32_t lo_col = col_lo[b], span = col_hi[b] - lo_col + 1;
              at.assign(span + 1, 0);
              for (int64_t e = first; e < first + count; ++e) ++at[col[e] - lo_col + 1];
              for (int32_t c = 0; c < span; ++c) at[c + 1] += at[c];
              slot_entry.resize(count);
              slot_row.resize(count);
              for (int64_t r = r0; r < r1; ++r) {
                for (int64_t e = start[r]; e < start[r + 1]; ++e) {
                  const int32_t x = at[col[e] - lo_col]++;
                  slot_entry[x] = static_cast<int32_t>(e - first);
                  slot_row[x] = static_cast<int32_t>(r - r0);
                }
              }
              // at[c] is now column c's end: the slots run by column, and rows within one.
              int64_t q1 = blocks_in[b] - 1, previous_block = -1;
              int32_t base = 0, from = 0;
              for (int32_t c = 0; c < span; ++c) {
                const int32_t to = at[c];
                if (from == to) continue;
                const int32_t column = lo_col + c, k0 = inner_of(column);
                const int64_t k1 = block_of(column);
                if (k1 != previous_block) {  // a block starts
                  if (previous_block < 0 && outer_relative)
                    outer.base[b] = static_cast<int32_t>(k1);
                  previous_block = k1;
                  ++q1;
                  outer_crd[q1] = static_cast<Outer>(k1 - (outer_relative ? outer.base[b] : 0));
                  inner.pos[q1] = static_cast<int32_t>(first + from);
                  base = inner_relative ? k0 : 0;
                  if (inner_relative) inner.base[q1] = base;
                }
                for (int32_t x = from; x < to; ++x) {
                  const int64_t q = first + x;
                  inner_crd[q] = static_cast<Inner>(k0 - base);
                  row_crd[q] = static_cast<Row>(slot_row[x]);
                  position_[first + slot_entry[x]] = static_cast<int32_t>(q);
                }
                from = to;
              }
            }
          });
        });
      });
    });
    inner.pos[blocks] = static_cast<int32_t>(n_);
    AddLevel(std::move(top));
    AddLevel(std::move(outer));
    AddLevel(std::move(inner));
    return AddLevel(std::move(leaf));
  }

  // Levels below a sliced level's lanes are built in position order: sorts the entries by
  // position (stable, so entries sharing one keep their order below it).
  void SortByPosition(int64_t positions) {
    Scratch<int32_t> by_leaf(n_), scratch;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) by_leaf[r] = static_cast<int32_t>(r);
    StableSortByKey(by_leaf, position_.data(), positions, scratch);
    Scratch<int32_t> reordered(n_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) {
      reordered[r] = static_cast<int32_t>(Entry(by_leaf[r]));
      next_[r] = position_[by_leaf[r]];
    }
    perm_.swap(reordered);
    order_ = perm_.data();
    entry_rank_ = Scratch<int32_t>();
    position_.swap(next_);
    ForgetKeys();
    GatherRankedCoordinates();
  }

  bool AddLevel(Level level) {
    parent_positions_ = level.positions;
    levels_.push_back(std::move(level));
    return true;
  }

  // Segment p (a parent position) of a compressed or sliced level holds coordinates
  // [pos[p] * lanes, pos[p + 1] * lanes): its smallest and largest (0, 0 when empty).
  static std::pair<int32_t, int32_t> SegmentRange(const Array<int32_t>& pos, const int32_t* crd,
                                                  int64_t p, int64_t lanes) {
    const int64_t first = pos[p] * lanes, last = pos[p + 1] * lanes;
    if (first == last) return {0, 0};
    int32_t lo = crd[first], hi = crd[first];
    for (int64_t q = first + 1; q < last; ++q) {
      lo = std::min(lo, crd[q]);
      hi = std::max(hi, crd[q]);
    }
    return {lo, hi};
  }

  // The largest span (max - min) of any segment's coordinates.
  static int64_t MaxSpan(const Array<int32_t>& pos, const int32_t* crd, int64_t positions,
                         int64_t lanes) {
    const int64_t parents = static_cast<int64_t>(pos.size()) - 1;
    int64_t widest = 0;
#pragma omp parallel for schedule(static) reduction(max : widest) num_threads(ThreadsFor(positions))
    for (int64_t p = 0; p < parents; ++p) {
      const auto [lo, hi] = SegmentRange(pos, crd, p, lanes);
      widest = std::max<int64_t>(widest, hi - lo);
    }
    return widest;
  }

  // Each segment's smallest coordinate: the bases of a relative encoding.
  static Array<int32_t> SegmentMins(const Array<int32_t>& pos, const int32_t* crd,
                                    int64_t positions, int64_t lanes) {
    const int64_t parents = static_cast<int64_t>(pos.size()) - 1;
    Array<int32_t> min(parents);
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(positions))
    for (int64_t p = 0; p < parents; ++p) min[p] = SegmentRange(pos, crd, p, lanes).first;
    return min;
  }

  // The encoding that stores the coordinates in the fewest bytes: absolute when the extent fits
  // 8 or 16 bits, else relative to each segment's smallest coordinate when every segment's span
  // fits (and the bases cost less than they save).
  static Encoding ChooseEncoding(int64_t positions, int64_t parents, int64_t extent,
                                 int64_t max_span) {
    Encoding best;  // 32-bit absolute
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

  // Stores a level's coordinates (one per position of the level, or of its lanes for a sliced
  // level) as its encoding says: chosen, or given and checked. `crd` may be the level's own
  // array, holding them as 32-bit integers: kept so when that is the encoding.
  bool StoreCoordinates(Level& level, int l, const int32_t* crd, int64_t positions, int64_t lanes) {
    const int64_t parents = static_cast<int64_t>(level.pos.size()) - 1;
    if (options_.choose_encodings) {
      // Within 8 bits nothing relative stores less: no need for the segments' spans.
      const int64_t max_span =
          level.extent <= 256 ? level.extent : MaxSpan(level.pos, crd, positions, lanes);
      level.encoding = ChooseEncoding(positions, parents, level.extent, max_span);
    } else if (l < static_cast<int>(options_.encodings.size())) {
      level.encoding = options_.encodings[l];
    }
    const Encoding e = level.encoding;
    if (e.relative) level.base = SegmentMins(level.pos, crd, positions, lanes);
    if (!options_.choose_encodings && e.bits < 32 && !CoordinatesFit(level, l, crd, lanes)) {
      return false;
    }
    const bool in_place = crd == reinterpret_cast<const int32_t*>(level.crd.data()) &&
                          static_cast<int64_t>(level.crd.size()) == positions * 4;
    if (in_place && e.bits == 32 && !e.relative) return true;
    Array<uint8_t> stored(positions * e.bits / 8);
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
    if (e.bits == 8) store(stored.data());
    if (e.bits == 16) store(reinterpret_cast<uint16_t*>(stored.data()));
    if (e.bits == 32) store(reinterpret_cast<int32_t*>(stored.data()));
    level.crd.swap(stored);
    return true;
  }

  // Given encodings are those of the pattern a kernel was tuned on: another pattern's
  // coordinates may not fit them. Refuses, naming the first that does not.
  bool CoordinatesFit(const Level& level, int l, const int32_t* crd, int64_t lanes) {
    const int bits = level.encoding.bits;
    const int64_t parents = static_cast<int64_t>(level.pos.size()) - 1;
    for (int64_t p = 0; p < parents; ++p) {
      const int64_t offset = level.encoding.relative ? level.base[p] : 0;
      for (int64_t q = level.pos[p] * lanes; q < level.pos[p + 1] * lanes; ++q) {
        if (crd[q] - offset < (int64_t(1) << bits)) continue;
        refused_for_width_ = true;
        return Refuse("level " + std::to_string(l) + ": coordinate " + std::to_string(crd[q]) +
                      " does not fit the " + std::to_string(bits) +
                      "-bit coordinates this kernel was tuned with (another sparsity pattern?)");
      }
    }
    return true;
  }

  void RecordPositions() {
    recorded_.resize(n_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t r = 0; r < n_; ++r) recorded_[Entry(r)] = position_[r];
  }

  const Layout& layout_;
  const Options& options_;
  const int64_t n_;
  const int threads_;
  const int32_t* const* mode_coords_;
  double cap_ = 0;
  // After SortByCompositeKey: the sorted keys (one of the two) and where each level's
  // coordinate sits in them (-1: not a key).
  Scratch<uint32_t> keys32_;
  Scratch<uint64_t> keys64_;
  std::vector<int> key_shift_;
  std::vector<int> split_shift_;  // per level: log2 of its mode's split, -1 when not a power of 2
  std::vector<int64_t> extents_;
  const int32_t* canonical_;        // the entries in canonical order, or null: in order
  Scratch<int32_t> perm_;           // the entry at each sorted rank, when sorted here
  const int32_t* order_ = nullptr;  // perm_'s data, canonical_, or null for the identity
  std::vector<Scratch<int32_t>> ranked_coords_;  // per mode, by rank when order_ is set
  const int32_t* rows_in_order_ = nullptr;       // TakeRowsInOrder's old_of_new
  Scratch<int32_t> entry_rank_;       // per entry, its sorted rank, when SortByOneKey sorted them
  bool leaf_at_rank_ = false;         // every entry's leaf position is its rank (entry_rank_ set)
  Scratch<int32_t> position_, next_;  // per sorted rank: the position at the current level
  int64_t parent_positions_ = 1;
  std::vector<Level> levels_;
  Scratch<int32_t> recorded_;  // per entry
  std::string refusal_;
  bool refused_for_width_ = false;
};

// Why the entries cannot be packed into a tensor of these dims, before anything is sorted: more
// than 32-bit positions address, or a coordinate outside the dims. Empty when they can.
inline std::string EntriesRefusal(const std::vector<int64_t>& dims, int64_t nnz,
                                  const int32_t* const* coords) {
  if (nnz > kMaxPositions) {
    return "the tensor has " + std::to_string(nnz) +
           " entries, more than 32-bit positions can address";
  }
  const int order = static_cast<int>(dims.size());
  for (int64_t e = 0; e < nnz; ++e) {
    for (int m = 0; m < order; ++m) {
      if (coords[m][e] < 0 || coords[m][e] >= dims[m]) {
        return "entry " + std::to_string(e) + ": coordinate " + std::to_string(coords[m][e]) +
               " of mode " + std::to_string(m) + " is outside [0, " + std::to_string(dims[m]) + ")";
      }
    }
  }
  return std::string();
}

// The entries ranked in canonical order (lexicographic over the modes): ranked[k] is the entry
// of rank k. Coordinates must lie inside dims (EntriesRefusal); duplicates end up side by side.
//
// Entries usually come nearly sorted (from CSR, or renumbered rows whose entries stay
// together), so they are counted out by their first coordinate (stable, linear) and only the
// runs of one first coordinate that are out of order are sorted, in parallel: a renumbered
// 15M-entry graph is ranked in a fraction of a second instead of seconds of one comparison
// sort. A first mode much longer than the entries (hypersparse) is comparison sorted whole.
template <template <class> class Allocator = std::allocator>
std::vector<int32_t, Allocator<int32_t>> RankCanonically(const std::vector<int64_t>& dims,
                                                         int64_t nnz,
                                                         const int32_t* const* coords) {
  const int order = static_cast<int>(dims.size());
  std::vector<int32_t, Allocator<int32_t>> ranked(nnz);
  auto less_from = [&](int first_mode) {
    return [&, first_mode](int32_t a, int32_t b) {
      for (int m = first_mode; m < order; ++m) {
        if (coords[m][a] != coords[m][b]) return coords[m][a] < coords[m][b];
      }
      return false;
    };
  };
  // Counting costs a pass over the first mode's extent, a comparison sort some log2(nnz)
  // comparisons an entry: count while the extent is within a few passes over the entries.
  if (order == 0 || nnz == 0 || dims[0] > 8 * nnz) {
    std::iota(ranked.begin(), ranked.end(), 0);
    std::sort(ranked.begin(), ranked.end(), less_from(0));
    return ranked;
  }
  const int32_t* first = coords[0];
  std::vector<int64_t> start(static_cast<size_t>(dims[0]) + 1, 0);
  for (int64_t e = 0; e < nnz; ++e) ++start[first[e] + 1];
  for (int64_t v = 0; v < dims[0]; ++v) start[v + 1] += start[v];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t e = 0; e < nnz; ++e) ranked[fill[first[e]]++] = static_cast<int32_t>(e);
  }
  const auto less_after_first = less_from(1);
  int32_t* const data = ranked.data();
#pragma omp parallel for schedule(dynamic, 4096) num_threads(ThreadsFor(nnz))
  for (int64_t v = 0; v < dims[0]; ++v) {
    int32_t* const begin = data + start[v];
    int32_t* const end = data + start[v + 1];
    if (!std::is_sorted(begin, end, less_after_first)) std::sort(begin, end, less_after_first);
  }
  return ranked;
}

// Whether the entries are in canonical order already, each after the last (so no duplicates):
// one pass, which spares ranking entries that come from CSR. In parallel; a matrix's entries by
// one 64-bit comparison each.
inline bool InCanonicalOrder(int order, int64_t nnz, const int32_t* const* coords) {
  bool ordered = true;
  if (order == 2) {
    const int32_t* row = coords[0];
    const int32_t* col = coords[1];
    auto key = [&](int64_t e) { return uint64_t(uint32_t(row[e])) << 32 | uint32_t(col[e]); };
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(nnz)) reduction(&& : ordered)
    for (int64_t e = 1; e < nnz; ++e) ordered = ordered & (key(e - 1) < key(e));
    return ordered;
  }
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(nnz)) reduction(&& : ordered)
  for (int64_t e = 1; e < nnz; ++e) {
    int m = 0;
    while (m < order && coords[m][e] == coords[m][e - 1]) ++m;
    ordered = ordered && m < order && coords[m][e] > coords[m][e - 1];
  }
  return ordered;
}

// For entries inside dims (EntriesRefusal): canonical[k] is the entry of rank k in canonical
// order, empty when they are in that order already. Refuses duplicates, saying so in *refusal.
template <template <class> class Allocator = std::allocator>
std::vector<int32_t, Allocator<int32_t>> RankEntries(const std::vector<int64_t>& dims, int64_t nnz,
                                                     const int32_t* const* coords,
                                                     std::string* refusal) {
  const int order = static_cast<int>(dims.size());
  refusal->clear();
  if (InCanonicalOrder(order, nnz, coords)) return {};
  std::vector<int32_t, Allocator<int32_t>> canonical =
      RankCanonically<Allocator>(dims, nnz, coords);
  auto same = [&](int32_t a, int32_t b) {
    for (int m = 0; m < order; ++m) {
      if (coords[m][a] != coords[m][b]) return false;
    }
    return true;
  };
  for (int64_t k = 1; k < nnz; ++k) {
    if (same(canonical[k - 1], canonical[k])) {
      *refusal = "the entries hold duplicate coordinates; sum them first";
      canonical.clear();
      return canonical;
    }
  }
  return canonical;
}

// A canonical matrix's entries with its rows renumbered (old_of_new[new row] = old row) and its
// columns kept, in the renumbered canonical order: each new row's entries are its old row's, in
// their order, so ranking them is a copy row by row instead of a sort. rows[k] and cols[k] are
// the coordinates of rank k, entry[k] the given entry it is (values stay where they are:
// LevelPacker::ScatterValues reads them through `entry`). The packer then reads its coordinates
// in order: through a ranking, each renumbered row is a jump in memory on every pass.
template <template <class> class Allocator = std::allocator>
struct RowRenumberedEntries {
  std::vector<int32_t, Allocator<int32_t>> rows, cols, entry;
};

// The row starts once row r is old row old_of_new[r] (null: the identity).
inline std::vector<int64_t> RenumberedRowStarts(const std::vector<int64_t>& old_start,
                                                const int32_t* old_of_new) {
  const int64_t rows = static_cast<int64_t>(old_start.size()) - 1;
  std::vector<int64_t> new_start(rows + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = old_of_new ? old_of_new[r] : r;
    new_start[r + 1] = new_start[r] + old_start[o + 1] - old_start[o];
  }
  return new_start;
}

template <template <class> class Allocator = std::allocator>
RowRenumberedEntries<Allocator> RenumberRowEntries(int64_t rows, int64_t nnz, const int32_t* row_of,
                                                   const int32_t* col_of,
                                                   const int32_t* old_of_new) {
  const std::vector<int64_t> old_start = RowStarts(rows, nnz, row_of);
  const std::vector<int64_t> new_start = RenumberedRowStarts(old_start, old_of_new);
  RowRenumberedEntries<Allocator> out;
  out.rows.resize(nnz);
  out.cols.resize(nnz);
  out.entry.resize(nnz);
  // Rows ahead whose first columns are fetched: renumbered rows are read in scattered order,
  // where no hardware prefetcher follows.
  constexpr int64_t kRowsAhead = 8;
#pragma omp parallel for schedule(dynamic, 4096) num_threads(ThreadsFor(nnz))
  for (int64_t r = 0; r < rows; ++r) {
    if (r + kRowsAhead < rows) __builtin_prefetch(col_of + old_start[old_of_new[r + kRowsAhead]]);
    const int64_t from = old_start[old_of_new[r]], at = new_start[r];
    const int64_t count = new_start[r + 1] - at;
    for (int64_t k = 0; k < count; ++k) {
      out.rows[at + k] = static_cast<int32_t>(r);
      out.cols[at + k] = col_of[from + k];
      out.entry[at + k] = static_cast<int32_t>(from + k);
    }
  }
  return out;
}

// Sparse outputs: for each distinct prefix of `prefix` coordinates among the nnz entries, in
// canonical order (`canonical` ranks them; empty: in order), the position its first entry
// recorded (LevelPacker::RecordedPosition).
template <class Packer, class Canonical>
std::vector<int64_t> PrefixPositions(const Packer& packer, const Canonical& canonical, int64_t nnz,
                                     const int32_t* const* coords, int prefix) {
  std::vector<int64_t> rows;
  auto entry = [&](int64_t k) { return canonical.empty() ? k : int64_t(canonical[k]); };
  for (int64_t k = 0; k < nnz; ++k) {
    bool same = k > 0;
    for (int m = 0; m < prefix && same; ++m) same = coords[m][entry(k)] == coords[m][entry(k - 1)];
    if (!same) rows.push_back(packer.RecordedPosition(entry(k)));
  }
  return rows;
}

// New values for n packed entries, given in the order they were packed from: values[at] =
// source[entry] where at is the entry's position (LevelPacker::EntryPositions; the entry's own
// index when `positions` is empty). Positions no entry holds (padding) keep their zeros.
template <class Value, class Source, class Positions>
void UpdateValues(Value* values, const Positions& positions, int64_t n, const Source* source) {
  const bool identity = positions.empty();
#pragma omp parallel for schedule(static) num_threads(ThreadsFor(n))
  for (int64_t e = 0; e < n; ++e)
    values[identity ? e : positions[e]] = static_cast<Value>(source[e]);
}

}  // namespace
}  // namespace packer
}  // namespace sparsetune

#endif  // SPARSETUNE_TENSOR_LEVEL_PACKER_HPP
