// Eigen and the textbook kernels, compiled by sparsetune's JIT with the generated kernels' flags
// at first use (cached by content like kernels), and the FLOP probe compiled the same way.
#include <chrono>
#include <cstring>

#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "baselines/contenders.hpp"
#include "baselines/csr.hpp"
#include "baselines/jit_sources.hpp"
#include "jit/jit.hpp"

namespace sparsetune {

namespace {

Jit& DefaultJit() {
  static Jit jit;
  return jit;
}

// The value type (and any other `defines`) go in as the first lines; everything else is the
// embedded file. Complex products take the textbook formula, as in sparsetune's kernels (see
// codegen).
std::string TypedSource(const std::string& file, DType dtype, const std::string& defines = "") {
  const std::string complex_support =
      IsComplex(dtype) ? "#pragma GCC optimize(\"cx-limited-range\")\n#include <complex>\n" : "";
  return complex_support + defines + "#define ST_VALUE " + DTypeCName(dtype) + "\n" +
         JitSource(file);
}

// The textbook kernels come in two forms that differ only in how rows go to the threads
// (hand_kernels.cpp's ST_FOR_ROWS): which is faster depends on the matrix and on whether the
// threads share a cache, so bench runs both.
bool IsTextbook(const std::string& which) {
  return which == "hand" || which == "hand_dynamic";
}

template <class F>
F Resolve(const CompiledKernel& kernel, const char* name) {
  void* symbol = Jit::Symbol(kernel, name);
  if (!symbol) throw InternalError(kernel.library_path + " has no " + name);
  return reinterpret_cast<F>(symbol);
}

// The C API of jit_sources/*.cpp (see hand_kernels.cpp).
using VersionFn = const char* (*)();
using PrepareFn = void* (*)(const char*, int, int64_t, int64_t, int64_t, const int64_t*,
                            const int32_t*, const void*, const void*, const void*);
using CallFn = void (*)(void*);
using OutputFn = const void* (*)(void*, int64_t*);
using FreeFn = void (*)(void*);

std::string Method(const std::string& which, const std::string& kernel) {
  if (which == "eigen") {
    return kernel == "spmv" ? "y.noalias() = A * x (SparseMatrix<RowMajor> times a vector; "
                              "Eigen's OpenMP row loop)"
                            : "C.noalias() = A * B (SparseMatrix<RowMajor> times a row-major "
                              "matrix; Eigen's OpenMP row loop)";
  }
  const std::string rows = which == "hand_dynamic"
                               ? "rows in chunks of 64 to whichever thread is free"
                               : "one range of rows a thread, equal in nonzeros";
  if (kernel == "spmv") return "CSR row loop, one dot product a row (" + rows + ")";
  if (kernel == "spmm")
    return "CSR row loop, C row zeroed, then C[i,:] += a * B[k,:] with omp simd (" + rows + ")";
  if (kernel == "sddmm")
    return "C transposed at every call (plain parallel transpose), then per nonzero one omp "
           "simd reduction dot product of B's row and C^T's row (" +
           rows + ")";
  return "per nonzero one omp simd reduction dot product of B's row and C's row (" + rows + ")";
}

class JitBaseline : public Baseline {
 public:
  JitBaseline(const BaselineOperands& o, std::string which) : o_(o), which_(std::move(which)) {}
  ~JitBaseline() override {
    if (state_) free_(state_);
  }
  std::string name() const override { return which_; }
  std::string kind() const override { return IsTextbook(which_) ? "hand" : "library"; }

  void Prepare() override {
    Jit& jit = o_.jit ? *o_.jit : DefaultJit();
    const std::string file = which_ == "eigen" ? "eigen_kernels.cpp" : "hand_kernels.cpp";
    const CompiledKernel compiled = jit.CompileLibrary(
        TypedSource(file, o_.dtype, which_ == "hand_dynamic" ? "#define ST_ROWS_DYNAMIC\n" : ""));
    auto prepare = Resolve<PrepareFn>(compiled, "st_baseline_prepare");
    call_ = Resolve<CallFn>(compiled, "st_baseline_call");
    output_ = Resolve<OutputFn>(compiled, "st_baseline_output");
    free_ = Resolve<FreeFn>(compiled, "st_baseline_free");
    const std::string library = Resolve<VersionFn>(compiled, "st_baseline_version")();
    version = library.empty() ? "textbook kernel" : library;
    method = Method(which_, o_.kernel);
    flags = jit.compiler_version() + " " + Jit::Flags();

    const auto start = std::chrono::steady_clock::now();
    const CooTensor& t = *o_.sparse;
    const CsrArrays csr = ToCsr(t);
    const ValueBuffer typed_values = TypedValues(t, o_.dtype);
    const void* values = typed_values.data();
    const std::vector<ValueBuffer>& in = *o_.inputs;
    const bool sddmm = o_.kernel == "sddmm" || o_.kernel == "sddmm_nt";
    const int64_t width =
        o_.kernel == "spmm" ? o_.sizes.at("j") : (sddmm ? o_.sizes.at("k") : int64_t(1));
    state_ = prepare(o_.kernel.c_str(), o_.threads, t.dims[0], t.dims[1], width, csr.row_ptr.data(),
                     csr.col.data(), values, in[2].data(), sddmm ? in[3].data() : nullptr);
    if (!state_) throw InternalError(which_ + " has no " + o_.kernel + " kernel");
    prepare_ms = MsSince(start);
  }

  void Call() override { call_(state_); }

  ValueBuffer Output() override {
    int64_t count = 0;
    const void* data = output_(state_, &count);
    ValueBuffer out(o_.dtype, count);
    std::memcpy(out.data(), data, static_cast<size_t>(count) * DTypeSize(o_.dtype));
    return out;
  }

 private:
  BaselineOperands o_;
  std::string which_;
  void* state_ = nullptr;
  CallFn call_ = nullptr;
  OutputFn output_ = nullptr;
  FreeFn free_ = nullptr;
};

}  // namespace

std::unique_ptr<Baseline> MakeJitBaseline(const BaselineOperands& o, const std::string& which) {
  const bool matrix = o.kernel == "spmv" || o.kernel == "spmm";
  const bool sddmm = o.kernel == "sddmm" || o.kernel == "sddmm_nt";
  if (which == "eigen" && matrix) return std::make_unique<JitBaseline>(o, which);
  if (IsTextbook(which) && (matrix || sddmm)) return std::make_unique<JitBaseline>(o, which);
  return nullptr;
}

FlopProbe MeasureFlopRate(Jit& jit, DType dtype, int threads) {
  // Complex arithmetic is real arithmetic on the parts: the probe runs on the part type.
  const CompiledKernel compiled =
      jit.CompileLibrary(TypedSource("flop_probe.cpp", RealPart(dtype)));
  using ProbeFn = double (*)(int, char*, int, int*);
  auto probe = Resolve<ProbeFn>(compiled, "st_flop_probe");
  char isa[32] = {0};
  FlopProbe out;
  out.gflops = probe(threads, isa, sizeof(isa), &out.lanes);
  out.isa = isa;
  return out;
}

}  // namespace sparsetune
