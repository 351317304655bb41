// The generated C++ of a few schedules carries what each schedule asks for (a parallel loop
// with its chunk or a balanced partition, N partial sums for unroll N, narrow coordinate types,
// sliced lanes, register tiles), compiles, and computes what the reference computes. Assertions
// look for robust features of the text, not the whole text.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "cli/cli_support.hpp"
#include "codegen/codegen.hpp"
#include "ir/kernels.hpp"
#include "ir/loop_nest.hpp"
#include "measure/runner.hpp"
#include "support/test_data.hpp"
#include "tensor/permutation.hpp"

namespace sparsetune {
namespace {

using nlohmann::json;

::testing::AssertionResult Has(const std::string& source, const std::string& text) {
  if (source.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"" << text << "\" in the generated source:\n"
                                       << source;
}

::testing::AssertionResult Lacks(const std::string& source, const std::string& text) {
  if (source.find(text) == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" in the generated source:\n" << source;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Schedule Parse(const json& j) {
  return Schedule::FromJson(j, "test schedule");
}

// Rows whose columns lie within `span` of a diagonal that crosses a very wide matrix: narrow
// coordinates are then stored relative to each row's first column.
CooTensor Band(int64_t rows, int64_t cols, int64_t span, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CooTensor t;
  t.Reset({rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t diagonal = i * (cols - span) / rows;
    for (int e = 0; e < 5; ++e) {
      const int32_t c[2] = {int32_t(i), int32_t(diagonal + int64_t(rng() % uint64_t(span)))};
      t.Append(c, double(int64_t(rng() % 17) - 8) / 8.0 + 0.0625);
    }
  }
  t.Canonicalize();
  return t;
}

class GeneratedKernels : public ::testing::Test {
 protected:
  // The source `schedule` generates for the runner's operand (packing decides the coordinate
  // types), without compiling it.
  std::string SourceFor(KernelRunner& runner, const Schedule& schedule,
                        CodegenMode mode = CodegenMode::kRuntimeParameters) {
    RunOptions options;
    options.mode = mode;
    std::string error;
    const std::string source = runner.Source(schedule, options, &error);
    EXPECT_FALSE(source.empty()) << schedule.CanonicalJson() << ": " << error;
    return source;
  }

  // The same source, compiled, run once and checked against the reference.
  std::string CompiledAndVerified(KernelRunner& runner, const Schedule& schedule,
                                  CodegenMode mode = CodegenMode::kRuntimeParameters) {
    const std::string source = SourceFor(runner, schedule, mode);
    RunOptions options;
    options.mode = mode;
    options.time = false;
    const RunResult r = runner.Run(schedule, options);
    EXPECT_TRUE(r.ok() && r.verified)
        << schedule.CanonicalJson() << ": " << RunStatusName(r.status) << ": " << r.message << "\n"
        << r.nest << "source " << r.source_path;
    // What the test asserts on is what ran.
    EXPECT_EQ(ReadText(r.source_path), source);
    return source;
  }

  // A runner on a copy of `tensor` that lives as long as the test (runners keep a reference).
  KernelRunner& Runner(const std::string& kernel, const CooTensor& tensor,
                       const std::map<std::string, int64_t>& dense = {},
                       DType dtype = DType::kF32) {
    const Expression e = KernelExpression(kernel);
    tensors_.push_back(std::make_unique<CooTensor>(tensor));
    runners_.push_back(std::make_unique<KernelRunner>(
        e, *tensors_.back(), ResolveIndexSizes(e, tensor.dims, dense), dtype, jit_));
    return *runners_.back();
  }

  testing::TempDir dir_;
  Jit jit_{dir_.path() + "/jit"};
  // Uneven dims (no split divides them), empty rows, both signs.
  CooTensor matrix_ = testing::RandomSparse({61, 47}, 700, 11);
  std::vector<std::unique_ptr<CooTensor>> tensors_;
  std::vector<std::unique_ptr<KernelRunner>> runners_;
};

TEST_F(GeneratedKernels, FixedCsrSpmvIsADynamicParallelRowLoop) {
  KernelRunner& runner = Runner("spmv", matrix_);
  const Schedule csr = FixedCsrSchedule(runner.expression());
  const std::string source = CompiledAndVerified(runner, csr);
  EXPECT_TRUE(Has(source, "#pragma omp parallel num_threads(nthreads)"));
  EXPECT_TRUE(Has(source, "#pragma omp for schedule(dynamic, chunk)"));
  // Chunk and threads come from the arguments: one object serves every chunk.
  EXPECT_TRUE(Has(source, "args->chunk"));
  EXPECT_TRUE(Has(source, "args->threads"));
  EXPECT_TRUE(Has(source, "typedef float value_t;"));
  EXPECT_TRUE(Has(source, "L1_pos[p0 + 1]"));                    // row extents through pos
  EXPECT_TRUE(Has(source, "const int32_t* __restrict L1_crd"));  // wide coordinates
  // Each row is written once, so the output is not cleared first.
  EXPECT_TRUE(Lacks(source, "T0[q] = 0"));
  EXPECT_TRUE(Has(source, "T0[i0] = acc0;"));

  // Baked: the chunk is a constant of the text; the thread count is the caller's (an emitted
  // kernel runs on the threads OpenMP gives the program).
  Schedule baked = csr;
  baked.threads = 2;
  const std::string constant = CompiledAndVerified(runner, baked, CodegenMode::kBaked);
  EXPECT_TRUE(Has(constant, "constexpr int chunk = 128;"));
  EXPECT_TRUE(Has(constant, "args->threads"));
  EXPECT_TRUE(Lacks(constant, "const int nthreads = 2;"));
  EXPECT_TRUE(Has(constant, "#pragma omp for schedule(dynamic, chunk)"));
  EXPECT_TRUE(Lacks(constant, "args->chunk"));

  // Double precision.
  KernelRunner& f64 = Runner("spmv", matrix_, {}, DType::kF64);
  EXPECT_TRUE(Has(CompiledAndVerified(f64, csr), "typedef double value_t;"));
}

TEST_F(GeneratedKernels, RuntimeParametersServeEverySplitChunkAndThreadCount) {
  KernelRunner& runner = Runner("spmv", matrix_);
  auto bcsr = [](int64_t block, int64_t chunk, int threads) {
    return Parse({{"splits", {{"i", block}, {"k", block}}},
                  {"loop_order", {"i1", "k1", "i0", "k0"}},
                  {"format", {"i1:U", "k1:C", "i0:U", "k0:U"}},
                  {"parallel", {{"index", "i1"}, {"chunk", chunk}, {"threads", threads}}}});
  };
  const std::string a = SourceFor(runner, bcsr(4, 8, 0));
  EXPECT_EQ(SourceFor(runner, bcsr(2, 8, 0)), a);
  EXPECT_EQ(SourceFor(runner, bcsr(4, 1, 2)), a);
  const std::string b = SourceFor(runner, bcsr(4, 8, 0), CodegenMode::kBaked);
  EXPECT_NE(SourceFor(runner, bcsr(2, 8, 0), CodegenMode::kBaked), b);
  EXPECT_NE(SourceFor(runner, bcsr(4, 1, 0), CodegenMode::kBaked), b);
}

TEST_F(GeneratedKernels, SplitBcsrSpmvReadsBlocksOfTheSplitSize) {
  KernelRunner& runner = Runner("spmv", matrix_);
  const Schedule bcsr = Parse({{"splits", {{"i", 4}, {"k", 8}}},
                               {"loop_order", {"i1", "k1", "i0", "k0"}},
                               {"format", {"i1:U", "k1:C", "i0:U", "k0:U"}},
                               {"parallel", {{"index", "i1"}, {"chunk", 3}}}});
  const std::string source = CompiledAndVerified(runner, bcsr);
  EXPECT_TRUE(Has(source, "const int64_t s0 = args->splits[0];"));
  EXPECT_TRUE(Has(source, "const int64_t s1 = args->splits[1];"));
  // Only the block-column level is compressed; the levels inside a block are dense ranges,
  // the last one clipped at the matrix edge.
  EXPECT_TRUE(Has(source, "L1_crd"));
  EXPECT_TRUE(Lacks(source, "L2_crd"));
  EXPECT_TRUE(Lacks(source, "L3_crd"));
  EXPECT_TRUE(Has(source, "st_min(s1, d1 - i1o * s1)"));
  EXPECT_TRUE(Has(source, "#pragma omp for schedule(dynamic, chunk)"));

  const std::string baked = CompiledAndVerified(runner, bcsr, CodegenMode::kBaked);
  EXPECT_TRUE(Has(baked, "constexpr int64_t s0 = 4;"));
  EXPECT_TRUE(Has(baked, "constexpr int64_t s1 = 8;"));
  EXPECT_TRUE(Has(baked, "constexpr int chunk = 3;"));
}

TEST_F(GeneratedKernels, BalancedPartitionCutsRowsByNonzeros) {
  KernelRunner& runner = Runner("spmv", matrix_);
  Schedule s = FixedCsrSchedule(runner.expression());
  s.partition = Partition::kBalanced;
  const std::string source = CompiledAndVerified(runner, s);
  EXPECT_TRUE(Has(source, "#pragma omp parallel num_threads(nthreads)"));
  EXPECT_TRUE(Has(source, "st_balanced_bound(0, hi_i0, part, parts, work)"));
  EXPECT_TRUE(Has(source, "omp_get_thread_num()"));
  // The work of a row range is read from the row pointers.
  EXPECT_TRUE(Has(source, "return (int64_t)L1_pos[x];"));
  EXPECT_TRUE(Lacks(source, "schedule(dynamic"));
}

// A balanced partition of the reduction loop itself: each thread sums its share of a row's
// nonzeros and adds it to the row's total.
TEST_F(GeneratedKernels, BalancedPartitionOfAReductionAddsEachThreadsShare) {
  KernelRunner& runner = Runner("spmv", matrix_);
  const Schedule s = Parse({{"loop_order", {"i", "k"}},
                            {"format", {"i:U", "k:C"}},
                            {"parallel", {{"index", "k"}, {"partition", "balanced"}}}});
  const std::string source = CompiledAndVerified(runner, s);
  EXPECT_TRUE(Has(source, "st_balanced_bound(lo_i1, hi_i1, part, parts, work)"));
  EXPECT_TRUE(Has(source, "*shared_acc0 += acc0;"));
}

TEST_F(GeneratedKernels, UnrollNKeepsNPartialSums) {
  KernelRunner& runner = Runner("spmv", matrix_);
  Schedule s = FixedCsrSchedule(runner.expression());
  s.unroll = 4;
  const std::string source = CompiledAndVerified(runner, s);
  EXPECT_TRUE(Has(source, "value_t acc0_1 = 0, acc0_2 = 0, acc0_3 = 0;"));
  EXPECT_TRUE(Lacks(source, "acc0_4"));
  EXPECT_TRUE(Has(source, "pb1 += 4"));
  EXPECT_TRUE(Has(source, "acc0 += ((acc0_1 + acc0_2) + acc0_3);"));
  // Any N: acc0 and N - 1 more, combined pairwise; 1 keeps the plain loop.
  for (int n : {2, 3, 8}) {
    s.unroll = n;
    const std::string text = SourceFor(runner, s);
    for (int u = 1; u < n; ++u) EXPECT_TRUE(Has(text, "acc0_" + std::to_string(u) + " += ")) << n;
    EXPECT_TRUE(Lacks(text, "acc0_" + std::to_string(n))) << n;
    EXPECT_TRUE(Has(text, "pb1 += " + std::to_string(n))) << n;
  }
  s.unroll = 1;
  EXPECT_TRUE(Lacks(SourceFor(runner, s), "acc0_1"));
}

TEST_F(GeneratedKernels, NarrowCoordinatesUseTheNarrowestType) {
  Schedule s = FixedCsrSchedule(KernelExpression("spmv"));
  s.narrow_coordinates = true;
  // 200 columns: absolute 8-bit coordinates.
  const CooTensor narrow = testing::RandomSparse({61, 200}, 700, 12);
  KernelRunner& u8 = Runner("spmv", narrow);
  const std::string a = CompiledAndVerified(u8, s);
  EXPECT_TRUE(Has(a, "const uint8_t* __restrict L1_crd"));
  EXPECT_TRUE(Lacks(a, "L1_base"));
  // 3000 columns: absolute 16-bit.
  KernelRunner& u16 = Runner("spmv", testing::RandomSparse({61, 3000}, 700, 13));
  EXPECT_TRUE(Has(SourceFor(u16, s), "const uint16_t* __restrict L1_crd"));
  // 300000 columns, each row within 200 of its first: 8 bits relative to a per-row base.
  const CooTensor band = Band(40, 300000, 200, 14);
  KernelRunner& relative = Runner("spmv", band);
  const std::string r = CompiledAndVerified(relative, s);
  EXPECT_TRUE(Has(r, "const uint8_t* __restrict L1_crd"));
  EXPECT_TRUE(Has(r, "const int64_t base_i1 = L1_base[p0];"));
  EXPECT_TRUE(Has(r, "base_i1 + (int64_t)L1_crd[p1]"));
  // Off: 32-bit coordinates whatever fits.
  s.narrow_coordinates = false;
  EXPECT_TRUE(Has(SourceFor(u8, s), "const int32_t* __restrict L1_crd"));
}

TEST_F(GeneratedKernels, SlicedLevelComputesASliceOfRowsPerColumnSlot) {
  KernelRunner& runner = Runner("spmv", matrix_);
  const Schedule sell = Parse({{"splits", {{"i", 8}}},
                               {"loop_order", {"i1", "k", "i0"}},
                               {"format", {"i1:U", "k:S", "i0:U"}},
                               {"parallel", {{"index", "i1"}, {"chunk", 2}}}});
  const std::string source = CompiledAndVerified(runner, sell);
  // The slot's coordinate is stored per lane: read at the lane's position p2, not at p1.
  EXPECT_TRUE(Has(source, "(int64_t)L1_crd[p2]"));
  EXPECT_TRUE(Lacks(source, "L1_crd[p1]"));
  // The slice's lanes accumulate in an array updated by one SIMD loop per slot.
  EXPECT_TRUE(Has(source, "value_t tile0[8] = {};"));
  EXPECT_TRUE(Has(source, "tile0[i0n] += "));
  EXPECT_TRUE(Has(source, "#pragma omp simd"));
  // Its split is a constant of the text even in runtime-parameter mode: the tile's size.
  EXPECT_TRUE(Has(source, "constexpr int64_t s0 = 8;"));
  // Each whole slice holds its rows' whole sums: stored, not added, and only the rows of a
  // partial last slice, which adds into them, are cleared (the runner verifies on an output of
  // NaNs).
  EXPECT_TRUE(Has(source, "] = tile0[i0n];"));
  EXPECT_TRUE(Lacks(source, "+= tile0[i0n];"));
  EXPECT_TRUE(Has(source, "for (int64_t q = d0 - d0 % s0; q < d0; ++q) T0[q] = 0;"));
  const CooTensor whole_slices = testing::RandomSparse({96, 70}, 700, 15);
  CompiledAndVerified(Runner("spmv", whole_slices), sell);
}

// Complex values: the same tiled schedule keeps its slice in vectors of interleaved real and
// imaginary parts, multiplied through st_cscale; sums are declared to OpenMP, and shared rows
// are updated atomically a part at a time.
TEST_F(GeneratedKernels, ComplexValuesTileInVectorsOfPartsAndSplitAtomics) {
  const Schedule tiled = Parse({{"splits", {{"j", 16}}},
                                {"loop_order", {"i", "j1", "k", "j0"}},
                                {"format", {"i:U", "k:C"}},
                                {"parallel", {{"index", "i"}, {"chunk", 4}}}});
  KernelRunner& c64 = Runner("spmm", matrix_, {{"j", 40}}, DType::kC64);
  const std::string source = CompiledAndVerified(c64, tiled);
  EXPECT_TRUE(Has(source, "typedef std::complex<float> value_t;"));
  EXPECT_TRUE(Has(source, "#pragma omp declare reduction(+ : value_t"));
  EXPECT_TRUE(Has(source, "typedef float st_vec __attribute__((vector_size(ST_VEC_BYTES)"));
  EXPECT_TRUE(Has(source, "tile0[g] += st_cscale(inv"));
  // Columns to threads: rows of y are shared, updated by two atomic additions.
  const Schedule columns = Parse({{"loop_order", {"k", "i"}},
                                  {"format", {"k:U", "i:C"}},
                                  {"parallel", {{"index", "k"}, {"chunk", 4}}}});
  KernelRunner& c128 = Runner("spmv", matrix_, {}, DType::kC128);
  const std::string atomic = CompiledAndVerified(c128, columns);
  EXPECT_TRUE(Has(atomic, "st_atomic_add(&T0[i0], "));
  // SDDMM's complex dot product over C(k,j) as given (strided): real and imaginary parts summed
  // apart by OpenMP, and the nonzero multiplies the sum once.
  const Schedule dot = Parse({{"loop_order", {"i", "j", "k"}},
                              {"format", {"i:U", "j:C"}},
                              {"parallel", {{"index", "i"}, {"chunk", 4}}}});
  KernelRunner& sddmm = Runner("sddmm", matrix_, {{"k", 24}}, DType::kC64);
  const std::string scaled = CompiledAndVerified(sddmm, dot);
  EXPECT_TRUE(Has(scaled, "#pragma omp simd reduction(+:acc0_sum_re, acc0_sum_im)"));
  EXPECT_TRUE(Has(scaled, "acc0 += inv0 * value_t(acc0_sum_re, acc0_sum_im);"));
  // Over C transposed (contiguous): vector partial sums of interleaved parts (st_cmul),
  // reduced by st_csum.
  Schedule transposed = dot;
  transposed.transposed = {"C"};
  const std::string vector = CompiledAndVerified(sddmm, transposed);
  EXPECT_TRUE(Has(vector, " += st_cmul(*(const st_vec*)&"));
  EXPECT_TRUE(Has(vector, "(st_csum("));
  EXPECT_TRUE(Lacks(atomic, "#pragma omp atomic\n      T0"));
}

TEST_F(GeneratedKernels, SpmmRegisterTileHoldsTheOutputSliceInVectors) {
  const Schedule tiled = Parse({{"splits", {{"j", 16}}},
                                {"loop_order", {"i", "j1", "k", "j0"}},
                                {"format", {"i:U", "k:C"}},
                                {"parallel", {{"index", "i"}, {"chunk", 4}}}});
  // 40 columns: two whole slices in registers and a partial one by the plain loop.
  KernelRunner& f32 = Runner("spmm", matrix_, {{"j", 40}});
  const std::string source = CompiledAndVerified(f32, tiled);
  // Vectors as wide as the compiling machine's registers: a wider type would be split and
  // spilled to memory.
  EXPECT_TRUE(Has(source, "#elif defined(__AVX__)\n#define ST_VEC_BYTES 32"));
  EXPECT_TRUE(Has(source, "vector_size(ST_VEC_BYTES)"));
  EXPECT_TRUE(Has(source, "st_vec tile0[(64 / ST_VEC_BYTES)] = {};"));  // 16 floats
  // The tile holds the slice's whole sum: stored once (around the caches when the output is
  // larger than them); only the columns past the last whole slice are cleared.
  EXPECT_TRUE(Has(source, "st_store((st_vec*)&T0[(i0) * d1 + i1], tile0[g], st_stream_output);"));
  EXPECT_TRUE(Has(source, "memset((void*)(T0 + (i0) * d1 + (d1 / s1 * s1)), 0"));
  EXPECT_TRUE(Has(source, "constexpr int64_t s1 = 16;"));
  EXPECT_TRUE(Has(source, "if (i1o * s1 + s1 <= d1)"));
  // 16 doubles: 128 bytes.
  KernelRunner& f64 = Runner("spmm", matrix_, {{"j", 40}}, DType::kF64);
  EXPECT_TRUE(Has(CompiledAndVerified(f64, tiled), "st_vec tile0[(128 / ST_VEC_BYTES)] = {};"));
  // A slice of 8 floats is narrower than 64 bytes: one 32-byte vector.
  Schedule narrow = tiled;
  narrow.splits["j"] = 8;
  EXPECT_TRUE(Has(CompiledAndVerified(f32, narrow), "st_vec32 tile0[1] = {};"));
}

// SDDMM's dot products keep several vector partial sums and apply A's value once; unroll N
// takes N nonzeros of a row at a time, sharing each load of B's row; C(k,j) is read through a
// copy transposed in register blocks.
TEST_F(GeneratedKernels, SddmmDotProductsUseVectorPartialSumsAndJamNonzeros) {
  // k = 45: whole groups of vectors, single vectors and a scalar tail.
  const CooTensor square = testing::RandomSparse({53, 53}, 600, 5);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dtype));
    KernelRunner& nt = Runner("sddmm_nt", square, {{"k", 45}}, dtype);
    Schedule s = Parse({{"loop_order", {"i", "j", "k"}},
                        {"format", {"i:U", "j:C"}},
                        {"parallel", {{"index", "i"}, {"partition", "balanced"}}},
                        {"narrow_coordinates", true}});
    std::string source = CompiledAndVerified(nt, s);
    EXPECT_TRUE(Has(source, "st_vec vs0_0_0 = {}, vs0_0_1 = {}, vs0_0_2 = {}, vs0_0_3 = {};"));
    EXPECT_TRUE(Has(source, "acc0 += A_vals[p1] * (st_sum("));
    EXPECT_TRUE(Lacks(source, "reduction(+:acc0)"));
    for (int unroll : {2, 3, 4, 8}) {
      s.unroll = unroll;
      source = CompiledAndVerified(nt, s);
      const std::string last = "_u" + std::to_string(unroll - 1);
      EXPECT_TRUE(Has(source, "pj1 += " + std::to_string(unroll))) << unroll;
      EXPECT_TRUE(Has(source, "(int64_t)L1_crd[p1" + last + "]")) << unroll;
      EXPECT_TRUE(Has(source, "T0[p1" + last + "] = acc0" + last + ";")) << unroll;
      EXPECT_TRUE(Lacks(source, "_u" + std::to_string(unroll))) << unroll;
    }
    // C(k,j) row-major: transposed once per call, then the same dot products.
    KernelRunner& kj = Runner("sddmm", square, {{"k", 45}}, dtype);
    s.transposed = {"C"};
    s.unroll = 4;
    source = CompiledAndVerified(kj, s);
    EXPECT_TRUE(Has(source, "st_transpose((const value_t*)args->inputs[3], d2, d1, d1, T3_copy"));
    EXPECT_TRUE(Has(source, "_mm256_unpacklo_ps"));
    EXPECT_TRUE(Has(source, "pj1 += 4"));
    // Column segments outermost: the copy holds one segment's columns of C, transposed at
    // the start of each segment and addressed from its first column.
    Schedule segments = s;
    segments.splits = {{"j", 16}};
    segments.root.loops = {"j1", "i", "j0", "k"};
    segments.format = {
        {"j1", LevelKind::kDense}, {"i", LevelKind::kCompressed}, {"j0", LevelKind::kCompressed}};
    source = CompiledAndVerified(kj, segments);
    EXPECT_TRUE(Has(source, "sizeof(value_t) * s1 * d2);  // C, transposed a slice at a time"));
    EXPECT_TRUE(Has(source,
                    "st_transpose((const value_t*)args->inputs[3] + i1o * s1, d2, "
                    "st_min(s1, d1 - i1o * s1), d1, T3_copy, nthreads);"));
    EXPECT_TRUE(Has(source, "T3[(i1_u0 - i1o * s1) * d2 + i2]"));
    // Segments in parallel: each thread transposes its own segments into its own part of the
    // copy, which no other thread reads.
    Schedule own = segments;
    own.parallel = "j1";
    own.partition = Partition::kDynamic;
    own.threads = 3;
    source = CompiledAndVerified(kj, own);
    EXPECT_TRUE(Has(source, "// C, transposed a slice at a time by each thread"));
    EXPECT_TRUE(Has(source, "T3_mine = T3_copy + (int64_t)omp_get_thread_num() *"));
    EXPECT_TRUE(Has(source, "d1, T3_mine, 1);"));
    // Without the copy C is strided along k: OpenMP's simd reduction, no jam.
    s.transposed.clear();
    source = CompiledAndVerified(kj, s);
    EXPECT_TRUE(Has(source, "reduction(+:acc0)"));
    EXPECT_TRUE(Lacks(source, "pj1"));
  }
}

// Prefetch N: a compressed loop that gathers dense rows through its coordinate prefetches the
// rows of the nonzero N positions ahead (SpMV's x element, SpMM's slice of B's row, SDDMM's
// row of C), across segments when the coordinates are absolute (the next rows' first nonzeros),
// inside its segment when they are relative to it.
TEST_F(GeneratedKernels, PrefetchReadsTheCoordinateAheadAndTouchesTheRowsItGathers) {
  Schedule spmv = FixedCsrSchedule(KernelExpression("spmv"));
  spmv.prefetch = 16;
  std::string source = CompiledAndVerified(Runner("spmv", matrix_), spmv);
  EXPECT_TRUE(Has(source, "if (p1 + 16 < args->levels[1].positions) {"));
  EXPECT_TRUE(Has(source, "const int64_t i1 = (int64_t)L1_crd[p1 + 16];"));
  EXPECT_TRUE(Has(source, "__builtin_prefetch((const char*)&T2[i1] + b);"));
  const Schedule tiled = Parse({{"splits", {{"j", 16}}},
                                {"loop_order", {"i", "j1", "k", "j0"}},
                                {"format", {"i:U", "k:C"}},
                                {"parallel", {{"index", "i"}, {"chunk", 4}}},
                                {"prefetch", 3}});
  source = CompiledAndVerified(Runner("spmm", matrix_, {{"j", 40}}), tiled);
  EXPECT_TRUE(Has(source, "const int64_t i1 = i1o * s1;"));  // the slice the tile covers
  EXPECT_TRUE(Has(source, "st_min(s1 * (int64_t)sizeof(value_t), 2048)"));
  EXPECT_TRUE(Has(source, "__builtin_prefetch((const char*)&T2[(i2) * d1 + i1] + b);"));
  const CooTensor square = testing::RandomSparse({53, 53}, 600, 5);
  const Schedule jammed = Parse({{"loop_order", {"i", "j", "k"}},
                                 {"format", {"i:U", "j:C"}},
                                 {"parallel", {{"index", "i"}, {"partition", "balanced"}}},
                                 {"unroll", 4},
                                 {"prefetch", 2}});
  source = CompiledAndVerified(Runner("sddmm_nt", square, {{"k", 45}}), jammed);
  // One per jammed copy: positions pj1 + 2 .. pj1 + 5, whole rows of C (d2 values).
  EXPECT_TRUE(Has(source, "L1_crd[pj1 + 5]"));
  EXPECT_TRUE(Has(source, "st_min(d2 * (int64_t)sizeof(value_t), 2048)"));
  EXPECT_TRUE(Has(source, "__builtin_prefetch((const char*)&T3[(i1) * d2 + i2] + b);"));
  // Relative coordinates need their segment's base: the prefetch stays in the segment.
  Schedule relative = FixedCsrSchedule(KernelExpression("spmv"));
  relative.narrow_coordinates = true;
  relative.prefetch = 4;
  source = CompiledAndVerified(Runner("spmv", Band(40, 300000, 200, 14)), relative);
  EXPECT_TRUE(Has(source, "if (p1 + 4 < hi_i1) {"));
  // B(i,k) does not depend on j: never prefetched.
  EXPECT_TRUE(Lacks(source, "&T2[(i0) * d2 + i2] + b"));
  // Coordinate lists in blocks, four entries at a time: each prefetch addresses x whole, as its
  // scope defines the coordinate (the batch's block-relative names are not in it).
  const Schedule blocks = Parse({{"splits", {{"i", 64}, {"k", 64}}},
                                 {"loop_order", {"i1", "k1", "k0", "i0"}},
                                 {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                                 {"parallel", {{"index", "i1"}, {"partition", "balanced"}}},
                                 {"unroll", 4},
                                 {"narrow_coordinates", true},
                                 {"prefetch", 8}});
  source = CompiledAndVerified(Runner("spmv", Band(300, 300, 40, 15)), blocks);
  EXPECT_TRUE(Has(source, "const int64_t i1 = i1o * s1 + (int64_t)L2_crd[pb2 + 3 + 8];"));
  EXPECT_TRUE(Has(source, "__builtin_prefetch((const char*)&T2[i1] + b);"));
  EXPECT_TRUE(Lacks(source, "&T2_block[i1n] + b"));
  // Out of range.
  EXPECT_THROW(Parse({{"prefetch", -1}}), InputError);
  EXPECT_THROW(Parse({{"prefetch", kMaxPrefetchDistance + 1}}), InputError);
}

// A reordered operand: rows (and columns, when square) renumbered before packing; the kernel
// gathers its dense inputs into the renumbered order and writes its dense output in the
// caller's numbering: a matrix's rows through the renumbering where it stores each row once (a
// row's sum in registers), else (a vector, or rows added into per nonzero) in the renumbered
// order and then gathered into the caller's by a pass through the inverse. Sparse outputs stay
// by position.
TEST_F(GeneratedKernels, OrderingsPermuteOperandsOnEntryAndWriteTheOutputInTheCallersOrder) {
  const CooTensor square = testing::RandomSparse({90, 90}, 900, 13);
  Schedule spmv = FixedCsrSchedule(KernelExpression("spmv"));
  Schedule spmm = Parse({{"splits", {{"j", 16}}},
                         {"loop_order", {"i", "j1", "k", "j0"}},
                         {"format", {"i:U", "k:C"}},
                         {"parallel", {{"index", "i"}, {"chunk", 4}}}});
  Schedule sddmm = Parse({{"loop_order", {"i", "j", "k"}},
                          {"format", {"i:U", "j:C"}},
                          {"parallel", {{"index", "i"}, {"partition", "balanced"}}},
                          {"unroll", 4},
                          {"transpose", {"C"}}});
  Schedule spmv_by_columns = Parse({{"loop_order", {"k", "i"}}, {"format", {"k:U", "i:C"}}});
  // One range of rows per thread: each thread puts the rows it computed back into the caller's
  // order before the region ends, a vector's elements and a matrix's rows alike.
  Schedule sell = Parse({{"splits", {{"i", 8}}},
                         {"loop_order", {"i1", "k", "i0"}},
                         {"format", {"i1:U", "k:S", "i0:U"}},
                         {"parallel", {{"index", "i1"}, {"partition", "balanced"}}}});
  Schedule spmm_by_nonzeros = Parse({{"loop_order", {"i", "k", "j"}},
                                     {"format", {"i:U", "k:C"}},
                                     {"parallel", {{"index", "i"}, {"partition", "balanced"}}}});
  for (OrderingKind kind : AllOrderings()) {
    SCOPED_TRACE(OrderingName(kind));
    spmv.ordering = spmm.ordering = sddmm.ordering = spmv_by_columns.ordering = kind;
    sell.ordering = spmm_by_nonzeros.ordering = kind;
    for (const CooTensor& rows : {square, testing::RandomSparse({93, 93}, 900, 16)}) {
      std::string source = CompiledAndVerified(Runner("spmv", rows), sell);
      EXPECT_TRUE(Has(source, "const int64_t row_end = st_min(last * s0, d0);"));
      EXPECT_TRUE(Has(source, "for (int64_t r = first * s0; r < row_end; ++r)"));
      EXPECT_TRUE(Has(source, "T0_given[P0[r]] = T0[r];"));
      EXPECT_TRUE(Lacks(source, "st_reorder(T0, T0_given"));
    }
    std::string by_rows =
        CompiledAndVerified(Runner("spmm", square, {{"j", 24}}), spmm_by_nonzeros);
    EXPECT_TRUE(Has(by_rows, "memcpy(T0_given + (int64_t)P0[r] * 1 * d1, T0 + r * 1 * d1,"));
    EXPECT_TRUE(Lacks(by_rows, "st_reorder(T0, T0_given"));
    std::string source = CompiledAndVerified(Runner("spmv", square), spmv);
    EXPECT_TRUE(
        Has(source, "const int32_t* P1 = args->tuned_order ? nullptr : args->old_of_new[1];"));
    EXPECT_TRUE(Has(source, "st_reorder(T2, T2_reordered, d1, 1, P1, nullptr, nthreads);"));
    EXPECT_TRUE(
        Has(source, "const int32_t* Q0 = args->tuned_order ? nullptr : args->new_of_old[0];"));
    EXPECT_TRUE(Has(source, "st_reorder(T0, T0_given, d0, 1, Q0, nullptr, nthreads);"));
    EXPECT_TRUE(Lacks(source, "T0[(P0 ? P0["));
    source = CompiledAndVerified(Runner("spmv", square), spmv_by_columns);
    EXPECT_TRUE(Has(source, "st_reorder(T0, T0_given, d0, 1, Q0, nullptr, nthreads);"));
    EXPECT_TRUE(Lacks(source, "T0[(P0 ? P0["));
    source = CompiledAndVerified(Runner("spmm", square, {{"j", 40}}), spmm);
    EXPECT_TRUE(Has(source, "T0[((P0 ? P0["));
    EXPECT_TRUE(Has(source, "st_reorder(T2, T2_reordered, d2, 1 * d1, P2, nullptr"));
    source = CompiledAndVerified(Runner("sddmm", square, {{"k", 24}}), sddmm);
    // C(k,j) transposed, then its rows (j) renumbered; D is sparse: no scatter.
    EXPECT_TRUE(Has(source, "st_reorder(T3, T3_reordered, d1, 1 * d2, P1, nullptr"));
    EXPECT_TRUE(Lacks(source, "T0_given"));
    CompiledAndVerified(Runner("sddmm_nt", square, {{"k", 24}}), sddmm);
  }
  // Rectangular: rows only, by degree; the symmetric orderings are refused with the reason.
  const CooTensor wide = testing::RandomSparse({70, 110}, 700, 14);
  spmv.ordering = OrderingKind::kDegree;
  CompiledAndVerified(Runner("spmv", wide), spmv);
  spmv.ordering = OrderingKind::kRcm;
  RunOptions options;
  const RunResult refused = Runner("spmv", wide).Run(spmv, options);
  EXPECT_EQ(refused.status, RunStatus::kFormatRefused);
  EXPECT_NE(refused.message.find("square"), std::string::npos) << refused.message;
  // A tensor of order 3 has no ordering.
  Schedule mttkrp = FixedCsrSchedule(KernelExpression("mttkrp"));
  mttkrp.ordering = OrderingKind::kDegree;
  EXPECT_FALSE(Lower(KernelExpression("mttkrp"), mttkrp).nest);
}

// Codegen refuses what the kernel ABI cannot carry rather than writing past its arrays.
TEST(Codegen, RefusesMoreIndicesThanTheAbiCarries) {
  std::string lhs = "y(", rhs;
  for (int k = 0; k < 17; ++k) {
    const std::string index = "i" + std::string(1, char('a' + k));
    lhs += (k ? "," : "") + index;
  }
  lhs += ")";
  // One sparse matrix and dense vectors over the rest: 17 indices.
  rhs = "A(ia,ib)";
  for (int k = 2; k < 17; ++k) rhs += " * v" + std::to_string(k) + "(i" + char('a' + k) + ")";
  const Expression e = BuildExpression(lhs + " = " + rhs, "wide");
  const LowerOutcome lowered = Lower(e, FixedCsrSchedule(e));
  ASSERT_NE(lowered.nest, nullptr) << lowered.error;
  EXPECT_THROW(GenerateKernelSource(*lowered.nest, DType::kF32, CodegenMode::kRuntimeParameters),
               InputError);
}

// Coordinate lists in blocks by column, four entries at a time, with merge_runs: a batch whose
// four entries update one element of y (a run of a hub's row) adds them first and stores once;
// without it, or without 16-bit words, no such test.
TEST_F(GeneratedKernels, CoordinateListBatchesOfOneOutputElementStoreOnce) {
  // A random matrix with a full row and a full column, in blocks of 1024 rows and columns (so
  // that coordinates take 16 bits): most columns hold only the full row, whose entries then
  // come in runs.
  CooTensor hub = testing::RandomSparse({1500, 1300}, 500, 21);
  for (int32_t k = 0; k < 1300; ++k) {
    const int32_t row[2] = {17, k};
    hub.Append(row, 0.25 + k % 5);
  }
  for (int32_t i = 0; i < 1500; ++i) {
    const int32_t column[2] = {i, 9};
    hub.Append(column, 1.5 - i % 3);
  }
  hub.Canonicalize();
  auto blocks = [&](int unroll, bool merge_runs) {
    return Parse({{"splits", {{"i", 1024}, {"k", 1024}}},
                  {"loop_order", {"i1", "k1", "k0", "i0"}},
                  {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                  {"parallel", {{"index", "i1"}, {"partition", "balanced"}}},
                  {"unroll", unroll},
                  {"narrow_coordinates", true},
                  {"merge_runs", merge_runs}});
  };
  for (DType dtype : {DType::kF32, DType::kF64}) {
    KernelRunner& runner = Runner("spmv", hub, {}, dtype);
    const std::string source = CompiledAndVerified(runner, blocks(4, true));
    EXPECT_TRUE(Has(source, "if ((w3 & 0xffff) * 0x0001000100010001ull == w3) {"));
    EXPECT_TRUE(Has(source, "T0_block[i0n] += (term0 + term1) + (term2 + term3);"));
    // Not asked for, or batches of two: four stores as before.
    EXPECT_TRUE(Lacks(CompiledAndVerified(runner, blocks(4, false)), "all four update"));
    EXPECT_TRUE(Lacks(CompiledAndVerified(runner, blocks(2, true)), "all four update"));
  }
  // Stored and read back; canonical only where it applies.
  EXPECT_EQ(blocks(4, true).ToJson()["merge_runs"], true);
  EXPECT_EQ(blocks(4, true).Summary().find("merged runs") != std::string::npos, true);
  Schedule two = blocks(2, true);
  two.Canonicalize();
  EXPECT_FALSE(two.merge_runs);
  EXPECT_THROW(Parse({{"merge_runs", 1}}), InputError);
}

// An operand whose values are all equal (a pattern matrix's 1) is packed with one value, which
// each kernel reads once: SpMV's rows and coordinate lists, SpMM's register tile, SDDMM's dot
// products and MTTKRP's fibers, real and complex, compute what the reference computes. A format
// with padding zeros cannot take it, and an operand whose values differ is refused.
TEST_F(GeneratedKernels, UniformValuesAreOneValueReadOnce) {
  CooTensor uniform = matrix_;
  for (double& v : uniform.values) v = -0.75;
  auto with_one_value = [](json j) {
    j["uniform_values"] = true;
    return Parse(j);
  };
  const json rows = {{"loop_order", {"i", "k"}},
                     {"format", {"i:U", "k:C"}},
                     {"parallel", {{"index", "i"}, {"partition", "balanced"}}},
                     {"unroll", 4},
                     {"narrow_coordinates", true}};
  const json lists = {{"splits", {{"i", 32}, {"k", 16}}},
                      {"loop_order", {"i1", "k1", "k0", "i0"}},
                      {"format", {"i1:U", "k1:C", "k0:C", "i0:Q"}},
                      {"parallel", {{"index", "i1"}, {"partition", "balanced"}}},
                      {"unroll", 4},
                      {"narrow_coordinates", true}};
  for (DType dtype : {DType::kF32, DType::kF64, DType::kC64}) {
    KernelRunner& spmv = Runner("spmv", uniform, {}, dtype);
    for (const json& j : {rows, lists}) {
      const std::string source = CompiledAndVerified(spmv, with_one_value(j));
      EXPECT_TRUE(Has(source, "const value_t A_value = A_vals[0];"));
      EXPECT_TRUE(Lacks(source, "A_vals[p"));
    }
  }
  const Schedule tile = with_one_value({{"splits", {{"j", 16}}},
                                        {"loop_order", {"i", "j1", "k", "j0"}},
                                        {"format", {"i:U", "k:C"}},
                                        {"parallel", {{"index", "i"}, {"chunk", 4}}}});
  KernelRunner& spmm = Runner("spmm", uniform, {{"j", 40}});
  EXPECT_TRUE(Lacks(CompiledAndVerified(spmm, tile), "A_vals[p"));
  // SpMM's 2-D tiles and column segments, whose tiles gather.
  const Schedule tiles2d =
      with_one_value({{"splits", {{"i", 8}, {"k", 16}, {"j", 16}}},
                      {"loop_order", {"i1", "k1", "i0", "j1", "k0", "j0"}},
                      {"format", {"i1:U", "k1:C", "i0:C", "k0:C"}},
                      {"parallel", {{"index", "i1"}, {"partition", "balanced"}}},
                      {"narrow_coordinates", true}});
  EXPECT_TRUE(Lacks(CompiledAndVerified(spmm, tiles2d), "A_vals[p"));
  const Schedule segments =
      with_one_value({{"splits", {{"k", 16}, {"j", 16}}},
                      {"loop_order", {"k1", "i", "j1", "k0", "j0"}},
                      {"format", {"k1:U", "i:C", "k0:C"}},
                      {"parallel", {{"index", "i"}, {"partition", "balanced"}}},
                      {"narrow_coordinates", true}});
  EXPECT_TRUE(Lacks(CompiledAndVerified(spmm, segments), "A_vals[p"));
  const Schedule dot = with_one_value({{"loop_order", {"i", "j", "k"}},
                                       {"format", {"i:U", "j:C"}},
                                       {"parallel", {{"index", "i"}, {"chunk", 4}}},
                                       {"transpose", {"C"}},
                                       {"unroll", 4}});
  CooTensor square = testing::RandomSparse({45, 45}, 400, 9);
  for (double& v : square.values) v = 1;
  EXPECT_TRUE(Lacks(CompiledAndVerified(Runner("sddmm", square, {{"k", 24}}), dot), "A_vals[p"));
  CooTensor fibers = testing::RandomSparse({20, 17, 23}, 600, 6);
  for (double& v : fibers.values) v = 2;
  KernelRunner& mttkrp = Runner("mttkrp", fibers, {{"j", 8}});
  Schedule csf = FixedCsrSchedule(mttkrp.expression());
  csf.uniform_values = true;
  EXPECT_TRUE(Lacks(CompiledAndVerified(mttkrp, csf), "A_vals[p"));

  // The same levels packed with one value and with a value per nonzero are two packings: each
  // kernel reads its own, whichever was packed first.
  KernelRunner& both = Runner("spmv", uniform);
  for (const json& j : {lists, rows}) {
    CompiledAndVerified(both, with_one_value(j));
    CompiledAndVerified(both, Parse(j));
  }

  // Stored and read back.
  const Schedule one = with_one_value(rows);
  EXPECT_EQ(one.ToJson()["uniform_values"], true);
  EXPECT_EQ(Parse(one.ToJson()).CanonicalJson(), one.CanonicalJson());
  EXPECT_NE(one.Summary().find("one value"), std::string::npos);
  EXPECT_FALSE(Parse(rows).ToJson().contains("uniform_values"));
  EXPECT_THROW(
      Parse({{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:C"}}, {"uniform_values", "yes"}}),
      InputError);
  // Padding zeros would read the one value: SELL, groups and block rows do not lower with it.
  const Expression spmv = KernelExpression("spmv");
  for (const json& padded : {json{{"splits", {{"i", 8}}},
                                  {"loop_order", {"i1", "k", "i0"}},
                                  {"format", {"i1:U", "k:S", "i0:U"}}},
                             json{{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:G4"}}},
                             json{{"splits", {{"i", 4}}},
                                  {"loop_order", {"i1", "k", "i0"}},
                                  {"format", {"i1:U", "k:C", "i0:U"}}},
                             json{{"loop_order", {"i", "k"}}, {"format", {"i:U", "k:U"}}}}) {
    EXPECT_TRUE(Parse(padded).StoresPadding()) << padded;
    const LowerOutcome lowered = Lower(spmv, with_one_value(padded));
    EXPECT_EQ(lowered.nest, nullptr) << padded;
    EXPECT_NE(lowered.error.find("padding"), std::string::npos) << lowered.error;
  }
  EXPECT_FALSE(Parse(rows).StoresPadding());
  EXPECT_FALSE(Parse(lists).StoresPadding());
  // Values that differ are refused at packing, naming the first that differs.
  RunOptions options;
  options.time = false;
  const RunResult refused = Runner("spmv", matrix_).Run(one, options);
  EXPECT_EQ(refused.status, RunStatus::kFormatRefused);
  EXPECT_NE(refused.message.find("differs from entry 0"), std::string::npos) << refused.message;
}

}  // namespace
}  // namespace sparsetune
