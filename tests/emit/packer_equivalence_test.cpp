// The packer an emitted kernel ships lays out every format byte for byte as the library's Pack:
// each format is emitted, compiled the way a user builds it, given the entries shuffled, and its
// operand compared with Pack's, level by level; so are its values after update_values, an
// ordered schedule's renumbering and the 32-bit coordinates of a pattern too wide for the tuned
// ones.
#include <dlfcn.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "base/compiler.hpp"
#include "emit/emit.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/operands.hpp"
#include "ordering/ordering.hpp"
#include "support/test_data.hpp"
#include "tensor/generate.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

// Accessors compiled with the emitted source: the operand is opaque to the C ABI.
constexpr const char* kProbe = R"(
extern "C" int probe_levels(const OPERAND* a) { return static_cast<int>(a->levels.size()); }
extern "C" void probe_level(const OPERAND* a, int l, int64_t* header, const void** arrays,
                            int64_t* bytes) {
  const auto& L = a->levels[l];
  const int64_t h[] = {L.kind, L.extent, L.positions, L.encoding.bits, L.encoding.relative};
  std::copy(h, h + 5, header);
  arrays[0] = L.pos.data();
  arrays[1] = L.crd.data();
  arrays[2] = L.base.data();
  bytes[0] = static_cast<int64_t>(L.pos.size() * sizeof(int32_t));
  bytes[1] = static_cast<int64_t>(L.crd.size());
  bytes[2] = static_cast<int64_t>(L.base.size() * sizeof(int32_t));
}
extern "C" const void* probe_values(const OPERAND* a, int64_t* bytes) {
  *bytes = static_cast<int64_t>(a->values.size() * sizeof(a->values[0]));
  return a->values.data();
}
)";

struct LibraryCloser {
  void operator()(void* handle) const { dlclose(handle); }
};

// An emitted kernel compiled with the probe and loaded.
class EmittedPacker {
 public:
  EmittedPacker(const std::string& label, const std::string& kernel, const Expression& e,
                const IndexSizes& sizes, DType dtype, const Schedule& schedule,
                const CooTensor& pattern)
      : dir_(fs::temp_directory_path() /
             ("sparsetune-packer-" + std::to_string(getpid()) + "-" + label)),
        name_(EmittedName(kernel)) {
    fs::remove_all(dir_);
    EmitKernel(dir_.string(), kernel, e, sizes, dtype, schedule, &pattern);
    const fs::path probe = dir_ / "probe.cpp";
    std::ofstream(probe) << "#include \"" << name_ << ".cpp\"\n#define OPERAND " << name_
                         << "_operand\n"
                         << kProbe;
    const fs::path object = dir_ / "probe.so";
    const std::string command = "c++ -O0 -fopenmp -std=c++17 -shared -fPIC -Werror=all -o " +
                                ShellQuote(object.string()) + " " + ShellQuote(probe.string()) +
                                " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    char buffer[4096];
    size_t n;
    while (pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
      compiler_output_.append(buffer, n);
    if (!pipe || pclose(pipe) != 0) return;
    handle_.reset(dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL));
  }
  ~EmittedPacker() { fs::remove_all(dir_); }

  bool loaded() const { return handle_ != nullptr; }
  const std::string& compiler_output() const { return compiler_output_; }
  void* Symbol(const std::string& name) const { return dlsym(handle_.get(), name.c_str()); }
  std::string Prefixed(const std::string& suffix) const { return name_ + suffix; }

 private:
  fs::path dir_;
  std::string name_;
  std::string compiler_output_;
  std::unique_ptr<void, LibraryCloser> handle_;
};

// The tensor's entries in a shuffled order, as a user may hand them over.
struct ShuffledEntries {
  std::vector<std::vector<int32_t>> coords;
  std::vector<const int32_t*> coord_pointers;
  std::vector<float> f32;
  std::vector<double> f64;

  std::vector<int64_t> order;  // the tensor's entry at each given position

