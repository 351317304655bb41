// PyTorch through LibTorch: the kernels live in the cost model's LibTorch module
// (libs/costmodel/torch/torch_kernels.cpp), opened here on first use as loader.cpp opens it, so
// that only `bench` pays LibTorch's start-up.
#include <dlfcn.h>
#include <omp.h>

#include <chrono>
#include <mutex>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/module.hpp"
#include "baselines/contenders.hpp"
#include "baselines/csr.hpp"
#include "costmodel/torch_kernels_abi.hpp"
#include "measure/operands.hpp"

namespace sparsetune {

namespace {

struct TorchModule {
  TorchKernelOpenFn open = nullptr;
  TorchKernelCallFn call = nullptr;
  TorchKernelOutputFn output = nullptr;
  TorchKernelCloseFn close = nullptr;
};

const TorchModule& LoadModule() {
  static TorchModule module;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    // Loading LibTorch lowers the calling thread's OpenMP thread count to one.
    const int threads = omp_get_max_threads();
    const std::string path =
        FindModule("libsparsetune_costmodel_torch.so", "SPARSETUNE_COSTMODEL_MODULE",
                   SPARSETUNE_COSTMODEL_MODULE_PATH);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    omp_set_num_threads(threads);
    if (!handle) {
      error = "cannot load the LibTorch module " + path + ": " + dlerror() +
              " (build it with scripts/build.sh sparsetune_costmodel_torch, or point "
              "SPARSETUNE_COSTMODEL_MODULE at it)";
      return;
    }
    module.open = reinterpret_cast<TorchKernelOpenFn>(dlsym(handle, kTorchKernelOpenSymbol));
    module.call = reinterpret_cast<TorchKernelCallFn>(dlsym(handle, kTorchKernelCallSymbol));
    module.output = reinterpret_cast<TorchKernelOutputFn>(dlsym(handle, kTorchKernelOutputSymbol));
    module.close = reinterpret_cast<TorchKernelCloseFn>(dlsym(handle, kTorchKernelCloseSymbol));
    if (!module.open || !module.call || !module.output || !module.close)
      error = path + " has no PyTorch baseline (" + kTorchKernelOpenSymbol + ")";
  });
  if (!error.empty()) throw InternalError(error);
  return module;
}

[[noreturn]] void Rethrow(const TorchKernelError& e) {
  if (e.code == 2) throw InputError("PyTorch: " + e.message);
  throw InternalError("PyTorch: " + e.message);
}

class TorchBaseline : public Baseline {
 public:
  explicit TorchBaseline(const BaselineOperands& o) : o_(o) {}
  ~TorchBaseline() override {
    if (kernel_) LoadModule().close(kernel_);
  }
  std::string name() const override { return "pytorch"; }

  void Prepare() override {
    const CooTensor& t = *o_.sparse;
    const bool sddmm = o_.kernel == "sddmm" || o_.kernel == "sddmm_nt";
    if (sddmm) {
      // LibTorch 1.13's CPU sampled_addmm holds three dense M x N matrices (A densified, the
      // product, their sum) before masking: refused where they would not fit.
      const double bytes = 3.0 * double(t.dims[0]) * double(t.dims[1]) * DTypeSize(o_.dtype);
      if (bytes > 0.5 * double(AvailableMemoryBytes())) {
        throw InputError("not run: LibTorch's CPU sparse_sampled_addmm forms dense " +
                         std::to_string(t.dims[0]) + " x " + std::to_string(t.dims[1]) +
                         " matrices (" + std::to_string(int64_t(bytes / 1e9)) +
                         " GB), more than half the available memory");
      }
    }
    const TorchModule& module = LoadModule();
    const auto start = std::chrono::steady_clock::now();
    const CsrArrays csr = ToCsr(t);
    const bool f32 = o_.dtype == DType::kF32;
    const std::vector<float> values32 = f32 ? TypedValues<float>(t) : std::vector<float>();
    const std::vector<double> values64 = f32 ? std::vector<double>() : TypedValues<double>(t);
    TorchKernelInput in;
    in.kernel = o_.kernel.c_str();
    in.value_bytes = static_cast<int>(DTypeSize(o_.dtype));
    in.threads = o_.threads;
    in.rows = t.dims[0];
    in.cols = t.dims[1];
    in.nnz = t.nnz();
    in.row_ptr = csr.row_ptr.data();
    in.col = csr.col.data();
    in.values = f32 ? static_cast<const void*>(values32.data()) : values64.data();
    in.width = o_.kernel == "spmm" ? o_.sizes.at("j") : (sddmm ? o_.sizes.at("k") : int64_t(1));
    in.dense0 = (*o_.inputs)[2].data();
    in.dense1 = sddmm ? (*o_.inputs)[3].data() : nullptr;
    TorchKernelInfo info;
    TorchKernelError error;
    kernel_ = module.open(in, &info, &error);
    if (!kernel_) Rethrow(error);
    version = info.version;
    method = info.method;
    flags = info.flags;
    prepare_ms = MsSince(start);
  }

  void Call() override {
    TorchKernelError error;
    if (!LoadModule().call(kernel_, &error)) Rethrow(error);
  }

  ValueBuffer Output() override {
    const bool sddmm = o_.kernel == "sddmm" || o_.kernel == "sddmm_nt";
    const int64_t rows = o_.sparse->dims[0];
    const int64_t count =
        sddmm ? o_.sparse->nnz() : rows * (o_.kernel == "spmm" ? o_.sizes.at("j") : int64_t(1));
    ValueBuffer out(o_.dtype, count);
    TorchKernelError error;
    if (!LoadModule().output(kernel_, out.data(), count, &error)) Rethrow(error);
    return out;
  }

 private:
  BaselineOperands o_;
  TorchKernel* kernel_ = nullptr;
};

}  // namespace

std::unique_ptr<Baseline> MakeTorchBaseline(const BaselineOperands& o) {
  if (o.kernel != "spmv" && o.kernel != "spmm" && o.kernel != "sddmm" && o.kernel != "sddmm_nt")
    return nullptr;
  if (IsComplex(o.dtype)) return nullptr;  // torch's complex CSR is not wired up here
  return std::make_unique<TorchBaseline>(o);
}

}  // namespace sparsetune
