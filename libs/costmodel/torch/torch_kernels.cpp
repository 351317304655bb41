// The PyTorch baseline of `sparsetune bench` (torch_kernels_abi.hpp): what a PyTorch user calls
// for SpMV, SpMM and SDDMM, on LibTorch's CPU backend. Which calls (LibTorch 1.13 as Debian
// builds it, without MKL):
//   spmv      torch::mv on a sparse CSR tensor needs MKL and refuses ("Calling addmv on a
//             sparse CPU tensor requires compiling PyTorch with MKL"); the CSR matrix product
//             does not, so the vector goes in as an n x 1 matrix: torch::mm(A_csr, x.view(n, 1))
//             (measured alike to torch::mv on a COO tensor, the other path that works)
//   spmm      torch::mm(A_csr, B)
//   sddmm     torch::sparse_sampled_addmm(A_csr, B, C, beta=0, alpha=1), C (K x N) as given,
//             then the result's values times A's values. On the CPU, 1.13 has no sampled
//             kernel: it computes self.to_dense() * beta + matmul(B, C) * alpha and masks that
//             with A's pattern (sparse_mask), so the work and memory are those of the dense
//             M x N product
//   sddmm_nt  the same with mat2 = C.t(), a transposed view of the given C (N x K)
// Every call runs with torch's intra-op threads set to the bench's count and restores the
// caller's OpenMP thread count on return (LibTorch leaves it at 1 otherwise).
#include <dlfcn.h>
#include <omp.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "costmodel/torch_kernels_abi.hpp"

namespace sparsetune {

struct TorchKernel {
  std::string kernel;
  int threads = 1;
  at::Tensor a;         // CSR
  at::Tensor a_values;  // A's values (SDDMM multiplies by them)
  at::Tensor dense0, dense1;
  at::Tensor out;  // the last call's result: dense, or the values of the sampled product
};

namespace {

class KeepOpenMpThreads {
 public:
  KeepOpenMpThreads() : threads_(omp_get_max_threads()) {}
  ~KeepOpenMpThreads() { omp_set_num_threads(threads_); }

 private:
  int threads_;
};

// LibTorch 1.13 warns once a process that its sparse CSR support is in beta, through glog,
// which nobody here sets up (so glog adds "Logging before InitGoogleLogging()"): two lines of
// noise in every bench. That one is dropped; any other warning reaches stderr as one line.
class CsrBetaWarningDropped : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation& /*where*/, const std::string& msg,
               bool /*verbatim*/) override {
    if (msg.find("Sparse CSR tensor support is in beta") != std::string::npos) return;
    std::fprintf(stderr, "pytorch: %s\n", msg.c_str());
  }
};

// A copy of `count` values of the input's type, as a tensor of `sizes`.
at::Tensor Copy(const void* data, at::IntArrayRef sizes, at::ScalarType type) {
  return at::from_blob(const_cast<void*>(data), sizes, at::TensorOptions().dtype(type)).clone();
}

std::string Version() {
  return std::string("PyTorch ") + TORCH_VERSION + " (LibTorch, CPU" +
         (at::hasMKL() ? ", MKL" : ", no MKL") + (at::hasOpenMP() ? ", OpenMP" : "") + ")";
}

// The LibTorch library the calls go to.
std::string Build() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&at::_ops::mm::call), &info) == 0 || !info.dli_fname)
    return "prebuilt";
  return std::string("prebuilt ") + info.dli_fname;
}

std::string Method(const std::string& kernel) {
  if (kernel == "spmv")
    return "torch::mm(A_csr, x.view({n, 1})) (torch::mv on CSR requires MKL, which this "
           "LibTorch lacks)";
  if (kernel == "spmm") return "torch::mm(A_csr, B)";
  const std::string dense =
      " (on the CPU, LibTorch 1.13 forms the dense M x N product and masks it with A's "
      "pattern), then its values times A's values";
  if (kernel == "sddmm")
    return "torch::sparse_sampled_addmm(A_csr, B, C, beta=0, alpha=1) with C K x N as given" +
           dense;
  return "torch::sparse_sampled_addmm(A_csr, B, C.t(), beta=0, alpha=1) with C N x K as given "
         "(a transposed view)" +
         dense;
}

