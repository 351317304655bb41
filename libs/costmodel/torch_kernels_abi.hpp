// The PyTorch baseline's entry points in the LibTorch module (libsparsetune_costmodel_torch.so),
// opened with dlopen by `bench` only (libs/baselines/torch_baseline.cpp). Plain structs, no
// torch types: errors come back as a code (2: bad input, 3: internal) and a message, never as
// exceptions across the module boundary.
#pragma once

#include <cstdint>
#include <string>

namespace sparsetune {

// One kernel's operands, as the bench holds them. The module copies what it keeps.
struct TorchKernelInput {
  const char* kernel = "";  // spmv, spmm, sddmm (C is K x N) or sddmm_nt (C is N x K)
  int value_bytes = 4;      // 4: float, 8: double
  int threads = 1;          // torch's intra-op threads during each call
  int64_t rows = 0, cols = 0, nnz = 0;
  const int64_t* row_ptr = nullptr;  // rows + 1, CSR
  const int32_t* col = nullptr;      // nnz, ascending within a row
  const void* values = nullptr;      // nnz
  int64_t width = 1;                 // j for spmm, k for sddmm and sddmm_nt, 1 for spmv
  const void* dense0 = nullptr;      // x (spmv), B (spmm: K x J; sddmm: M x K), row-major
  const void* dense1 = nullptr;      // sddmm: C (K x N); sddmm_nt: C (N x K); row-major
};

struct TorchKernelError {
  int code = 0;
  std::string message;
};

// What runs, filled by open.
struct TorchKernelInfo {
  std::string version;  // "PyTorch 1.13.1 (LibTorch, ...)"
  std::string method;   // the calls made per kernel call
  std::string flags;    // how it was built: "prebuilt /path/to/libtorch_cpu.so"
};

struct TorchKernel;  // opaque, owned by the module

// Null on error. The first call is not made by open.
using TorchKernelOpenFn = TorchKernel* (*)(const TorchKernelInput& input, TorchKernelInfo* info,
                                           TorchKernelError* error);
using TorchKernelCallFn = bool (*)(TorchKernel* kernel, TorchKernelError* error);
// Copies the last call's result (dense row-major, or one value per nonzero in CSR order) into
// `out`, which holds `count` values of the input's type.
using TorchKernelOutputFn = bool (*)(TorchKernel* kernel, void* out, int64_t count,
                                     TorchKernelError* error);
using TorchKernelCloseFn = void (*)(TorchKernel* kernel);

constexpr const char* kTorchKernelOpenSymbol = "sparsetune_torch_kernel_open";
constexpr const char* kTorchKernelCallSymbol = "sparsetune_torch_kernel_call";
constexpr const char* kTorchKernelOutputSymbol = "sparsetune_torch_kernel_output";
constexpr const char* kTorchKernelCloseSymbol = "sparsetune_torch_kernel_close";

}  // namespace sparsetune