  ShuffledEntries(const CooTensor& t, uint64_t seed) : order(t.nnz()) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    coords.assign(t.order(), std::vector<int32_t>(t.nnz()));
    for (int64_t r = 0; r < t.nnz(); ++r) {
      for (int m = 0; m < t.order(); ++m) coords[m][r] = t.coords[m][order[r]];
    }
    for (const auto& mode : coords) coord_pointers.push_back(mode.data());
    SetValues(t);
  }
  // The values of `t` (the same entries), in the shuffled order.
  void SetValues(const CooTensor& t) {
    f32.clear();
    f64.clear();
    for (int64_t e : order) {
      f32.push_back(static_cast<float>(t.values[e]));
      f64.push_back(t.values[e]);
    }
  }
  const void* values(DType dtype) const {
    return dtype == DType::kF32 ? static_cast<const void*>(f32.data())
                                : static_cast<const void*>(f64.data());
  }
};

using PackFn = void* (*)(const int64_t*, int64_t, const int32_t* const*, const void*);
using UpdateFn = int (*)(void*, const void*);
using WideFn = int (*)(const void*);
using FreeFn = void (*)(void*);
using ErrorFn = const char* (*)();
using LevelsFn = int (*)(const void*);
using LevelFn = void (*)(const void*, int, int64_t*, const void**, int64_t*);
using ValuesFn = const void* (*)(const void*, int64_t*);

bool SameBytes(const void* a, const void* b, int64_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;
}

// The library's packing of `tensor` into `format`, renumbered first by the format's ordering
// as tune packs it: rows only through RenumberRows, rows and columns by a renumbered copy.
PackOutcome LibraryPack(const CooTensor& tensor, const StorageFormat& format, DType dtype,
                        bool narrow) {
  PackOptions options;
  options.padding_cap = 1e18;  // as the emitter packs the pattern
  options.narrow_coordinates = narrow;
  if (format.ordering == OrderingKind::kNone || !OrderingRefusal(tensor, format.ordering).empty())
    return Pack(tensor, format, dtype, options);
  const MatrixOrdering ordering = ComputeOrdering(tensor, format.ordering);
  if (ordering.cols.empty()) {
    const RenumberedRows rows = RenumberRows(tensor, ordering);
    return Pack(tensor, format, dtype, options, &rows);
  }
  return Pack(PermuteMatrix(tensor, ordering), format, dtype, options);
}

// The emitted operand's values against the library's packing, byte for byte.
void ExpectSameValues(const EmittedPacker& emitted, const void* operand, const PackedTensor& p,
                      DType dtype, const std::string& label) {
  auto values = reinterpret_cast<ValuesFn>(emitted.Symbol("probe_values"));
  int64_t value_bytes = 0;
  const void* emitted_values = values(operand, &value_bytes);
  const int64_t expected_bytes = p.stored() * (dtype == DType::kF32 ? 4 : 8);
  ASSERT_EQ(value_bytes, expected_bytes) << label << " values";
  EXPECT_TRUE(SameBytes(emitted_values, p.values_data(), value_bytes)) << label << " values";
}

