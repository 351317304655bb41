#include "jit/jit.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"

namespace sparsetune {

namespace {

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ReadFileHead(const std::string& path, int max_lines) {
  std::ifstream in(path);
  std::string line, out;
  for (int n = 0; n < max_lines && std::getline(in, line); ++n) out += (n ? "\n" : "") + line;
  return out;
}

}  // namespace

const char* Jit::Flags() {
  return "-std=c++17 -O3 -march=native -fopenmp -fPIC -shared";
}

Jit::Jit() : Jit(CacheDirectory() + "/jit") {}

std::string Jit::DefaultCompiler() {
  const char* cxx = std::getenv("CXX");
  return (cxx && *cxx) ? cxx : "c++";
}

Jit::Jit(std::string cache_dir) : cache_dir_(std::move(cache_dir)), compiler_(DefaultCompiler()) {}

Jit::~Jit() {
  // Shared objects stay loaded until exit: kernels may still be referenced by callers, and
  // unloading OpenMP-using objects while its thread pool lives is unsafe.
}

std::string Jit::compiler_version() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!compiler_version_.empty()) return compiler_version_;
  const std::string command = ShellQuote(compiler_) + " --version 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[512] = {0};
  if (pipe) {
    if (fgets(buffer, sizeof(buffer), pipe)) compiler_version_ = buffer;
    pclose(pipe);
  }
  while (!compiler_version_.empty() &&
         (compiler_version_.back() == '\n' || compiler_version_.back() == '\r')) {
    compiler_version_.pop_back();
  }
  if (compiler_version_.empty()) {
    throw InternalError("cannot run the C++ compiler '" + compiler_ + "' (set CXX or install g++)");
  }
  return compiler_version_;
}

CompiledKernel Jit::Compile(const std::string& source) {
  const std::string version = compiler_version();
  StableHasher hasher;
  hasher.UpdateString(version);
  hasher.UpdateString(Flags());
  hasher.UpdateString(source);
  const std::string key = hasher.HexDigest();

  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(key); it != loaded_.end()) {
      CompiledKernel hit = it->second;
      hit.compile_ms = 0;
      hit.cached = true;
      return hit;
    }
  }
  // Compile without holding the lock so that several threads can compile at once; two threads
  // compiling the same source both rename complete files into place.
  EnsureDirectory(cache_dir_);
  CompiledKernel result;
  result.library_path = cache_dir_ + "/" + key + ".so";
  result.source_path = cache_dir_ + "/" + key + ".cpp";
  if (!std::filesystem::exists(result.library_path)) {
    const auto start = std::chrono::steady_clock::now();
    static std::atomic<int> counter{0};
    const std::string unique = "." + std::to_string(getpid()) + "." + std::to_string(counter++);
    const std::string source_tmp = result.source_path + unique;
    {
      std::ofstream out(source_tmp, std::ios::binary);
      out << source;
      if (!out) throw InternalError("cannot write " + source_tmp);
    }
    std::filesystem::rename(source_tmp, result.source_path);
    const std::string library_tmp = result.library_path + unique;
    const std::string log = result.source_path + unique + ".log";
    const std::string command = ShellQuote(compiler_) + " " + Flags() + " -o " +
                                ShellQuote(library_tmp) + " " + ShellQuote(result.source_path) +
                                " > " + ShellQuote(log) + " 2>&1";
    const int status = std::system(command.c_str());
    if (status != 0 || !std::filesystem::exists(library_tmp)) {
      std::filesystem::remove(library_tmp);
      throw InternalError("the compiler failed on generated source " + result.source_path +
                          " (log " + log + "):\n" + ReadFileHead(log, 8));
    }
    std::filesystem::rename(library_tmp,
                            result.library_path);  // atomic: readers see all or nothing
    std::filesystem::remove(log);
    result.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  } else {
    result.cached = true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
  void* handle = dlopen(result.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw InternalError("cannot load " + result.library_path + ": " + dlerror());
  result.function = reinterpret_cast<st_kernel_fn>(dlsym(handle, SPARSETUNE_KERNEL_ENTRY));
  if (!result.function)
    throw InternalError(result.library_path + " has no " SPARSETUNE_KERNEL_ENTRY);
  handles_[key] = handle;
  loaded_[key] = result;
  return result;
}

std::vector<Jit::Outcome> Jit::CompileAll(const std::vector<std::string>& sources, int jobs) {
  std::vector<Outcome> out(sources.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t s; (s = next++) < sources.size();) {
      try {
        out[s].kernel = Compile(sources[s]);
      } catch (const std::exception& e) {
        out[s].error = e.what();
      }
    }
  };
  std::vector<std::thread> workers;
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(sources.size())));
  for (int w = 1; w < threads; ++w) workers.emplace_back(worker);
  worker();
  for (auto& w : workers) w.join();
  return out;
}

}  // namespace sparsetune
