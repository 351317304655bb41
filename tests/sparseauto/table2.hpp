#pragma once

#include <string>
#include <vector>

namespace sparsetune::testing {

// The paper's chosen schedules (cleaned Table 2), as schedule trees; the same trees as
// tests/compiler/fused_test.cpp. Kernels 2 and 5 list alternatives (a), (b), (c).
struct Table2Entry {
  std::string kernel;
  std::string label;
  std::string schedule;  // JSON
};

inline std::vector<Table2Entry> Table2() {
  return {
      {"sddmm_spmm", "1", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * E(j,l)"}}},
          "format": ["i:U","j:C"]})J"},
      {"sddmm_spmm_gemm", "2a", R"J({"tree": {"loops": ["i"], "where": {"temp": "T(l)",
          "producer": {"loops": ["j"], "where": {"temp": "t",
              "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
              "consumer": {"loops": ["l"], "compute": "T(l) += t * E(j,l)"}}},
          "consumer": {"loops": ["m","l"], "compute": "A(i,m) += T(l) * F(l,m)"}}},
          "format": ["i:U","j:C"]})J"},
      {"sddmm_spmm_gemm", "2b", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j) * C(i,k) * D(j,k)"},
          "consumer": {"loops": ["m","l"], "compute": "A(i,m) += t * E(j,l) * F(l,m)"}}},
          "format": ["i:U","j:C"]})J"},
      {"sddmm_spmm_gemm", "2c", R"J({"tree": {"loops": ["i","l"], "where": {"temp": "t",
          "producer": {"loops": ["j","k"], "compute": "t += B(i,j) * C(i,k) * D(j,k) * E(j,l)"},
          "consumer": {"loops": ["m"], "compute": "A(i,m) += t * F(l,m)"}}},
          "format": ["i:U","j:C"]})J"},
      {"hadamard_gemm", "3", R"J({"tree": {"loops": ["i","k"], "where": {"temp": "t",
          "producer": {"loops": ["j"], "compute": "t += B(i,j) * C(j,k) * D(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * E(k,l)"}}},
          "format": ["i:U","j:C"]})J"},
      {"spmm_gemm", "4", R"J({"tree": {"loops": ["i","k"], "where": {"temp": "t",
          "producer": {"loops": ["j"], "compute": "t += B(i,j) * C(j,k)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l) += t * D(k,l)"}}},
          "format": ["i:U","j:C"]})J"},
      {"ttmc", "5a", R"J({"tree": {"loops": ["i","j","n"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * E(k,n)"},
          "consumer": {"loops": ["m","l"], "compute": "A(l,m,n) += t * C(i,l) * D(j,m)"}}},
          "format": ["i:C","j:C","k:C"]})J"},
      {"ttmc", "5b", R"J({"tree": {"loops": ["i","n"], "where": {"temp": "T(m)",
          "producer": {"loops": ["j"], "where": {"temp": "t",
              "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * E(k,n)"},
              "consumer": {"loops": ["m"], "compute": "T(m) += t * D(j,m)"}}},
          "consumer": {"loops": ["m","l"], "compute": "A(l,m,n) += T(m) * C(i,l)"}}},
          "format": ["i:C","j:C","k:C"]})J"},
      {"ttmc", "5c", R"J({"tree": {"loops": ["i","m","n"], "where": {"temp": "t",
          "producer": {"loops": ["j","k"], "compute": "t += B(i,j,k) * D(j,m) * E(k,n)"},
          "consumer": {"loops": ["l"], "compute": "A(l,m,n) += t * C(i,l)"}}},
          "format": ["i:C","j:C","k:C"]})J"},
      {"spttm_ttm", "6", R"J({"tree": {"loops": ["i","j","m"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * D(k,m)"},
          "consumer": {"loops": ["l"], "compute": "A(i,l,m) += t * C(j,l)"}}},
          "format": ["i:C","j:C","k:C"]})J"},
      {"spttm_spttm", "7", R"J({"tree": {"loops": ["i","j","l"], "where": {"temp": "t",
          "producer": {"loops": ["k"], "compute": "t += B(i,j,k) * C(k,l)"},
          "consumer": {"loops": ["m"], "compute": "A(i,j,m) += t * D(l,m)"}}},
          "format": ["i:C","j:C","k:C"]})J"},
      {"mttkrp_gemm", "8", R"J({"tree": {"loops": ["i","j"], "where": {"temp": "t",
          "producer": {"loops": ["k","l"], "compute": "t += B(i,k,l) * C(l,j) * D(k,j)"},
          "consumer": {"loops": ["m"], "compute": "A(i,m) += t * E(j,m)"}}},
          "format": ["i:C","k:C","l:C"]})J"},
  };
}

inline const std::vector<std::string>& SparseAutoKernels() {
  static const std::vector<std::string> kernels = {
      "sddmm_spmm", "sddmm_spmm_gemm", "hadamard_gemm", "spmm_gemm",
      "ttmc",       "spttm_ttm",       "spttm_spttm",   "mttkrp_gemm"};
  return kernels;
}

}  // namespace sparsetune::testing
