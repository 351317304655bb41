#include "tune/candidates.hpp"

#include <algorithm>
#include <cmath>

#include "base/caches.hpp"
#include "base/threads.hpp"
#include "base/vector_registers.hpp"
#include "ir/loop_nest.hpp"
#include "sparseauto/sparseauto.hpp"
#include "tensor/stats.hpp"

namespace sparsetune {

std::string KernelJsonHere(const Schedule& schedule) {
  Schedule here = schedule;
  here.Canonicalize();
  if (!here.parallel.empty() && here.threads == 0) here.threads = HardwareThreads();
  return here.CanonicalJson();
}

void ApplyUniformValues(std::vector<TuneCandidate>& candidates) {
  for (TuneCandidate& c : candidates) {
    if (c.source == "fixed_csr" || c.schedule.uniform_values || c.schedule.StoresPadding())
      continue;
    c.schedule.uniform_values = true;
    c.schedule.Canonicalize();
    c.json = c.schedule.CanonicalJson();
  }
}

void AddDistinct(std::vector<TuneCandidate>& list, TuneCandidate c) {
  c.schedule.Canonicalize();
  c.json = c.schedule.CanonicalJson();
  const int all = HardwareThreads();
  const auto here = [all](int threads) { return threads == 0 ? all : threads; };
  std::string key;  // c's KernelJsonHere, needed only where another names its threads otherwise
  for (const auto& other : list) {
    if (other.json == c.json) return;
    if (other.schedule.threads == c.schedule.threads ||
        here(other.schedule.threads) != here(c.schedule.threads))
      continue;
    if (key.empty()) key = KernelJsonHere(c.schedule);
    if (KernelJsonHere(other.schedule) == key) return;
  }
  list.push_back(std::move(c));
}

namespace {

Schedule Parse(const nlohmann::json& json) {
  return Schedule::FromJson(json, "heuristic schedule");
}

nlohmann::json Balanced(const std::string& index) {
  return {{"index", index}, {"chunk", 1}, {"partition", "balanced"}};
}

// Largest power of two up to `limit` that does not exceed `size`.
int64_t SplitUpTo(int64_t size, int64_t limit) {
  int64_t s = 1;
  while (s * 2 <= std::min(size, limit)) s *= 2;
  return s;
}

// The most rows of `row_bytes` each, a power of two, that take at most `budget` bytes (at least 1).
int64_t RowsWithin(int64_t row_bytes, int64_t budget) {
  int64_t rows = 1;
  while (rows * 2 * row_bytes <= budget) rows *= 2;
  return rows;
}

// Column segments for dense rows gathered at random: the width (a power of two) whose slice of
// the gathered operand (`row_bytes` a row) takes at most `budget` bytes, or 0 when the whole
// operand already fits in it or a segment would hold fewer than 1024 rows.
int64_t SegmentWidth(int64_t columns, int64_t row_bytes, int64_t budget) {
  if (columns * row_bytes <= budget) return 0;
  const int64_t width = RowsWithin(row_bytes, budget);
  return width >= 1024 ? width : 0;
}

using Sizes = std::map<std::string, int64_t>;

// Narrower segments than this cost more in their loop and in streaming the rows once each than
// the cache they save.
constexpr int64_t kMinL2SegmentWidth = 64;

// Rows of a 2-D tile (SpMM, SDDMM): its output rows stay in L2 while the tile's columns pass.
constexpr int64_t kTileRows = 128;

// Whether 2-D tiles are worth their bookkeeping: the matrix holds two tiles' rows or more, and
// a tile's column would hold two entries or more were the `nnz` entries spread evenly over rows
// i and columns `column` (so that two rows or more share each slice of the dense operand the
// column gathers).
bool DenseEnoughForTiles(const Sizes& sizes, const std::string& column, int64_t nnz) {
  const double rows = static_cast<double>(std::max<int64_t>(sizes.at("i"), 1));
  const double columns = static_cast<double>(std::max<int64_t>(sizes.at(column), 1));
  const double entries_per_tile_column = kTileRows * static_cast<double>(nnz) / (rows * columns);
  return entries_per_tile_column >= 2 && sizes.at("i") >= 2 * kTileRows;
}

// SpMV: narrow coordinates, nonzero-balanced rows and partial sums; one thread for small
// matrices; column segments and coordinate lists in blocks for wide ones; sliced rows (SELL-C).
void SpmvRules(const Sizes& sizes, int64_t value_bytes, std::vector<nlohmann::json>& schedules) {
  for (int unroll : {1, 4}) {
    schedules.push_back({{"loop_order", {"i", "k"}},
                         {"format", {"i:U", "k:C"}},
                         {"parallel", Balanced("i")},
                         {"unroll", unroll},
                         {"narrow_coordinates", true}});
  }
  // One thread: small matrices lose more to starting threads than they gain.
  schedules.push_back(
      {{"loop_order", {"i", "k"}},
       {"format", {"i:U", "k:C"}},
       {"parallel", {{"index", "i"}, {"chunk", 1}, {"threads", 1}, {"partition", "balanced"}}},
       {"unroll", 4},
       {"narrow_coordinates", true}});
  // Column segments for wide matrices (graphs): each segment's slice of x (64k values)
  // stays in L2 while every row with entries in it is visited; rows without any are skipped.
  constexpr int64_t kSegment = 65536;
  if (sizes.at("k") >= 4 * kSegment) {
    schedules.push_back({{"splits", {{"k", kSegment}}},
                         {"loop_order", {"k1", "i", "k0"}},
                         {"format", {"k1:U", "i:C", "k0:C"}},
                         {"parallel", Balanced("i")},
                         {"narrow_coordinates", true}});
  }
  // Coordinate lists inside square blocks (COO with 16-bit coordinates, by column within a
  // block) for matrices whose x passes L2: a block's slices of x and y stay in L2 while its
  // entries stream by, with no branch per row or column (graphs with random labels, whose
  // rows hold a handful of entries per segment of x), four entries at a time (their
  // coordinates a word per level). Blocks whose slices of x and y fill half of L2, and a half
  // and a quarter of that: which is fastest moves with the graph (on three 12-15M-edge graphs
  // with 512 KiB of L2, 16K, 32K and 8K).
  const int64_t l2 = MachineCaches().l2;
  if (sizes.at("k") * value_bytes > l2) {
    int64_t block = 1;
    while (block < 65536 && 2 * (2 * block) * value_bytes <= l2 / 2) block *= 2;
    // Each also with runs of one row merged (Schedule::merge_runs): on an identifier-adjacency
    // graph with a 2.45M-entry row, 0.90x the time of the same blocks; on a Chung-Lu graph whose
    // rows rarely fill a batch, 1.04x.
    for (int64_t b : {block, block / 2, block / 4}) {
      if (b < 1024 || sizes.at("i") < 2 * b) continue;
      for (bool merge_runs : {false, true}) {
        schedules.push_back({{"splits", {{"i", b}, {"k", b}}},
                             {"loop_order", {"i1", "k1", "k0", "i0"}},
                             {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                             {"parallel", Balanced("i1")},
                             {"unroll", 4},
                             {"narrow_coordinates", true},
                             {"merge_runs", merge_runs}});
      }
    }
  }
  for (int lanes : {8, 16}) {
    if (sizes.at("i") < 2 * lanes) continue;
    schedules.push_back({{"splits", {{"i", lanes}}},
                         {"loop_order", {"i1", "k", "i0"}},
                         {"format", {"i1:U", "k:S", "i0:U"}},
                         {"parallel", Balanced("i1")},
                         {"narrow_coordinates", true}});
  }
  // SELL-C-sigma with rows sorted by length: slices of similar rows pad little (unsorted, the
  // slices of a power-law matrix are mostly padding). Sorted alone (row-degree), the columns
  // keep the locality of their numbering and x is read where the caller put it; sorted with the
  // columns alike (degree), the hubs' entries of x sit together but x is permuted every call.
  // Rows sorted alone also in slices of 16 (4.0-4.2 against 4.2-4.6 ms on Graph500 scale 19).
  if (sizes.at("i") >= 4096) {
    for (auto [lanes, ordering] :
         {std::pair<int, const char*>{8, "row-degree"}, {16, "row-degree"}, {8, "degree"}}) {
      schedules.push_back({{"splits", {{"i", lanes}}},
                           {"loop_order", {"i1", "k", "i0"}},
                           {"format", {"i1:U", "k:S", "i0:U"}},
                           {"parallel", Balanced("i1")},
                           {"narrow_coordinates", true},
                           {"ordering", ordering}});
    }
  }
}

// SpMM: register tiles of B's rows, block rows sharing their columns, column segments, and
// 2-D tiles for dense enough patterns.
void SpmmRules(const Sizes& sizes, int64_t nnz, int64_t value_bytes, const CooTensor* matrix,
               std::vector<nlohmann::json>& schedules) {
  // Segments whose gathered rows fill a half or a quarter of the last-level cache: each
  // segment's slice is read from DRAM once and gathered from the cache by every row, at the
  // cost of streaming the row operand (or the output) once per segment.
  const int64_t llc = MachineCaches().llc;
  // Register tiles of B's rows, each with and without prefetching the slices of B it gathers:
  // 64 and 128 values, and half the vector registers when that is wider (256 with AVX-512).
  // On six patterns (j 256, AVX-512) a prefetching tile ran 0.96-1.39x as fast as the same tile
  // without, and the best of these six tiles 1.00-1.16x the best of the three (64, 64
  // prefetching, 128) they replace.
  const VectorRegisters& registers = MachineVectorRegisters();
  const int64_t tile_values = registers.count / 2 * registers.bytes / value_bytes;
  std::vector<int64_t> row_tiles = {64, 128};
  if (tile_values > 128) row_tiles.push_back(tile_values);
  for (int64_t tile : row_tiles) {
    const int64_t j = SplitUpTo(sizes.at("j"), tile);
    if (j < 4) continue;
    for (int prefetch : {0, 8}) {
      schedules.push_back({{"splits", {{"j", j}}},
                           {"loop_order", {"i", "j1", "k", "j0"}},
                           {"format", {"i:U", "k:C"}},
                           {"parallel", Balanced("i")},
                           {"narrow_coordinates", true},
                           {"prefetch", prefetch}});
    }
  }
  // Block rows of 2, 4 and 8 (rows of a block share their columns, padded with zeros): a tile
  // of each row's slice in half the vector registers, so each slice of B serves every row of
  // the block. With AVX-512 that is 2 x 128, 4 x 64 and 8 x 32 values: on a band and on 4 x 4
  // blocks (j 256) 1.4-1.7x the tiles sized for AVX2 (2 x 32, 4 x 16) and 1.1-1.5x the best
  // other rule, and slower than the AVX2 sizes on none of six patterns.
  // Not where the rows of a block share almost none of their columns (their union counts over
  // kMaxUnionShare of their nonzeros): each stored entry is then one row's nonzero and zeros for
  // the others. On twelve patterns (graphs, power law, uniform, pruned layers, diagonals) such
  // block rows ran 1.4-6.4x the fastest rule; the ones that won, on bands, had unions of 32-75%.
  for (int64_t rows : {2, 4, 8}) {
    const int64_t j = SplitUpTo(sizes.at("j"), tile_values / rows);
    if (j < 4 || sizes.at("i") < 2 * rows) continue;
    if (matrix && RowGroupPadding(*matrix, rows) > kMaxUnionShare * static_cast<double>(rows))
      continue;
    schedules.push_back({{"splits", {{"i", rows}, {"j", j}}},
                         {"loop_order", {"i1", "j1", "k", "i0", "j0"}},
                         {"format", {"i1:U", "k:C", "i0:U"}},
                         {"parallel", Balanced("i1")},
                         {"narrow_coordinates", true}});
  }
  const int64_t j = SplitUpTo(sizes.at("j"), 64);
  // 2-D tiles (pruned network layers): the rows of a tile take each column's slice of B (k
  // columns of j0 values, an L1's worth and twice that) while it is in L1, so each slice is read
  // from L2 once per tile rather than once per row.
  if (j >= 4 && DenseEnoughForTiles(sizes, "k", nnz)) {
    const int64_t tile_columns = RowsWithin(j * value_bytes, MachineCaches().l1d);
    for (int64_t k : {tile_columns, 2 * tile_columns}) {
      if (k < 16 || sizes.at("k") < 2 * k) continue;
      schedules.push_back({{"splits", {{"i", kTileRows}, {"k", k}, {"j", j}}},
                           {"loop_order", {"i1", "k1", "i0", "j1", "k0", "j0"}},
                           {"format", {"i1:U", "k1:C", "i0:C", "k0:C"}},
                           {"parallel", Balanced("i1")},
                           {"narrow_coordinates", true}});
    }
  }
  auto add_segments = [&](int64_t width) {
    schedules.push_back({{"splits", {{"k", width}, {"j", j}}},
                         {"loop_order", {"k1", "i", "j1", "k0", "j0"}},
                         {"format", {"k1:U", "i:C", "k0:C"}},
                         {"parallel", Balanced("i")},
                         {"narrow_coordinates", true}});
  };
  for (int64_t budget : {llc / 2, llc / 4}) {
    const int64_t width = SegmentWidth(sizes.at("k"), sizes.at("j") * value_bytes, budget);
    if (width > 0 && j >= 4) add_segments(width);
  }
  // Segments whose slice of B fills an eighth, a quarter or half of a core's L2, for the same
  // dense enough patterns: every row gathers from L2 rather than from the shared cache, at the
  // cost of passing C once per segment. On five pruned layers (2-20% dense, 1024-8192 columns,
  // j 256, 2 MiB of L2) one of these widths ran 1.07-2.0x the fastest other rule; the sparser
  // and wider layers took the widest, the denser and narrower the narrowest.
  const int64_t l2 = MachineCaches().l2;
  if (j >= 4 && DenseEnoughForTiles(sizes, "k", nnz)) {
    for (int64_t budget : {l2 / 8, l2 / 4, l2 / 2}) {
      const int64_t width = RowsWithin(sizes.at("j") * value_bytes, budget);
      if (width >= kMinL2SegmentWidth && 2 * width <= sizes.at("k")) add_segments(width);
    }
  }
}

// SDDMM (C given as C(k,j), or as C(j,k) for sddmm_nt): dot products of a few nonzeros at a
// time, column segments, and 2-D tiles for dense enough patterns.
void SddmmRules(const std::string& kernel, const Sizes& sizes, int64_t nnz, int64_t value_bytes,
                std::vector<nlohmann::json>& schedules) {
  // Segments whose gathered rows fill a half or a quarter of the last-level cache: each
  // segment's slice is read from DRAM once and gathered from the cache by every row, at the
  // cost of streaming the row operand (or the output) once per segment.
  const int64_t llc = MachineCaches().llc;
  // A dot product per nonzero, four nonzeros of a row at a time sharing each load of B's row
  // (with and without prefetching the rows of C they gather), or one at a time. C(k,j) is read
  // along k: through a transposed copy unless it is given as C(j,k).
  for (auto [unroll, prefetch] : {std::pair{4, 0}, std::pair{4, 4}, std::pair{1, 0}}) {
    nlohmann::json s = {
        {"loop_order", {"i", "j", "k"}}, {"format", {"i:U", "j:C"}}, {"parallel", Balanced("i")},
        {"narrow_coordinates", true},    {"unroll", unroll},         {"prefetch", prefetch}};
    if (kernel == "sddmm") s["transpose"] = {"C"};
    schedules.push_back(s);
  }
  // Either all threads share each segment (rows in parallel), or each thread takes whole
  // segments of its own (segments in parallel, each a share of the budget). A segment that
  // one core transposes and another reads crosses between last-level caches when the two
  // cores do not share one, as on multi-die processors and on virtual machines that move
  // their cores: 1.8x slower there. Own segments never cross, at the cost of more of them.
  const int64_t row_bytes = sizes.at("k") * value_bytes;
  const int64_t threads = HardwareThreads();
  const nlohmann::json own_segments = {{"index", "j1"}, {"chunk", 1}};
  auto add_segments = [&](int64_t width, const nlohmann::json& parallel) {
    nlohmann::json s = {{"splits", {{"j", width}}},          {"loop_order", {"j1", "i", "j0", "k"}},
                        {"format", {"j1:U", "i:C", "j0:C"}}, {"parallel", parallel},
                        {"narrow_coordinates", true},        {"unroll", 4}};
    if (kernel == "sddmm") s["transpose"] = {"C"};
    schedules.push_back(s);
  };
  for (int64_t budget : {llc / 2, llc / 4}) {
    const int64_t shared = SegmentWidth(sizes.at("j"), row_bytes, budget);
    if (shared == 0) continue;
    add_segments(shared, Balanced("i"));
    const int64_t own = threads > 1 ? SegmentWidth(sizes.at("j"), row_bytes, budget / threads) : 0;
    if (own > 0) add_segments(own, own_segments);
  }
  // Segments each thread owns whose slice of C fills half, all or twice its core's L2. The
  // last-level cache is the whole processor's, and a virtual machine of a few of its cores
  // gets a small share of it (one such host reports 480 MiB), so the widths above may pass the
  // matrix's; on that host the model's winners were these L2-sized segments, 1.1-1.7x the rows.
  const int64_t l2 = MachineCaches().l2;
  for (int64_t budget : {l2 / 2, l2, 2 * l2}) {
    const int64_t width = RowsWithin(row_bytes, budget);
    if (width >= kMinL2SegmentWidth && 2 * width <= sizes.at("j"))
      add_segments(width, own_segments);
  }
  // 2-D tiles (pruned network layers): the rows of a tile take their dot products with each
  // column tile's rows of C (a quarter and an eighth of L2) while they are in L2.
  if (DenseEnoughForTiles(sizes, "j", nnz)) {
    for (int64_t budget : {MachineCaches().l2 / 4, MachineCaches().l2 / 8}) {
      const int64_t tile_columns = RowsWithin(row_bytes, budget);
      if (tile_columns < 16 || sizes.at("j") < 2 * tile_columns) continue;
      nlohmann::json s = {{"splits", {{"i", kTileRows}, {"j", tile_columns}}},
                          {"loop_order", {"i1", "j1", "i0", "j0", "k"}},
                          {"format", {"i1:U", "j1:C", "i0:C", "j0:C"}},
                          {"parallel", Balanced("i1")},
                          {"narrow_coordinates", true},
                          {"unroll", 4}};
      if (kernel == "sddmm") s["transpose"] = {"C"};
      schedules.push_back(s);
    }
  }
}

// MTTKRP: a register tile of the output row, or none.
void MttkrpRules(const Sizes& sizes, std::vector<nlohmann::json>& schedules) {
  const int64_t j = SplitUpTo(sizes.at("j"), 64);
  if (j >= 4) {
    schedules.push_back({{"splits", {{"j", j}}},
                         {"loop_order", {"i", "j1", "k", "l", "j0"}},
                         {"format", {"i:C", "k:C", "l:C"}},
                         {"parallel", Balanced("i")},
                         {"narrow_coordinates", true}});
  }
  schedules.push_back({{"loop_order", {"i", "k", "l", "j"}},
                       {"format", {"i:C", "k:C", "l:C"}},
                       {"parallel", Balanced("i")},
                       {"narrow_coordinates", true}});
}

}  // namespace

std::vector<TuneCandidate> LibraryRuleCandidates(const std::string& kernel,
                                                 const Expression& expression,
                                                 const std::map<std::string, int64_t>& sizes,
                                                 int64_t nnz, int64_t value_bytes,
                                                 const CooTensor* matrix) {
  std::vector<nlohmann::json> schedules;
  if (kernel == "spmv") {
    SpmvRules(sizes, value_bytes, schedules);
  } else if (kernel == "spmm") {
    SpmmRules(sizes, nnz, value_bytes, matrix, schedules);
  } else if (kernel == "sddmm" || kernel == "sddmm_nt") {
    SddmmRules(kernel, sizes, nnz, value_bytes, schedules);
  } else if (kernel == "mttkrp") {
    MttkrpRules(sizes, schedules);
  }
  std::vector<TuneCandidate> out;
  for (const auto& json : schedules) {
    Schedule s = Parse(json);
    if (!Lower(expression, s).nest) continue;
    AddDistinct(out, {std::move(s), "", "heuristic"});
  }
  return out;
}

std::vector<TuneCandidate> GroupCooCandidates(const std::string& kernel,
                                              const Expression& expression,
                                              const std::map<std::string, int64_t>& sizes,
                                              int64_t nnz) {
  if (kernel != "spmv" && kernel != "spmm") return {};
  const double rows = static_cast<double>(std::max<int64_t>(sizes.at("i"), 1));
  // Insum's G*: one row coordinate per group and one column per slot cost (G + 1)(nnz/G + M).
  auto power_of_two = [](double x) {
    int64_t g = 1;
    while (g < kMaxGroup && static_cast<double>(g) * std::sqrt(2.0) < x) g *= 2;
    return g;
  };
  const int64_t best = power_of_two(std::sqrt(static_cast<double>(nnz) / rows));
  std::vector<std::pair<std::string, int64_t>> levels;  // grouped level, G
  for (int64_t g : {best / 2, best, best * 2}) {
    if (g >= 2 && g <= kMaxGroup) levels.push_back({"k", g});
  }
  // Blocks of 4 x 4: about nnz / (4 rows) blocks per block row when the blocks are full.
  const int64_t block_group = power_of_two(std::sqrt(static_cast<double>(nnz) / (4 * rows)));
  std::vector<nlohmann::json> schedules;
  auto parallel = Balanced("i");
  for (const auto& [var, g] : levels) {
    nlohmann::json s = {{"loop_order", {"i", "k"}},
                        {"format", nlohmann::json::array({"i:U", "k:G" + std::to_string(g)})},
                        {"parallel", parallel},
                        {"narrow_coordinates", true}};
    if (kernel == "spmm") {
      const int64_t j = SplitUpTo(sizes.at("j"), 64);
      if (j >= 4) {
        s["splits"] = {{"j", j}};
        s["loop_order"] = {"i", "j1", "k", "j0"};
      } else {
        s["loop_order"] = {"i", "k", "j"};
      }
    }
    schedules.push_back(s);
  }
  if (block_group >= 2 && sizes.at("i") >= 8 && sizes.at("k") >= 8) {
    nlohmann::json s = {
        {"splits", {{"i", 4}, {"k", 4}}},
        {"loop_order", {"i1", "k1", "i0", "k0"}},
        {"format",
         nlohmann::json::array({"i1:U", "k1:G" + std::to_string(block_group), "i0:U", "k0:U"})},
        {"parallel", Balanced("i1")},
        {"narrow_coordinates", true}};
    if (kernel == "spmm") s["loop_order"] = {"i1", "k1", "i0", "k0", "j"};
    schedules.push_back(s);
  }
  std::vector<TuneCandidate> out;
  for (const auto& json : schedules) {
    Schedule s = Parse(json);
    if (!Lower(expression, s).nest) continue;
    AddDistinct(out, {std::move(s), "", "groupcoo"});
  }
  return out;
}

std::vector<TuneCandidate> SparseAutoCandidates(const Expression& expression,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& prefix_nnz,
                                                const std::map<std::string, int64_t>& dense,
                                                int limit) {
  SparseAutoOptions options;
  options.values = ConcreteValues(expression, dims, prefix_nnz, dense);
  const SparseAutoResult result = RunSparseAuto(expression, options);
  std::vector<TuneCandidate> out;
  // The chosen one first, then the other survivors in order.
  std::vector<int> order;
  if (result.chosen >= 0) order.push_back(result.chosen);
  for (int k = 0; k < static_cast<int>(result.survivors.size()); ++k) {
    if (k != result.chosen) order.push_back(k);
  }
  for (int k : order) {
    if (static_cast<int>(out.size()) >= limit) break;
    Schedule s = result.survivors[k].schedule;
    if (!Lower(expression, s).nest) continue;
    AddDistinct(out, {std::move(s), "", "sparseauto"});
  }
  return out;
}

}  // namespace sparsetune