// Packs `tensor` both ways and compares every array byte for byte; then gives both other values
// (the emitted operand through update_values) and compares the values again. `narrow`: the
// library chooses narrow coordinates, as the emitted packer does for the pattern it was emitted
// for (false: 32-bit ones, as it does for a pattern too wide for them).
void ExpectSamePacking(const EmittedPacker& emitted, const CooTensor& tensor,
                       const StorageFormat& format, DType dtype, bool narrow,
                       const std::string& label, std::set<std::string>* encodings_seen) {
  auto pack = reinterpret_cast<PackFn>(emitted.Symbol(emitted.Prefixed("_pack_coo")));
  auto update = reinterpret_cast<UpdateFn>(emitted.Symbol(emitted.Prefixed("_update_values")));
  auto release = reinterpret_cast<FreeFn>(emitted.Symbol(emitted.Prefixed("_free")));
  auto last_error = reinterpret_cast<ErrorFn>(emitted.Symbol(emitted.Prefixed("_last_error")));
  auto levels = reinterpret_cast<LevelsFn>(emitted.Symbol("probe_levels"));
  auto level = reinterpret_cast<LevelFn>(emitted.Symbol("probe_level"));
  ASSERT_TRUE(pack && update && release && last_error && levels && level) << label;

  const PackOutcome library = LibraryPack(tensor, format, dtype, narrow);
  ASSERT_TRUE(library.packed) << label << ": " << library.refusal;
  const PackedTensor& p = *library.packed;

  ShuffledEntries entries(tensor, 7);
  std::unique_ptr<void, FreeFn> operand(
      pack(tensor.dims.data(), tensor.nnz(), entries.coord_pointers.data(), entries.values(dtype)),
      release);
  ASSERT_TRUE(operand) << label << ": " << last_error();

  ASSERT_EQ(levels(operand.get()), static_cast<int>(p.levels.size())) << label;
  for (size_t l = 0; l < p.levels.size(); ++l) {
    const PackedLevel& mine = p.levels[l];
    int64_t header[5];
    const void* arrays[3];
    int64_t bytes[3];
    level(operand.get(), static_cast<int>(l), header, arrays, bytes);
    const std::string where = label + " level " + std::to_string(l);
    if (mine.kind != LevelKind::kDense) encodings_seen->insert(mine.encoding.Describe());
    EXPECT_EQ(header[0], static_cast<int64_t>(mine.kind)) << where;
    EXPECT_EQ(header[1], mine.extent) << where;
    EXPECT_EQ(header[2], mine.positions) << where;
    EXPECT_EQ(header[3], mine.encoding.bits) << where;
    EXPECT_EQ(header[4], mine.encoding.relative ? 1 : 0) << where;
    ASSERT_EQ(bytes[0], static_cast<int64_t>(mine.pos.size() * 4)) << where << " pos";
    EXPECT_TRUE(SameBytes(arrays[0], mine.pos.data(), bytes[0])) << where << " pos";
    ASSERT_EQ(bytes[1], static_cast<int64_t>(mine.crd_bytes.size())) << where << " crd";
    EXPECT_TRUE(SameBytes(arrays[1], mine.crd_bytes.data(), bytes[1])) << where << " crd";
    ASSERT_EQ(bytes[2], static_cast<int64_t>(mine.base.size() * 4)) << where << " base";
    EXPECT_TRUE(SameBytes(arrays[2], mine.base.data(), bytes[2])) << where << " base";
  }
  ExpectSameValues(emitted, operand.get(), p, dtype, label);

  // New values for the same entries: the packing stays, the values land where Pack puts them.
  CooTensor updated = tensor;
  for (int64_t e = 0; e < updated.nnz(); ++e) updated.values[e] = 3.0 - 0.5 * tensor.values[e];
  const PackOutcome repacked = LibraryPack(updated, format, dtype, narrow);
  ASSERT_TRUE(repacked.packed) << label << ": " << repacked.refusal;
  entries.SetValues(updated);
  ASSERT_EQ(update(operand.get(), entries.values(dtype)), 0) << label << ": " << last_error();
  ExpectSameValues(emitted, operand.get(), *repacked.packed, dtype, label + " after update");
}

struct Case {
  std::string label;
  std::string kernel;
  nlohmann::json schedule;
  std::function<CooTensor()> tensor;
};

CooTensor Banded(int64_t n, int64_t bandwidth) {
  BandedParams params;
  params.rows = params.cols = n;
  params.bandwidth = bandwidth;
  params.fill = 0.7;
  params.seed = 3;
  return GenerateBanded(params);
}

nlohmann::json MatrixSchedule(std::vector<std::string> format, std::vector<std::string> loops,
                              nlohmann::json splits = nlohmann::json::object(),
                              bool narrow = true) {
  return {{"splits", splits},
          {"loop_order", loops},
          {"format", format},
          {"parallel", {{"index", loops[0]}, {"chunk", 1}}},
          {"narrow_coordinates", narrow}};
}

