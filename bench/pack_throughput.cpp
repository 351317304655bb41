// Packing time of the formats tune picks, against CSR, on generated matrices.
// Usage: pack_throughput [NNZ] [REPEATS] [FORMAT]   (default 20M nonzeros, 5 repeats, every format)
// Each pack runs on fresh memory, as a caller's first one does and as tune and bench time it
// (freed blocks kept for the next pack are released first: on a virtual machine, mapping and
// clearing fresh pages runs at about 2 GB/s, so a pack's scratch arrays cost as much as its
// work). Prints, per matrix and format, the median pack time and its ratio to CSR's in the same
// run, and the ratio of the packer's sorting path (the entries' canonical order given explicitly,
// as an emitted kernel's _pack_coo gives it) to that time: what a direct path saves, where a
// format has one (1.05-1.25x where it has none: the list costs the sorting path a gather).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <numeric>

#include "base/bulk_allocator.hpp"
#include "tensor/generate.hpp"
#include "tensor/level_packer.hpp"
#include "tensor/pack.hpp"

namespace {

using sparsetune::LevelKind;
using sparsetune::LevelSpec;
using sparsetune::SplitPart;
using sparsetune::StorageFormat;

StorageFormat Sell(int64_t slice) {  // i1:U k:S i0:U
  StorageFormat f;
  f.split = {slice, 1};
  f.levels = {LevelSpec{0, SplitPart::kOuter, LevelKind::kDense},
              LevelSpec{1, SplitPart::kWhole, LevelKind::kSliced},
              LevelSpec{0, SplitPart::kInner, LevelKind::kDense}};
  return f;
}

StorageFormat GroupCoo(int group) {  // i:U k:G<group>
  StorageFormat f = StorageFormat::Csr();
  f.levels[1].group = group;
  return f;
}

// k1:U i:<rows> k0:C: every row in every block (dense rows), or only the rows a block holds
// (compressed rows, the column segments tune's rules ask for).
StorageFormat ColumnBlocked(int64_t width, LevelKind rows) {
  StorageFormat f;
  f.split = {1, width};
  f.levels = {LevelSpec{1, SplitPart::kOuter, LevelKind::kDense},
              LevelSpec{0, SplitPart::kWhole, rows},
              LevelSpec{1, SplitPart::kInner, LevelKind::kCompressed}};
  return f;
}

StorageFormat CooBlocks(int64_t block) {  // i1:U k1:C k0:C i0:Q, square blocks
  StorageFormat f;
  f.split = {block, block};
  f.levels = {LevelSpec{0, SplitPart::kOuter, LevelKind::kDense},
              LevelSpec{1, SplitPart::kOuter, LevelKind::kCompressed},
              LevelSpec{1, SplitPart::kInner, LevelKind::kCompressed},
              LevelSpec{0, SplitPart::kInner, LevelKind::kSingleton}};
  return f;
}

double MedianPackMs(const sparsetune::CooTensor& t, const StorageFormat& f, int repeats,
                    std::string& refusal) {
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    sparsetune::bulk_memory::ReleaseKept();
    sparsetune::PackOutcome out = sparsetune::Pack(t, f, sparsetune::DType::kF32);
    if (!out.packed) {
      refusal = out.refusal;
      return 0;
    }
    ms.push_back(out.packed->pack_ms);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The median time of the packer's sorting path on the same entries and format: levels and
// values, as Pack builds them, with the canonical order given as a list.
double MedianSortingPathMs(const sparsetune::CooTensor& t, const StorageFormat& f, int repeats) {
  sparsetune::packer::Layout layout;
  layout.dims = t.dims;
  layout.split = f.split;
  for (const LevelSpec& spec : f.levels)
    layout.levels.push_back(
        {spec.mode, static_cast<int>(spec.part), static_cast<int>(spec.kind), spec.group});
  sparsetune::packer::Options options;
  options.padding_cap = sparsetune::PackOptions().padding_cap;
  options.choose_encodings = true;
  std::vector<int32_t> canonical(t.nnz());
  std::iota(canonical.begin(), canonical.end(), 0);
  const int32_t* coords[] = {t.coords[0].data(), t.coords[1].data()};
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    sparsetune::bulk_memory::ReleaseKept();
    const auto start = std::chrono::steady_clock::now();
    sparsetune::packer::LevelPacker<sparsetune::BulkAllocator, sparsetune::ScratchAllocator> levels(
        layout, options, t.nnz(), coords, canonical.data());
    if (!levels.Run()) return 0;
    std::vector<float, sparsetune::BulkAllocator<float>> values;
    levels.ScatterValues(values, t.values.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sparsetune;
  const int64_t nnz = argc > 1 ? ParseCount(argv[1], "NNZ") : 20000000;
  const int repeats = argc > 2 ? static_cast<int>(ParseCount(argv[2], "REPEATS")) : 5;
  const std::string only = argc > 3 ? argv[3] : "";
  const int64_t n = std::max<int64_t>(1000, nnz / 10);  // about 10 nonzeros per row

  struct Matrix {
    std::string name;
    std::function<CooTensor()> make;
  };
  const std::vector<Matrix> matrices = {
      {"banded",
       [&] {
         BandedParams p;
         p.rows = p.cols = n;
         p.bandwidth = 8;
         p.fill = 0.6;
         p.seed = 13;
         return GenerateBanded(p);
       }},
      {"uniform",
       [&] {
         UniformParams p;
         p.rows = p.cols = n;
         p.nnz = nnz;
         p.seed = 11;
         return GenerateUniform(p);
       }},
      {"powerlaw",
       [&] {
         PowerLawParams p;
         p.rows = p.cols = n;
         p.nnz = nnz;
         p.seed = 12;
         return GeneratePowerLaw(p);
       }},
  };
  const std::vector<std::pair<std::string, StorageFormat>> formats = {
      {"csr", StorageFormat::Csr()},
      {"sell16", Sell(16)},
      {"sell4", Sell(4)},
      {"groupcoo_G8", GroupCoo(8)},
      {"column_blocked_64k", ColumnBlocked(65536, LevelKind::kDense)},
      {"column_segments_64k", ColumnBlocked(65536, LevelKind::kCompressed)},
      {"coo_blocks_64k", CooBlocks(65536)},
  };
  std::printf("%-10s %-20s %10s %10s %8s %13s\n", "matrix", "format", "nnz", "pack_ms", "vs_csr",
              "sorting_path");
  for (const Matrix& m : matrices) {
    const CooTensor t = m.make();
    double csr_ms = 0;
    for (const auto& [name, format] : formats) {
      if (!only.empty() && name != "csr" && name != only) continue;
      std::string refusal;
      const double ms = MedianPackMs(t, format, repeats, refusal);
      if (!refusal.empty()) {
        std::printf("%-10s %-20s %10lld  refused: %s\n", m.name.c_str(), name.c_str(),
                    static_cast<long long>(t.nnz()), refusal.c_str());
        continue;
      }
      if (name == "csr") csr_ms = ms;
      const double sorting_ms = MedianSortingPathMs(t, format, repeats);
      std::printf("%-10s %-20s %10lld %10.1f %7.2fx %12.2fx\n", m.name.c_str(), name.c_str(),
                  static_cast<long long>(t.nnz()), ms, csr_ms > 0 ? ms / csr_ms : 0.0,
                  ms > 0 ? sorting_ms / ms : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
