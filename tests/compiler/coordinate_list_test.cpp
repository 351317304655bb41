// Coordinate lists: a compressed level above a singleton keeps one position per entry, so
// {k0:C, i0:Q} is COO, here inside blocks as graphs want it.
#include <gtest/gtest.h>

#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"
#include "tensor/pack.hpp"

namespace sparsetune {
namespace {

Schedule Parse(const nlohmann::json& json) {
  return Schedule::FromJson(json, "test schedule");
}

RunResult RunOnce(KernelRunner& runner, const Schedule& s) {
  RunOptions options;
  options.time = false;
  return runner.Run(s, options);
}

// Blocks of rows and columns, each a list of its entries by column (or by row).
nlohmann::json Blocks(int64_t rows, int64_t cols, bool by_column) {
  const std::vector<std::string> order = by_column
                                             ? std::vector<std::string>{"i1", "k1", "k0", "i0"}
                                             : std::vector<std::string>{"i1", "k1", "i0", "k0"};
  const std::vector<std::string> format =
      by_column ? std::vector<std::string>{"i1:U", "k1:C", "k0:C", "i0:Q"}
                : std::vector<std::string>{"i1:U", "k1:C", "i0:C", "k0:Q"};
  return {{"splits", {{"i", rows}, {"k", cols}}},
          {"loop_order", order},
          {"format", format},
          {"parallel", {{"index", "i1"}, {"partition", "balanced"}}}};
}

TEST(CoordinateLists, SpmvInBlocksVerifies) {
  const Expression e = KernelExpression("spmv");
  Jit jit;
  // Empty rows and columns, blocks that do not divide the matrix, a wide one.
  const std::vector<CooTensor> tensors = {testing::SmallWorkload(2),
                                          testing::RandomSparse({301, 277}, 2500, 3),
                                          testing::RandomSparse({40, 70000}, 900, 4)};
  for (const CooTensor& tensor : tensors) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {}), dtype, jit);
      for (auto [rows, cols] : {std::pair<int64_t, int64_t>{16, 64}, {64, 16}, {256, 65536}}) {
        for (bool by_column : {true, false}) {
          for (bool narrow : {false, true}) {
            // In batches of entries too: four with 16-bit coordinates read a word at a time,
            // two, and the entries left over.
            for (int unroll : {1, 4, 2}) {
              Schedule s = Parse(Blocks(rows, cols, by_column));
              s.narrow_coordinates = narrow;
              s.unroll = unroll;
              const RunResult r = RunOnce(runner, s);
              EXPECT_TRUE(r.ok() && r.verified)
                  << rows << " x " << cols << (by_column ? " by column" : " by row") << ", unroll "
                  << unroll << ": " << r.message;
            }
          }
        }
      }
    }
  }
}

// A parallel row block clears its own rows of y just before accumulating them (cache-hot, by
// the thread that writes them); blocks of a few rows leave it to one pass up front.
TEST(CoordinateLists, RowBlocksClearTheirOwnRows) {
  const Expression e = KernelExpression("spmv");
  auto cleared_by_block = [&](int64_t rows) {
    const LowerOutcome lowered = Lower(e, Parse(Blocks(rows, 128, true)));
    EXPECT_TRUE(lowered.nest) << lowered.error;
    if (!lowered.nest) return false;
    const NestNode& row_blocks = *lowered.nest->root;  // the outermost loop
    EXPECT_EQ(row_blocks.var.name, "i1");
    EXPECT_NE(row_blocks.zero_block, lowered.nest->zero_output);
    return row_blocks.zero_block;
  };
  EXPECT_TRUE(cleared_by_block(256));
  EXPECT_TRUE(cleared_by_block(65536));
  EXPECT_FALSE(cleared_by_block(16));
}

TEST(CoordinateLists, PackingKeepsEveryEntryAndNoPosArray) {
  const CooTensor tensor = testing::RandomSparse({301, 277}, 2500, 3);
  const Expression e = KernelExpression("spmv");
  const LowerOutcome lowered = Lower(e, Parse(Blocks(64, 128, true)));
  ASSERT_TRUE(lowered.nest) << lowered.error;
  const PackOutcome packed = Pack(tensor, lowered.nest->storage, DType::kF32);
  ASSERT_TRUE(packed.packed) << packed.refusal;
  const PackedTensor& p = *packed.packed;
  ASSERT_EQ(p.levels.size(), 4u);
  EXPECT_EQ(p.levels[2].positions, tensor.nnz());  // one position per entry
  EXPECT_EQ(p.levels[3].positions, tensor.nnz());
  EXPECT_TRUE(p.levels[3].pos.empty());
  EXPECT_EQ(p.levels[3].encoding.bits, 8);  // rows of a 64-row block
  EXPECT_EQ(p.levels[2].encoding.bits, 8);  // columns of a 128-column block
  const CooTensor back = Unpack(p);
  EXPECT_EQ(back.coords, tensor.coords);
}