// Every level kind (U, C, S with its lanes, G groups, Q singletons), blocks, coordinates of
// every width (8, 16 and 32 bits, absolute and relative to a base), a level order against the
// modes' and ordered schedules (renumbered by the packer as tune renumbers).
std::vector<Case> Cases() {
  auto small = [] { return testing::RandomSparse({45, 300}, 900, 11); };
  auto wide = [] { return testing::RandomSparse({40, 70000}, 1200, 12); };
  auto banded = [] { return Banded(70000, 4); };
  auto tensor3 = [] { return testing::RandomSparse({20, 17, 23}, 600, 6); };
  // Rows whose columns span less than 2^16 of 200000: 16-bit coordinates past a base.
  auto spans = [] {
    std::mt19937_64 rng(13);
    CooTensor t;
    t.Reset({1000, 200000});
    for (int32_t r = 0; r < 1000; ++r) {
      for (int k = 0; k < 10; ++k) {
        const int32_t c[2] = {r, static_cast<int32_t>(r * 150 + rng() % 50000)};
        t.Append(c, 1.0 + double(rng() % 7));
      }
    }
    t.Canonicalize();
    return t;
  };
  return {
      {"csr-u16", "spmv", MatrixSchedule({"i:U", "k:C"}, {"i", "k"}), small},
      {"csr-i32", "spmv",
       MatrixSchedule({"i:U", "k:C"}, {"i", "k"}, nlohmann::json::object(), false), small},
      {"csr-i32-wide", "spmv", MatrixSchedule({"i:U", "k:C"}, {"i", "k"}), wide},
      {"csr-u8-base", "spmv", MatrixSchedule({"i:U", "k:C"}, {"i", "k"}), banded},
      {"csr-u16-base", "spmv", MatrixSchedule({"i:U", "k:C"}, {"i", "k"}), spans},
      {"dcsr", "spmv", MatrixSchedule({"i:C", "k:C"}, {"i", "k"}), small},
      {"csc", "spmv", MatrixSchedule({"k:U", "i:C"}, {"k", "i"}), small},
      {"bcsr", "spmv",
       MatrixSchedule({"i1:U", "k1:C", "i0:U", "k0:U"}, {"i1", "k1", "i0", "k0"},
                      {{"i", 4}, {"k", 4}}),
       small},
      {"column-blocks", "spmv",
       MatrixSchedule({"k1:U", "i:U", "k0:C"}, {"k1", "i", "k0"}, {{"k", 64}}), wide},
      {"column-segments", "spmv",
       MatrixSchedule({"k1:U", "i:C", "k0:C"}, {"k1", "i", "k0"}, {{"k", 4096}}), wide},
      {"sell", "spmv", MatrixSchedule({"i1:U", "k:S", "i0:U"}, {"i1", "k", "i0"}, {{"i", 8}}),
       small},
      {"sell-base", "spmv", MatrixSchedule({"i1:U", "k:S", "i0:U"}, {"i1", "k", "i0"}, {{"i", 4}}),
       banded},
      {"groupcoo", "spmv", MatrixSchedule({"i:U", "k:G4"}, {"i", "k"}), small},
      {"coo-blocks", "spmv",
       MatrixSchedule({"i1:U", "k1:C", "k0:C", "i0:Q"}, {"i1", "k1", "k0", "i0"},
                      {{"i", 16}, {"k", 512}}),
       wide},
      {"blockgroupcoo", "spmv",
       MatrixSchedule({"i1:U", "k1:G2", "i0:U", "k0:U"}, {"i1", "k1", "i0", "k0"},
                      {{"i", 4}, {"k", 4}}),
       small},
      {"ordered-rcm", "spmv",
       [] {
         nlohmann::json s = MatrixSchedule({"i:U", "k:C"}, {"i", "k"});
         s["ordering"] = "rcm";
         return s;
       }(),
       [] {
         return testing::RandomSparse({300, 300}, 2000, 14);
       }},
      {"ordered-degree", "spmv",
       [] {
         nlohmann::json s = MatrixSchedule({"i1:U", "k:S", "i0:U"}, {"i1", "k", "i0"}, {{"i", 8}});
         s["ordering"] = "degree";
         return s;
       }(),
       small},
      {"ordered-row-degree", "spmv",
       [] {
         nlohmann::json s = MatrixSchedule({"i1:U", "k:S", "i0:U"}, {"i1", "k", "i0"}, {{"i", 8}});
         s["ordering"] = "row-degree";
         return s;
       }(),
       small},
      {"csf",
       "mttkrp",
       {{"loop_order", {"i", "k", "l", "j"}},
        {"format", {"i:C", "k:C", "l:C"}},
        {"parallel", {{"index", "i"}, {"chunk", 2}}},
        {"narrow_coordinates", true}},
       tensor3},
      {"csf-reordered",
       "mttkrp",
       {{"loop_order", {"k", "i", "l", "j"}},
        {"format", {"k:U", "i:C", "l:C"}},
        {"parallel", {{"index", "k"}, {"chunk", 2}}},
        {"narrow_coordinates", true}},
       tensor3},
  };
}

