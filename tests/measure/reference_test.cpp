// The reference implementation against results worked out by hand on tiny tensors, and against
// a plain loop on a larger one (its threads keep private copies of the output).
#include <gtest/gtest.h>

#include <cmath>

#include "base/errors.hpp"
#include "ir/kernels.hpp"
#include "measure/reference.hpp"
#include "support/test_data.hpp"

namespace sparsetune {
namespace {

CooTensor Entries(std::vector<int64_t> dims, const std::vector<std::vector<int32_t>>& coords,
                  const std::vector<double>& values) {
  CooTensor t;
  t.Reset(std::move(dims));
  for (size_t e = 0; e < values.size(); ++e) t.Append(coords[e].data(), values[e]);
  t.Canonicalize();
  return t;
}

// Dense inputs by tensor id, row-major, from the given values; unlisted tensors stay empty.
std::vector<ValueBuffer> Inputs(const Expression& e, const IndexSizes& sizes,
                                const std::map<std::string, std::vector<double>>& values,
                                DType dtype = DType::kF64) {
  std::vector<ValueBuffer> inputs(e.tensors.size());
  for (const auto& [name, data] : values) {
    const int id = e.TensorId(name);
    EXPECT_GT(id, 0) << name;
    inputs[id] = ValueBuffer(dtype, TensorElements(e.tensors[id], sizes));
    EXPECT_EQ(inputs[id].size(), static_cast<int64_t>(data.size())) << name;
    for (size_t k = 0; k < data.size(); ++k) inputs[id].Set(static_cast<int64_t>(k), data[k]);
  }
  return inputs;
}

TEST(Reference, Spmv) {
  const Expression e = KernelExpression("spmv");
  // A = [1 0 2; 0 -3 0], x = [1 2 3].
  const CooTensor a = Entries({2, 3}, {{0, 0}, {0, 2}, {1, 1}}, {1, 2, -3});
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {});
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const ReferenceResult r =
        ComputeReference(e, a, sizes, Inputs(e, sizes, {{"x", {1, 2, 3}}}, dtype));
    EXPECT_FALSE(r.sparse);
    EXPECT_EQ(r.values, (std::vector<double>{7, -6}));
    // The sum of the terms' magnitudes scales each element's tolerance.
    EXPECT_EQ(r.magnitudes, (std::vector<double>{7, 6}));
  }
}

// Complex values: A = [1+i 2; 0 -3i], x = [1, 2i]: y = [1+5i, 6], and each element's
// tolerance scale is the sum of |term|: |1+i| + |4i|, |-3i * 2i|.
TEST(Reference, ComplexSpmv) {
  const Expression e = KernelExpression("spmv");
  CooTensor a;
  a.Reset({2, 2});
  const int32_t c00[2] = {0, 0}, c01[2] = {0, 1}, c11[2] = {1, 1};
  a.AppendComplex(c00, 1, 1);
  a.AppendComplex(c01, 2, 0);
  a.AppendComplex(c11, 0, -3);
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {});
  for (DType dtype : {DType::kC64, DType::kC128}) {
    std::vector<ValueBuffer> inputs(e.tensors.size());
    const int x = e.TensorId("x");
    inputs[x] = ValueBuffer(dtype, 2);
    inputs[x].SetComplex(0, {1, 0});
    inputs[x].SetComplex(1, {0, 2});
    const ReferenceResult r = ComputeReference(e, a, sizes, inputs);
    EXPECT_EQ(r.values, (std::vector<double>{1, 6}));
    EXPECT_EQ(r.imag, (std::vector<double>{5, 0}));
    ASSERT_EQ(r.magnitudes.size(), 2u);
    EXPECT_DOUBLE_EQ(r.magnitudes[0], std::sqrt(2.0) + 4);
    EXPECT_DOUBLE_EQ(r.magnitudes[1], 6);
    // A real kernel on the same matrix computes with the real parts only.
    const ReferenceResult real =
        ComputeReference(e, a, sizes, Inputs(e, sizes, {{"x", {1, 2}}}, DType::kF64));
    EXPECT_EQ(real.values, (std::vector<double>{5, 0}));
    EXPECT_TRUE(real.imag.empty());
  }
}

TEST(Reference, Spmm) {
  const Expression e = KernelExpression("spmm");
  // A = [0 2; -1 3], B = [1 2; 3 4]: C = [6 8; 8 10].
  const CooTensor a = Entries({2, 2}, {{0, 1}, {1, 0}, {1, 1}}, {2, -1, 3});
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {{"j", 2}});
  const ReferenceResult r = ComputeReference(e, a, sizes, Inputs(e, sizes, {{"B", {1, 2, 3, 4}}}));
  EXPECT_EQ(r.values, (std::vector<double>{6, 8, 8, 10}));
  EXPECT_EQ(r.magnitudes, (std::vector<double>{6, 8, 10, 14}));
}