TEST(CoordinateLists, SpmmAndSddmmVerify) {
  Jit jit;
  const CooTensor tensor = testing::RandomSparse({120, 90}, 1500, 5);
  const Expression spmm = KernelExpression("spmm");
  KernelRunner mm(spmm, tensor, ResolveIndexSizes(spmm, tensor.dims, {{"j", 24}}), DType::kF32,
                  jit);
  nlohmann::json s = Blocks(32, 32, true);
  s["loop_order"] = {"i1", "k1", "k0", "i0", "j"};
  RunResult r = RunOnce(mm, Parse(s));
  EXPECT_TRUE(r.ok() && r.verified) << r.message;
  const Expression sddmm = KernelExpression("sddmm_nt");
  KernelRunner dd(sddmm, tensor, ResolveIndexSizes(sddmm, tensor.dims, {{"k", 20}}), DType::kF64,
                  jit);
  s = {{"splits", {{"i", 32}, {"j", 32}}},
       {"loop_order", {"i1", "j1", "j0", "i0", "k"}},
       {"format", {"i1:U", "j1:C", "j0:C", "i0:Q"}},
       {"parallel", {{"index", "i1"}, {"partition", "balanced"}}}};
  r = RunOnce(dd, Parse(s));
  EXPECT_TRUE(r.ok() && r.verified) << r.message;
}

TEST(CoordinateLists, RefusalsSayWhy) {
  const Expression e = KernelExpression("spmv");
  auto error_of = [&](const nlohmann::json& json) {
    const LowerOutcome lowered = Lower(e, Parse(json));
    return lowered.nest ? std::string() : lowered.error;
  };
  nlohmann::json s = Blocks(16, 16, true);
  s["parallel"] = {{"index", "k0"}};
  EXPECT_NE(error_of(s).find("coordinate list"), std::string::npos) << error_of(s);
  s["parallel"] = {{"index", "i0"}};
  EXPECT_NE(error_of(s).find("coordinate list"), std::string::npos) << error_of(s);
  // A singleton needs a compressed level right above it.
  s = {{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:Q"}}};
  EXPECT_NE(error_of(s).find("singleton"), std::string::npos) << error_of(s);
  s = {{"splits", {{"k", 8}}},
       {"loop_order", {"k1", "i", "k0"}},
       {"format", {"k1:C", "i:Q", "k0:C"}}};
  EXPECT_NE(error_of(s).find("singleton"), std::string::npos) << error_of(s);
}

}  // namespace
}  // namespace sparsetune

namespace sparsetune {
namespace {

// A coordinate list that scatters into y takes the schedule's unroll as entries a batch, says
// so in its nest, and its kernel reads a batch's 16-bit coordinates one word a level and x and
// y through the block's part of them; entries that add into one element of y add in order, so
// the result is the plain loop's, bit for bit.
TEST(CoordinateLists, BatchesOfEntriesAddAsThePlainLoopDoes) {
  const Expression e = KernelExpression("spmv");
  nlohmann::json json = Blocks(256, 4096, true);
  json["narrow_coordinates"] = true;
  json["unroll"] = 4;
  const LowerOutcome lowered = Lower(e, Parse(json));
  ASSERT_TRUE(lowered.nest) << lowered.error;
  EXPECT_NE(lowered.nest->ToString().find("4 entries at a time"), std::string::npos)
      << lowered.nest->ToString();
  // Rows with many entries in one block column, so batches hold repeated rows.
  CooTensor tensor = testing::RandomSparse({700, 9000}, 30000, 11);
  Jit jit;
  KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {}), DType::kF32, jit);
  RunOptions options;
  options.time = false;
  const PreparedKernel batched = runner.Prepare(Parse(json), options);
  ASSERT_TRUE(batched.ok() && batched.result().verified) << batched.result().message;
  json.erase("unroll");
  const PreparedKernel plain = runner.Prepare(Parse(json), options);
  ASSERT_TRUE(plain.ok() && plain.result().verified) << plain.result().message;
  batched.Call();
  plain.Call();
  ASSERT_EQ(batched.output().size(), plain.output().size());
  int64_t differ = 0;
  for (int64_t k = 0; k < plain.output().size(); ++k)
    differ += batched.output().Get(k) != plain.output().Get(k);
  EXPECT_EQ(differ, 0) << "of " << plain.output().size() << " elements of y";
  EXPECT_NE(batched.result().source_path, plain.result().source_path);
}

}  // namespace
}  // namespace sparsetune
