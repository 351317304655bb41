// Random valid schedules of the four WACO kernels, on random and real small tensors, in real
// and complex values, must all verify against the reference implementation.
#include <gtest/gtest.h>

#include <random>

#include "io/read.hpp"
#include "ir/kernels.hpp"
#include "measure/runner.hpp"
#include "superschedule/random_schedule.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

struct Workload {
  Workload(std::string label_, CooTensor tensor_)
      : label(std::move(label_)), tensor(std::move(tensor_)), complex_tensor(tensor) {
    complex_tensor.imag.resize(tensor.nnz());
    for (int64_t e = 0; e < tensor.nnz(); ++e)
      complex_tensor.imag[e] = 0.125 * double(e % 7) - 0.25 * tensor.values[e];
  }
  std::string label;
  CooTensor tensor;
  CooTensor complex_tensor;  // the same entries with imaginary parts
};

// A short, very wide band: each row's columns lie within `span` of its diagonal, so narrow
// coordinates are stored relative to each row's first column (CoordinateEncoding).
CooTensor WideBand(int64_t rows, int64_t cols, int64_t span, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CooTensor t;
  t.Reset({rows, cols});
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t diagonal = i * (cols - span) / rows;
    for (int e = 0; e < 6; ++e) {
      int32_t c[2] = {int32_t(i), int32_t(diagonal + int64_t(rng() % uint64_t(span)))};
      t.Append(c, double(int64_t(rng() % 17) - 8) / 8.0 + 0.0625);
    }
  }
  t.Canonicalize();
  return t;
}

std::vector<Workload> Workloads(int order, uint64_t seed) {
  std::vector<Workload> out;
  std::mt19937_64 rng(seed);
  if (order == 2) {
    out.push_back({"wide band, 8-bit offsets", WideBand(40, 300000, 200, seed)});
    out.push_back({"wide band, 16-bit offsets", WideBand(40, 300000, 3000, seed + 1)});
  }
  for (int k = 0; k < 3; ++k) {
    std::vector<int64_t> dims;
    for (int m = 0; m < order; ++m) dims.push_back(1 + int64_t(rng() % 37));
    out.push_back({"random", testing::RandomSparse(dims, 20 + int64_t(rng() % 200), rng())});
  }
  const std::vector<std::string> real =
      order == 2 ? std::vector<std::string>{"datasets/matrices/bcsstk01.mtx",
                                            "datasets/matrices/lp_adlittle.mtx",
                                            "datasets/matrices/west0067.mtx"}
                 : std::vector<std::string>{"datasets/tensors/parti_3D_12031.tns"};
  for (const auto& relative : real) {
    const std::string path = testing::SharedPath(relative);
    if (!path.empty()) out.push_back({relative, ReadTensorFile(path)});
  }
  return out;
}

void CheckRandomSchedules(const std::string& kernel, int schedules, uint64_t seed) {
  const Expression e = KernelExpression(kernel);
  const int order = static_cast<int>(e.sparse_input().indices.size());
  std::vector<Workload> workloads = Workloads(order, seed);
  std::mt19937_64 rng(seed * 7919 + 1);
  Jit jit;
  int ok = 0, refused = 0;
  for (int n = 0; n < schedules; ++n) {
    const Workload& w = workloads[n % workloads.size()];
    std::map<std::string, int64_t> dense;
    for (const auto& index : e.DenseOnlyIndices()) dense[index] = 1 + int64_t(rng() % 19);
    IndexSizes sizes = ResolveIndexSizes(e, w.tensor.dims, dense);
    // A fifth each in f64 and in complex values (c64 and c128 alternating), whose tensors get
    // imaginary parts.
    const DType dtype = n % 5 == 4   ? DType::kF64
                        : n % 5 == 2 ? (n % 10 == 2 ? DType::kC64 : DType::kC128)
                                     : DType::kF32;
    const CooTensor& tensor = IsComplex(dtype) ? w.complex_tensor : w.tensor;
    KernelRunner runner(e, tensor, sizes, dtype, jit);
    Schedule s = SampleGenericSchedule(e, sizes, rng);
    RunOptions options;
    options.time = false;
    RunResult r = runner.Run(s, options);
    if (r.status == RunStatus::kFormatRefused) {
      ++refused;
      continue;
    }
    ASSERT_TRUE(r.ok()) << kernel << " on " << w.label << ": " << RunStatusName(r.status) << ": "
                        << r.message << "\nschedule " << r.schedule_json << "\n"
                        << r.nest << "source " << r.source_path;
    ASSERT_TRUE(r.verified);
    ++ok;
  }
  // Refusals are rare (padding cap); nearly every sample must have run.
  EXPECT_GE(ok, schedules * 8 / 10) << refused << " refused";
}