TEST(Reference, SddmmKeepsOneValuePerNonzero) {
  const Expression e = KernelExpression("sddmm");
  // D(i,j) = A(i,j) * sum_k B(i,k) C(k,j) at A's nonzeros (0,0)=2, (0,2)=1, (1,1)=-1.
  const CooTensor a = Entries({2, 3}, {{1, 1}, {0, 2}, {0, 0}}, {-1, 1, 2});
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {{"k", 2}});
  const ReferenceResult r = ComputeReference(
      e, a, sizes, Inputs(e, sizes, {{"B", {1, 2, 3, 4}}, {"C", {1, 0, 2, 1, 1, 0}}}));
  ASSERT_TRUE(r.sparse);
  EXPECT_EQ(r.trailing, 1);
  // Rows in canonical order of the nonzeros' coordinates.
  EXPECT_EQ(r.prefix_coords, (std::vector<std::vector<int32_t>>{{0, 0, 1}, {0, 2, 1}}));
  EXPECT_EQ(r.values, (std::vector<double>{6, 2, -4}));
}

TEST(Reference, Mttkrp) {
  const Expression e = KernelExpression("mttkrp");
  // D(i,j) = sum_{k,l} A(i,k,l) B(k,j) C(l,j), A(0,0,1)=1, A(1,1,0)=2, A(1,1,1)=-1.
  const CooTensor a = Entries({2, 2, 2}, {{0, 0, 1}, {1, 1, 0}, {1, 1, 1}}, {1, 2, -1});
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {{"j", 2}});
  const ReferenceResult r =
      ComputeReference(e, a, sizes, Inputs(e, sizes, {{"B", {1, 2, 3, 4}}, {"C", {5, 6, 7, 8}}}));
  // D(0,:) = B(0,:) C(1,:) = [7 16]; D(1,:) = 2 B(1,:) C(0,:) - B(1,:) C(1,:) = [9 16].
  EXPECT_EQ(r.values, (std::vector<double>{7, 16, 9, 16}));
  EXPECT_EQ(r.magnitudes, (std::vector<double>{7, 16, 51, 80}));
}

TEST(Reference, SparseOutputOverAPrefixWithDenseTrailingIndices) {
  const Expression e = KernelExpression("spttm_spttm");  // A(i,j,m) = B(i,j,k) C(k,l) D(l,m)
  const CooTensor b = Entries({2, 2, 2}, {{0, 1, 0}, {0, 1, 1}, {1, 0, 1}}, {1, 2, 3});
  const IndexSizes sizes = ResolveIndexSizes(e, b.dims, {{"l", 1}, {"m", 2}});
  const ReferenceResult r =
      ComputeReference(e, b, sizes, Inputs(e, sizes, {{"C", {1, 2}}, {"D", {1, -1}}}));
  ASSERT_TRUE(r.sparse);
  EXPECT_EQ(r.trailing, 2);  // m
  // One row per distinct (i,j): (0,1) holds two nonzeros of B.
  EXPECT_EQ(r.prefix_coords, (std::vector<std::vector<int32_t>>{{0, 1}, {1, 0}}));
  // A(0,1,:) = (1*1 + 2*2) [1 -1]; A(1,0,:) = 3*2 [1 -1].
  EXPECT_EQ(r.values, (std::vector<double>{5, -5, 6, -6}));
}

// Threads sum private copies of the output: the result equals a plain serial loop.
TEST(Reference, MatchesAPlainLoopOnALargerOperand) {
  const Expression e = KernelExpression("spmm");
  const CooTensor a = testing::RandomSparse({300, 200}, 6000, 21);
  const IndexSizes sizes = ResolveIndexSizes(e, a.dims, {{"j", 9}});
  const std::vector<ValueBuffer> inputs = MakeDenseInputs(e, sizes, DType::kF64);
  const ReferenceResult r = ComputeReference(e, a, sizes, inputs);
  const ValueBuffer& b = inputs[e.TensorId("B")];
  std::vector<double> want(300 * 9, 0.0);
  for (int64_t n = 0; n < a.nnz(); ++n) {
    for (int64_t j = 0; j < 9; ++j)
      want[a.coords[0][n] * 9 + j] += a.values[n] * b.Get(a.coords[1][n] * 9 + j);
  }
  ASSERT_EQ(r.values.size(), want.size());
  for (size_t q = 0; q < want.size(); ++q)
    EXPECT_NEAR(r.values[q], want[q], 1e-12 * (1 + std::fabs(want[q]))) << q;
}

TEST(Reference, RefusesDenseRangesTooLargeToEnumerate) {
  const Expression e = KernelExpression("ttmc");
  const CooTensor b = Entries({2, 2, 2}, {{0, 0, 0}}, {1});
  const IndexSizes sizes = ResolveIndexSizes(e, b.dims, {{"l", 1000}, {"m", 1000}, {"n", 1000}});
  EXPECT_THROW(ComputeReference(e, b, sizes, {}), InputError);
}

TEST(Operands, DeterministicNonConstantValuesExactInSinglePrecision) {
  ValueBuffer a(DType::kF32, 1000), b(DType::kF64, 1000), c(DType::kF64, 1000);
  FillDeterministic(a, "B");
  FillDeterministic(b, "B");
  FillDeterministic(c, "C");
  bool differ_by_name = false, constant = true;
  for (int64_t k = 0; k < 1000; ++k) {
    EXPECT_EQ(a.Get(k), b.Get(k)) << k;  // exact in f32
    EXPECT_NE(b.Get(k), 0.0);
    EXPECT_GE(b.Get(k), -1.0);
    EXPECT_LT(b.Get(k), 1.0);
    differ_by_name |= b.Get(k) != c.Get(k);
    constant &= b.Get(k) == b.Get(0);
  }
  EXPECT_TRUE(differ_by_name);
  EXPECT_FALSE(constant);
}

}  // namespace
}  // namespace sparsetune
