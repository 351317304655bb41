#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/elapsed.hpp"
#include "commands.hpp"
#include "io/read.hpp"
#include "tensor/fingerprint.hpp"
#include "tensor/stats.hpp"

namespace sparsetune::cli {

namespace {

struct InfoOptions {
  std::string file;
  bool stats = false;
  bool json = false;
};

void RunInfo(const InfoOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> warnings;
  CooTensor tensor = ReadTensorFile(options.file, &warnings);
  const double read_ms = MsSince(start);
  for (const auto& w : warnings) std::fprintf(stderr, "sparsetune: warning: %s\n", w.c_str());
  const PatternStats stats = ComputePatternStats(tensor);
  const std::string fingerprint = PatternFingerprint(tensor);

  nlohmann::json out;
  out["file"] = options.file;
  out["dims"] = tensor.dims;
  out["order"] = tensor.order();
  if (tensor.order() == 2) {
    out["rows"] = tensor.dims[0];
    out["cols"] = tensor.dims[1];
  }
  out["nnz"] = tensor.nnz();
  out["fingerprint"] = fingerprint;
  out["symmetry"] = SymmetryName(tensor.symmetry);
  out["pattern_only"] = tensor.pattern_only;
  out["complex"] = tensor.is_complex();
  out["duplicates_summed"] = tensor.duplicates_summed;
  out["explicit_zeros"] = tensor.explicit_zeros;
  out["read_ms"] = read_ms;
  out["stats"] = PatternStatsToJson(stats);
  if (options.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::string dims;
  for (size_t m = 0; m < tensor.dims.size(); ++m) {
    dims += (m ? " x " : "") + std::to_string(tensor.dims[m]);
  }
  std::printf("%s\n", options.file.c_str());
  std::printf("  dims         %s\n", dims.c_str());
  std::printf("  nnz          %lld  (density %.3g)\n", static_cast<long long>(tensor.nnz()),
              stats.density);
  std::printf("  symmetry     %s%s\n", SymmetryName(tensor.symmetry),
              tensor.pattern_only   ? ", pattern only"
              : tensor.is_complex() ? ", complex values (--dtype c64 or c128)"
                                    : "");
  if (tensor.duplicates_summed) {
    std::printf("  duplicates   %lld summed\n", static_cast<long long>(tensor.duplicates_summed));
  }
  std::printf("  fingerprint  %s\n", fingerprint.c_str());
  std::printf("  %s length   min %lld  mean %.2f  max %lld  stddev %.2f  empty %lld\n",
              tensor.order() == 2 ? "row" : "slice", static_cast<long long>(stats.row_min),
              stats.row_mean, static_cast<long long>(stats.row_max), stats.row_stddev,
              static_cast<long long>(stats.empty_rows));
  if (tensor.order() == 2) {
    std::printf("  bandwidth    %lld  diagonal %.3f", static_cast<long long>(stats.bandwidth),
                stats.diagonal_fraction);
    if (tensor.dims[0] == tensor.dims[1])
      std::printf("  symmetric pattern %.3f", stats.pattern_symmetry);
    std::printf("\n  dense blocks 4x4 %.3f  8x8 %.3f  16x16 %.3f (share of nnz)\n",
                stats.dense_block_fraction[0], stats.dense_block_fraction[1],
                stats.dense_block_fraction[2]);
  }
  if (options.stats) {
    for (const TileStats& t : stats.tiles) {
      const long long tile = static_cast<long long>(t.tile);
      std::printf(
          "  tiles %lldx%lld  %lld non-empty  MaxTile %lld  SizeTile %.1f  PrTileIdx "
          "rows %.3g cols %.3g  ProbIndex rows %.3g cols|row %.3g\n",
          tile, tile, static_cast<long long>(t.nonempty_tiles), static_cast<long long>(t.max_tile),
          t.size_tile, t.pr_tile_row, t.pr_tile_col, t.prob_row, t.prob_col_given_row);
      std::printf(
          "               Corrs(1..3) %.3f %.3f %.3f  sum %.2f (%lld tiles sampled)  "
          "TileCorrs(0..3) %lld %lld %lld %lld\n",
          t.corrs.size() > 1 ? t.corrs[1] : 0.0, t.corrs.size() > 2 ? t.corrs[2] : 0.0,
          t.corrs.size() > 3 ? t.corrs[3] : 0.0, t.corrs_sum,
          static_cast<long long>(t.sampled_tiles), static_cast<long long>(t.tile_corrs[0]),
          static_cast<long long>(t.tile_corrs[1]), static_cast<long long>(t.tile_corrs[2]),
          static_cast<long long>(t.tile_corrs[3]));
    }
  }
  std::printf("  read         %.1f ms\n", read_ms);
}

}  // namespace

void RegisterInfo(CLI::App& app, Context& context) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App* sub =
      app.add_subcommand("info", "Shape, nnz, row statistics and fingerprint of a file");
  sub->add_option("FILE", options->file, "Matrix Market, SuiteSparse .tar.gz or FROSTT .tns file")
      ->required();
  sub->add_flag("--stats", options->stats,
                "Also D2T2's tile statistics (MaxTile, SizeTile, PrTileIdx, ProbIndex, Corrs, "
                "TileCorrs) at 32x32 and 128x128 tiles; --json always has them under stats.tiles");
  sub->add_flag("--json", options->json, "One JSON object on stdout");
  sub->callback([options] { RunInfo(*options); });
}

}  // namespace sparsetune::cli