// Every coordinate width, absolute and relative, computes the same result as the reference,
// under every partition and partial-sum count.
TEST(NarrowCoordinates, EveryEncodingVerifies) {
  const Expression e = KernelExpression("spmv");
  Jit jit;
  const std::vector<std::pair<CooTensor, CoordinateEncoding>> cases = {
      {WideBand(300, 300000, 200, 4), {8, true}},
      {WideBand(300, 300000, 3000, 5), {16, true}},
      {WideBand(300, 40000, 30000, 6), {16, false}},
      {WideBand(300, 200, 150, 7), {8, false}},
  };
  for (const auto& [tensor, encoding] : cases) {
    PackOutcome packed = Pack(tensor, StorageFormat::Csr(), DType::kF32);
    ASSERT_TRUE(packed.packed);
    EXPECT_EQ(packed.packed->levels[1].encoding, encoding) << encoding.Describe();
    KernelRunner runner(e, tensor, ResolveIndexSizes(e, tensor.dims, {}), DType::kF32, jit);
    for (Partition partition : {Partition::kDynamic, Partition::kBalanced}) {
      for (int unroll : {1, 3, 8}) {
        Schedule s = FixedCsrSchedule(e);
        s.narrow_coordinates = true;
        s.partition = partition;
        s.unroll = unroll;
        RunOptions options;
        options.time = false;
        RunResult r = runner.Run(s, options);
        ASSERT_TRUE(r.ok() && r.verified) << encoding.Describe() << ": " << r.message;
      }
    }
  }
}

// Reductions between j1 and j0 keep the j0 slice in registers: whole slices and a partial last
// one (the split does not divide |j|), real and complex, single and double precision, SpMM and
// MTTKRP.
TEST(RegisterTiles, VerifyForEverySliceWidth) {
  Jit jit;
  struct Case {
    std::string kernel;
    std::vector<std::string> order;
    std::vector<std::string> format;
  };
  const std::vector<Case> cases = {
      {"spmm", {"i", "j1", "k", "j0"}, {"i:U", "k:C"}},
      {"mttkrp", {"i", "j1", "k", "l", "j0"}, {"i:C", "k:C", "l:C"}},
  };
  for (const auto& c : cases) {
    const Expression e = KernelExpression(c.kernel);
    const CooTensor tensor = testing::SmallWorkload(static_cast<int>(c.format.size()));
    // Complex tiles multiply vectors of interleaved parts: MTTKRP's two varying factors
    // through st_cmul, SpMM's one scaled by the nonzero through st_cscale.
    const CooTensor complex_tensor = Workload("", tensor).complex_tensor;
    for (int64_t j : {16, 20, 64}) {
      for (int64_t split : {4, 8, 16}) {
        for (DType dtype : {DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
          KernelRunner runner(e, IsComplex(dtype) ? complex_tensor : tensor,
                              ResolveIndexSizes(e, tensor.dims, {{"j", j}}), dtype, jit);
          nlohmann::json json = {{"splits", {{"j", split}}},
                                 {"loop_order", c.order},
                                 {"format", c.format},
                                 {"parallel", {{"index", c.order[0]}, {"chunk", 4}}}};
          RunOptions options;
          options.time = false;
          RunResult r = runner.Run(Schedule::FromJson(json, "tile"), options);
          ASSERT_TRUE(r.ok() && r.verified)
              << c.kernel << " j=" << j << " split " << split << ": " << r.message;
          EXPECT_NE(r.nest.find("j0 slice in registers"), std::string::npos) << r.nest;
        }
      }
    }
  }
}

TEST(RandomSchedules, Spmv) {
  CheckRandomSchedules("spmv", 300, 1);
}
TEST(RandomSchedules, Spmm) {
  CheckRandomSchedules("spmm", 300, 2);
}
TEST(RandomSchedules, Sddmm) {
  CheckRandomSchedules("sddmm", 300, 3);
}
TEST(RandomSchedules, Mttkrp) {
  CheckRandomSchedules("mttkrp", 300, 4);
}

}  // namespace
}  // namespace sparsetune
