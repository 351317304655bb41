#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/kernel_abi.h"

namespace sparsetune {

struct CompiledKernel {
  st_kernel_fn function = nullptr;
  std::string library_path;
  std::string source_path;
  double compile_ms = 0;  // 0 when the shared object came from the cache
  bool cached = false;
};

// Compiles generated sources with the system compiler into shared objects kept in a
// content-addressed cache (hash of compiler, flags and source), and loads them with dlopen.
// Safe to share between threads; several processes may share one cache directory.
class Jit {
 public:
  // Default: $SPARSETUNE_CACHE or $XDG_CACHE_HOME/sparsetune, subfolder jit/. The compiler is
  // $CXX or c++.
  Jit();
  explicit Jit(std::string cache_dir);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  // Throws InternalError naming the kept source and the compiler's first error lines.
  CompiledKernel Compile(const std::string& source);

  // Compiles several sources, `jobs` at a time (compiling dominates bulk measurement). Entry s
  // is sources[s]'s kernel, or holds the compiler's error in `error` with no function.
  struct Outcome {
    CompiledKernel kernel;
    std::string error;
  };
  std::vector<Outcome> CompileAll(const std::vector<std::string>& sources, int jobs);

  const std::string& cache_dir() const { return cache_dir_; }
  const std::string& compiler() const { return compiler_; }
  std::string compiler_version();  // first line of `CXX --version`
  static const char* Flags();
  static std::string DefaultCompiler();  // $CXX, else c++

 private:
  std::string cache_dir_;
  std::string compiler_;
  std::string compiler_version_;
  std::mutex mutex_;
  std::map<std::string, CompiledKernel> loaded_;  // by content hash
  std::map<std::string, void*> handles_;
};

}  // namespace sparsetune
