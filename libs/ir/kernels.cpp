#include "ir/kernels.hpp"

#include "base/errors.hpp"

namespace sparsetune {

const std::vector<KernelDef>& KernelLibrary() {
  static const std::vector<KernelDef> kernels = {
      {"spmv", "y(i) = A(i,k) * x(k)", "A", false, {}, "sparse matrix times vector"},
      {"spmm", "C(i,j) = A(i,k) * B(k,j)", "A", false, {{"j", 256}}, "sparse times dense matrix"},
      {"sddmm",
       "D(i,j) = A(i,j) * B(i,k) * C(k,j)",
       "A",
       true,
       {{"k", 256}},
       "sampled dense-dense matrix product"},
      {"sddmm_nt",
       "D(i,j) = A(i,j) * B(i,k) * C(j,k)",
       "A",
       true,
       {{"k", 256}},
       "SDDMM with C given transposed (row j of C holds the k values): a dot product of two "
       "rows per nonzero, as in graph attention"},
      {"mttkrp",
       "D(i,j) = A(i,k,l) * B(k,j) * C(l,j)",
       "A",
       false,
       {{"j", 16}},
       "matricized tensor times Khatri-Rao product"},
      {"ttm", "A(i,j,l) = B(i,j,k) * C(k,l)", "B", false, {{"l", 16}}, "tensor times matrix"},
      {"ttmc",
       "A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)",
       "B",
       false,
       {{"l", 16}, {"m", 16}, {"n", 16}},
       "3-D TTM chain (Tucker)"},
      {"sddmm_spmm",
       "A(i,l) = B(i,j) * C(i,k) * D(j,k) * E(j,l)",
       "B",
       false,
       {{"k", 16}, {"l", 16}},
       "SDDMM followed by SpMM"},
      {"sddmm_spmm_gemm",
       "A(i,m) = B(i,j) * C(i,k) * D(j,k) * E(j,l) * F(l,m)",
       "B",
       false,
       {{"k", 16}, {"l", 16}, {"m", 16}},
       "SDDMM, SpMM, then GEMM"},
      {"hadamard_gemm",
       "A(i,l) = B(i,j) * C(j,k) * D(j,k) * E(k,l)",
       "B",
       false,
       {{"k", 128}, {"l", 64}},
       "SpMM with a Hadamard product, then GEMM"},
      {"spmm_gemm",
       "A(i,l) = B(i,j) * C(j,k) * D(k,l)",
       "B",
       false,
       {{"k", 128}, {"l", 64}},
       "SpMM followed by GEMM"},
      {"spttm_ttm",
       "A(i,l,m) = B(i,j,k) * C(j,l) * D(k,m)",
       "B",
       false,
       {{"l", 16}, {"m", 16}},
       "SpTTM followed by TTM"},
      {"spttm_spttm",
       "A(i,j,m) = B(i,j,k) * C(k,l) * D(l,m)",
       "B",
       true,
       {{"l", 16}, {"m", 16}},
       "two SpTTMs; A is sparse over (i,j)"},
      {"mttkrp_gemm",
       "A(i,m) = B(i,k,l) * C(l,j) * D(k,j) * E(j,m)",
       "B",
       false,
       {{"j", 16}, {"m", 16}},
       "MTTKRP followed by GEMM"},
  };
  return kernels;
}

const KernelDef* FindKernel(const std::string& name) {
  for (const auto& k : KernelLibrary()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string KnownKernelNames() {
  std::string out;
  for (const auto& k : KernelLibrary()) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

Expression KernelExpression(const std::string& name) {
  const KernelDef* k = FindKernel(name);
  if (!k) throw InputError("unknown kernel '" + name + "' (known: " + KnownKernelNames() + ")");
  return BuildExpression(k->expression, "kernel " + name, k->sparse,
                         k->sparse_output ? SparseOutput::kYes : SparseOutput::kNo);
}

}  // namespace sparsetune
