#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/kernel_abi.h"

namespace sparsetune {

struct CompiledKernel {
  st_kernel_fn function = nullptr;  // null for a library compiled with CompileLibrary
  void* handle = nullptr;           // the loaded shared object (see Jit::Symbol)
  std::string library_path;
  std::string source_path;
  double compile_ms = 0;  // 0 when the shared object came from the cache
  bool cached = false;
};

// How large the cache directory may grow. When a newly compiled kernel takes it past
// max_bytes, the least recently used kernels (shared object, source, logs) are removed until
// it is back under nine tenths of the cap. A kernel used or written less than
// min_idle_seconds ago is never removed, whatever the cap: another process may be about to
// load it.
struct JitCacheLimits {
  int64_t max_bytes = int64_t(512) << 20;  // <= 0: no cap
  double min_idle_seconds = 600;
  // $SPARSETUNE_JIT_CACHE_MB (megabytes; 0 means no cap), else the defaults. Throws
  // InputError when the variable is not a non-negative whole number.
  static JitCacheLimits FromEnvironment();
};

// Compiles generated sources with the system compiler into shared objects kept in a
// content-addressed cache (hash of compiler, flags and source), and loads them with dlopen.
// A cache hit marks the kernel used (its shared object's modification time), which is what
// the cap evicts by. Safe to share between threads; several processes may share one cache
// directory (files vanishing under another process's eviction are compiled again).
class Jit {
 public:
  // Default: $SPARSETUNE_CACHE or $XDG_CACHE_HOME/sparsetune, subfolder jit/. The compiler is
  // $CXX or c++. The limits: JitCacheLimits::FromEnvironment().
  Jit();
  explicit Jit(std::string cache_dir);
  Jit(std::string cache_dir, JitCacheLimits limits);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  // Throws InternalError naming the kept source and the compiler's first error lines, or when
  // the shared object has no SPARSETUNE_KERNEL_ENTRY.
  CompiledKernel Compile(const std::string& source);

  // As Compile (same flags and cache), for a source that exports its own C functions instead
  // of SPARSETUNE_KERNEL_ENTRY: `function` is set only when it exports that entry too.
  CompiledKernel CompileLibrary(const std::string& source);

  // A C function or variable of a compiled shared object; null when it has no such symbol.
  static void* Symbol(const CompiledKernel& kernel, const char* name);

  // Compiles several sources, `jobs` at a time (compiling dominates bulk measurement). Entry s
  // is sources[s]'s kernel, or holds the compiler's error in `error` with no function.
  struct Outcome {
    CompiledKernel kernel;
    std::string error;
  };
  std::vector<Outcome> CompileAll(const std::vector<std::string>& sources, int jobs);

  // Where `source`'s shared object is (or would be) cached.
  std::string LibraryPath(const std::string& source);

  // Removes least recently used kernels until the directory is under the cap (see
  // JitCacheLimits); returns the bytes removed. Compile calls it when a new kernel is added.
  int64_t EvictLeastRecentlyUsed();

  // Removes what killed or crashed compiles left (KEY.so.PID.N, KEY.cpp.PID.N: their process
  // is gone and they are over kStaleAfter old; logs a day after), one process at a time (a lock
  // file in the directory). Compile calls it once per Jit. Returns the files removed.
  int SweepStaleTemporaries();
  static constexpr std::chrono::minutes kStaleAfter{5};

  // Whether the cached object at `path` is whole and was compiled for cache key `key` (size,
  // ELF header, a trailer written last, its content hash). Compile checks this before it
  // loads a cached object and compiles again when it fails.
  static bool VerifyCached(const std::string& path, const std::string& key);

  const std::string& cache_dir() const { return cache_dir_; }
  const JitCacheLimits& limits() const { return limits_; }
  const std::string& compiler() const { return compiler_; }
  std::string compiler_version();  // first line of `CXX --version`
  static const char* Flags();
  static std::string DefaultCompiler();  // $CXX, else c++

 private:
  using Clock = std::chrono::steady_clock;
  struct Loaded {
    CompiledKernel kernel;
    Clock::time_point last_touch;  // when its shared object was last marked used
  };

  std::string CacheKey(const std::string& source);
  CompiledKernel CompileAndLoad(const std::string& source);
  // Compiles `source` into `library_path` (atomically renamed into place); the compile time.
  double Build(const std::string& source, const std::string& key, const std::string& source_path,
               const std::string& library_path);
  // Counts bytes a new kernel added and evicts when the cap may be exceeded.
  void NoteAdded(const std::string& source_path, const std::string& library_path);

  std::string cache_dir_;
  JitCacheLimits limits_;
  std::string compiler_;
  std::string compiler_version_;
  std::mutex mutex_;
  std::map<std::string, Loaded> loaded_;  // by content hash
  std::map<std::string, void*> handles_;
  std::once_flag swept_;
  // Eviction bookkeeping: the directory's size as last scanned plus what this process added
  // since (-1: not scanned yet), and kernels added since that scan.
  std::mutex evict_mutex_;
  int64_t known_bytes_ = -1;
  int added_since_scan_ = 0;
};

}  // namespace sparsetune