void Compute(TorchKernel& k) {
  KeepOpenMpThreads keep;
  // Setting the count rebuilds LibTorch's thread pool, whose new threads spin on the cores the
  // next contender is timed on: set only when it differs.
  if (at::get_num_threads() != k.threads) at::set_num_threads(k.threads);
  if (k.kernel == "spmv") {
    k.out = at::mm(k.a, k.dense0.view({k.dense0.size(0), 1}));
  } else if (k.kernel == "spmm") {
    k.out = at::mm(k.a, k.dense0);
  } else {
    const at::Tensor mat2 = k.kernel == "sddmm" ? k.dense1 : k.dense1.t();
    const at::Tensor sampled = at::sparse_sampled_addmm(k.a, k.dense0, mat2, 0, 1);
    k.out = sampled.values() * k.a_values;
  }
}

}  // namespace

}  // namespace sparsetune

using sparsetune::TorchKernel;
using sparsetune::TorchKernelError;

extern "C" TorchKernel* sparsetune_torch_kernel_open(const sparsetune::TorchKernelInput& in,
                                                     sparsetune::TorchKernelInfo* info,
                                                     TorchKernelError* error) {
  try {
    const std::string kernel = in.kernel;
    if (kernel != "spmv" && kernel != "spmm" && kernel != "sddmm" && kernel != "sddmm_nt") {
      *error = {2, "no PyTorch baseline for " + kernel};
      return nullptr;
    }
    if (in.value_bytes != 4 && in.value_bytes != 8) {
      *error = {2, "values of " + std::to_string(in.value_bytes) + " bytes"};
      return nullptr;
    }
    sparsetune::KeepOpenMpThreads keep;
    const at::ScalarType type = in.value_bytes == 4 ? at::kFloat : at::kDouble;
    auto k = std::make_unique<TorchKernel>();
    k->kernel = kernel;
    k->threads = in.threads;
    const at::Tensor row_ptr = sparsetune::Copy(in.row_ptr, {in.rows + 1}, at::kLong);
    const at::Tensor col = sparsetune::Copy(in.col, {in.nnz}, at::kInt).to(at::kLong);
    k->a_values = sparsetune::Copy(in.values, {in.nnz}, type);
    sparsetune::CsrBetaWarningDropped handler;
    const c10::Warning::WarningHandlerGuard quiet(&handler);
    k->a = at::sparse_csr_tensor(row_ptr, col, k->a_values, {in.rows, in.cols},
                                 at::TensorOptions().dtype(type));
    if (kernel == "spmv") {
      k->dense0 = sparsetune::Copy(in.dense0, {in.cols}, type);
    } else if (kernel == "spmm") {
      k->dense0 = sparsetune::Copy(in.dense0, {in.cols, in.width}, type);
    } else {
      k->dense0 = sparsetune::Copy(in.dense0, {in.rows, in.width}, type);
      k->dense1 = kernel == "sddmm" ? sparsetune::Copy(in.dense1, {in.width, in.cols}, type)
                                    : sparsetune::Copy(in.dense1, {in.cols, in.width}, type);
    }
    info->version = sparsetune::Version();
    info->method = sparsetune::Method(kernel);
    info->flags = sparsetune::Build();
    return k.release();
  } catch (const std::exception& e) {
    *error = {3, e.what()};
  }
  return nullptr;
}

extern "C" bool sparsetune_torch_kernel_call(TorchKernel* kernel, TorchKernelError* error) {
  try {
    sparsetune::Compute(*kernel);
    return true;
  } catch (const std::exception& e) {
    const std::string message = e.what();
    *error = {3, message.substr(0, message.find('\n'))};
  }
  return false;
}

extern "C" bool sparsetune_torch_kernel_output(TorchKernel* kernel, void* out, int64_t count,
                                               TorchKernelError* error) {
  try {
    const at::Tensor result = kernel->out.contiguous().view({-1});
    if (!result.defined() || result.numel() != count) {
      *error = {3, "the result has " + std::to_string(result.numel()) + " values, expected " +
                       std::to_string(count)};
      return false;
    }
    std::memcpy(out, result.data_ptr(), static_cast<size_t>(count) * result.element_size());
    return true;
  } catch (const std::exception& e) {
    *error = {3, e.what()};
  }
  return false;
}

extern "C" void sparsetune_torch_kernel_close(TorchKernel* kernel) {
  delete kernel;
}