TEST(PackerEquivalence, EmittedPackerMatchesPackByteForByte) {
  std::set<std::string> encodings_seen;
  int case_number = 0;
  for (const Case& c : Cases()) {
    const CooTensor tensor = c.tensor();
    const Expression e = KernelExpression(c.kernel);
    const IndexSizes sizes =
        ResolveIndexSizes(e, tensor.dims, FindKernel(c.kernel)->dense_defaults);
    const Schedule schedule = Schedule::FromJson(c.schedule, c.label);
    LowerOutcome lowered = Lower(e, schedule);
    ASSERT_TRUE(lowered.nest) << c.label << ": " << lowered.error;
    // Both value types, one case each in turn: a compile per case is the test's cost.
    const DType dtype = case_number++ % 2 == 0 ? DType::kF32 : DType::kF64;
    const std::string label = c.label + (dtype == DType::kF32 ? "-f32" : "-f64");
    const EmittedPacker emitted(label, c.kernel, e, sizes, dtype, schedule, tensor);
    ASSERT_TRUE(emitted.loaded()) << label << ": " << emitted.compiler_output();
    ExpectSamePacking(emitted, tensor, lowered.nest->storage, dtype, schedule.narrow_coordinates,
                      label, &encodings_seen);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(encodings_seen, (std::set<std::string>{"u8", "u16", "u8+base", "u16+base", "i32"}));
}

// The emitted packer refuses what Pack never sees: entries out of range and duplicates. Another
// pattern whose coordinates do not fit the widths the kernel was tuned with is packed with
// 32-bit ones, as Pack packs without narrow coordinates.
TEST(PackerEquivalence, EmittedPackerRefusesBadEntriesAndWidensCoordinates) {
  const CooTensor narrow = testing::RandomSparse({40, 200}, 500, 21);
  const Expression e = KernelExpression("spmv");
  const IndexSizes sizes = ResolveIndexSizes(e, narrow.dims, {});
  const Schedule csr = Schedule::FromJson(MatrixSchedule({"i:U", "k:C"}, {"i", "k"}), "csr");
  const EmittedPacker emitted("refusals", "spmv", e, sizes, DType::kF64, csr, narrow);
  ASSERT_TRUE(emitted.loaded()) << emitted.compiler_output();
  auto pack = reinterpret_cast<PackFn>(emitted.Symbol(emitted.Prefixed("_pack_coo")));
  auto last_error = reinterpret_cast<ErrorFn>(emitted.Symbol(emitted.Prefixed("_last_error")));
  auto release = reinterpret_cast<FreeFn>(emitted.Symbol(emitted.Prefixed("_free")));
  ASSERT_TRUE(pack && last_error && release);
  auto refusal = [&](const std::vector<int64_t>& dims, std::vector<int32_t> rows,
                     std::vector<int32_t> cols) -> std::string {
    const int32_t* coords[2] = {rows.data(), cols.data()};
    const std::vector<double> values(rows.size(), 1.0);
    void* operand = pack(dims.data(), static_cast<int64_t>(rows.size()), coords, values.data());
    EXPECT_EQ(operand, nullptr);
    if (operand) release(operand);
    return operand ? std::string() : last_error();
  };
  EXPECT_NE(refusal({4, 4}, {0, 5}, {1, 1}).find("outside [0, 4)"), std::string::npos);
  EXPECT_NE(refusal({4, 4}, {1, 0, 1}, {2, 0, 2}).find("duplicate coordinates"), std::string::npos);
  EXPECT_NE(refusal({-1, 4}, {}, {}).find("dimensions are from 0 to 2^31"), std::string::npos);

  std::set<std::string> encodings_seen;
  const CooTensor wide = testing::RandomSparse({40, 70000}, 1200, 12);
  LowerOutcome lowered = Lower(e, csr);
  ASSERT_TRUE(lowered.nest) << lowered.error;
  ExpectSamePacking(emitted, wide, lowered.nest->storage, DType::kF64, /*narrow=*/false, "widened",
                    &encodings_seen);
  EXPECT_EQ(encodings_seen, (std::set<std::string>{"i32"}));
  auto is_wide = reinterpret_cast<WideFn>(emitted.Symbol(emitted.Prefixed("_wide_coordinates")));
  ASSERT_TRUE(is_wide);
  for (const CooTensor* t : {&narrow, &wide}) {
    std::vector<const int32_t*> coords = {t->coords[0].data(), t->coords[1].data()};
    std::unique_ptr<void, FreeFn> operand(
        pack(t->dims.data(), t->nnz(), coords.data(), t->values.data()), release);
    ASSERT_TRUE(operand) << last_error();
    EXPECT_EQ(is_wide(operand.get()), t == &wide ? 1 : 0);
  }
}

}  // namespace
}  // namespace sparsetune
