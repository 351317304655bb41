#include "jit/jit.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/compiler.hpp"
#include "base/elapsed.hpp"
#include "base/errors.hpp"
#include "base/hash.hpp"
#include "base/paths.hpp"

namespace sparsetune {

namespace {

std::string ReadFileHead(const std::string& path, int max_lines) {
  std::ifstream in(path);
  std::string line, out;
  for (int n = 0; n < max_lines && std::getline(in, line); ++n) out += (n ? "\n" : "") + line;
  return out;
}

// Marks a cached file used now (its modification time, which dlopen leaves alone); false when
// it does not exist. A file that exists but may not be touched (a cache shared read-only)
// still counts as present.
bool MarkUsed(const std::string& path) {
  return ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0 || errno != ENOENT;
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// Every cached shared object ends in this trailer, appended after the compiler's output is
// complete and before the file is renamed into place: a file without it (empty, cut short,
// written by something else, or by a version before the trailer) is compiled again.
struct Trailer {
  char magic[16];
  char key[32];        // the cache key the object was compiled for
  uint64_t elf_bytes;  // the compiler's output, before the trailer
  uint64_t elf_hash;   // StableHasher of those bytes
};
constexpr char kTrailerMagic[16] = "sparsetune-jit1";
static_assert(sizeof(Trailer) == 64, "the trailer's layout is part of the cache format");

bool ReadWhole(int fd, std::string* out, size_t bytes) {
  out->resize(bytes);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, out->data() + done, bytes - done, off_t(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += size_t(got);
  }
  return true;
}

uint64_t ContentHash(const char* data, size_t bytes) {
  StableHasher hasher;
  hasher.Update(data, bytes);
  return hasher.Digest64();
}

// Appends the trailer to a freshly compiled object (not yet in place).
void AppendTrailer(const std::string& path, const std::string& key) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw InternalError("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  std::string elf;
  const bool read = ::fstat(fd, &st) == 0 && ReadWhole(fd, &elf, size_t(st.st_size));
  Trailer trailer{};
  std::memcpy(trailer.magic, kTrailerMagic, sizeof trailer.magic);
  std::memcpy(trailer.key, key.data(), std::min(key.size(), sizeof trailer.key));
  trailer.elf_bytes = elf.size();
  trailer.elf_hash = ContentHash(elf.data(), elf.size());
  const bool written =
      read && ::pwrite(fd, &trailer, sizeof trailer, st.st_size) == ssize_t(sizeof trailer);
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) throw InternalError("cannot write " + path + " (disk full?)");
}

}  // namespace

// Whether the cached object at `path` is whole and is the one compiled for `key`: its size,
// ELF header, trailer and content hash all agree. Reads the file (tens of kilobytes).
bool Jit::VerifyCached(const std::string& path, const std::string& key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  std::string bytes;
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  st.st_size > off_t(sizeof(Trailer) + 64) && st.st_size < (off_t(1) << 30) &&
                  ReadWhole(fd, &bytes, size_t(st.st_size));
  ::close(fd);
  if (!ok) return false;
  Trailer trailer;
  std::memcpy(&trailer, bytes.data() + bytes.size() - sizeof trailer, sizeof trailer);
  return std::memcmp(trailer.magic, kTrailerMagic, sizeof trailer.magic) == 0 &&
         key.size() == sizeof trailer.key &&
         std::memcmp(trailer.key, key.data(), sizeof trailer.key) == 0 &&
         trailer.elf_bytes == bytes.size() - sizeof trailer &&
         bytes.compare(0, 4,
                       "\x7f"
                       "ELF") == 0 &&
         ContentHash(bytes.data(), trailer.elf_bytes) == trailer.elf_hash;
}

namespace {

std::chrono::system_clock::time_point ModificationTime(const struct stat& st) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

}  // namespace

JitCacheLimits JitCacheLimits::FromEnvironment() {
  JitCacheLimits limits;
  const char* value = std::getenv("SPARSETUNE_JIT_CACHE_MB");
  if (!value || !*value) return limits;
  const std::string text = value;
  int64_t megabytes = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), megabytes);
  if (error != std::errc() || end != text.data() + text.size() || megabytes < 0 ||
      megabytes > (int64_t(1) << 40)) {
    throw InputError(
        "SPARSETUNE_JIT_CACHE_MB: expected the cache size in megabytes (a whole "
        "number, 0 for no cap), not '" +
        text + "'");
  }
  limits.max_bytes = megabytes << 20;
  return limits;
}

const char* Jit::Flags() {
  return "-std=c++17 -O3 -march=native -fopenmp -fPIC -shared";
}

Jit::Jit() : Jit(CacheDirectory() + "/jit") {}

Jit::Jit(std::string cache_dir) : Jit(std::move(cache_dir), JitCacheLimits::FromEnvironment()) {}

Jit::Jit(std::string cache_dir, JitCacheLimits limits)
    : cache_dir_(std::move(cache_dir)), limits_(limits), compiler_(DefaultCompiler()) {}

std::string Jit::DefaultCompiler() {
  const char* cxx = std::getenv("CXX");
  return (cxx && *cxx) ? cxx : "c++";
}

Jit::~Jit() {
  // Shared objects stay loaded until exit: kernels may still be referenced by callers, and
  // unloading OpenMP-using objects while its thread pool lives is unsafe.
}

std::string Jit::compiler_version() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (compiler_version_.empty()) compiler_version_ = CompilerVersionLine(compiler_);
  if (compiler_version_.empty()) {
    throw InternalError("cannot run the C++ compiler '" + compiler_ + "' (set CXX or install g++)");
  }
  return compiler_version_;
}

std::string Jit::CacheKey(const std::string& source) {
  StableHasher hasher;
  hasher.UpdateString(compiler_version());
  hasher.UpdateString(Flags());
  hasher.UpdateString(source);
  return hasher.HexDigest();
}

std::string Jit::LibraryPath(const std::string& source) {
  return cache_dir_ + "/" + CacheKey(source) + ".so";
}

double Jit::Build(const std::string& source, const std::string& key, const std::string& source_path,
                  const std::string& library_path) {
  const auto start = Clock::now();
  static std::atomic<int> counter{0};
  const std::string unique = "." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const std::string source_tmp = source_path + unique;
  {
    std::ofstream out(source_tmp, std::ios::binary);
    out << source;
    if (!out) throw InternalError("cannot write " + source_tmp);
  }
  std::filesystem::rename(source_tmp, source_path);
  const std::string library_tmp = library_path + unique;
  const std::string log = source_path + unique + ".log";
  const std::string command = ShellQuote(compiler_) + " " + Flags() + " -o " +
                              ShellQuote(library_tmp) + " " + ShellQuote(source_path) + " > " +
                              ShellQuote(log) + " 2>&1";
  const int status = std::system(command.c_str());
  std::error_code ignored;
  if (status != 0 || !std::filesystem::exists(library_tmp)) {
    std::filesystem::remove(library_tmp, ignored);
    throw InternalError("the compiler failed on generated source " + source_path + " (log " + log +
                        "):\n" + ReadFileHead(log, 8));
  }
  try {
    AppendTrailer(library_tmp, key);  // last: a complete object carries it
  } catch (...) {
    std::filesystem::remove(library_tmp, ignored);
    throw;
  }
  std::filesystem::rename(library_tmp, library_path);  // atomic: readers see all or nothing
  std::filesystem::remove(log, ignored);
  return MsSince(start);
}

CompiledKernel Jit::Compile(const std::string& source) {
  CompiledKernel kernel = CompileAndLoad(source);
  if (!kernel.function)
    throw InternalError(kernel.library_path + " has no " SPARSETUNE_KERNEL_ENTRY);
  return kernel;
}

CompiledKernel Jit::CompileLibrary(const std::string& source) {
  return CompileAndLoad(source);
}

void* Jit::Symbol(const CompiledKernel& kernel, const char* name) {
  return kernel.handle ? dlsym(kernel.handle, name) : nullptr;
}

CompiledKernel Jit::CompileAndLoad(const std::string& source) {
  const std::string key = CacheKey(source);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = loaded_.find(key); it != loaded_.end()) {
      // Marked used now and then, so that other processes' evictions see it in use.
      if (Clock::now() - it->second.last_touch > std::chrono::minutes(1)) {
        MarkUsed(it->second.kernel.library_path);
        it->second.last_touch = Clock::now();
      }
      CompiledKernel hit = it->second.kernel;
      hit.compile_ms = 0;
      hit.cached = true;
      return hit;
    }
  }
  // Compile without holding the lock so that several threads can compile at once; two threads
  // (or processes) compiling the same source both rename complete files into place.
  EnsureDirectory(cache_dir_);
  CompiledKernel result;
  result.library_path = cache_dir_ + "/" + key + ".so";
  result.source_path = cache_dir_ + "/" + key + ".cpp";
  std::call_once(swept_, [this] { SweepStaleTemporaries(); });
  // Another process may evict the shared object between the check and dlopen (only when it
  // was idle, so rarely): it is then compiled again. A cached object that is not whole or not
  // the one compiled for this key (empty, cut short, another file put there) is compiled again
  // and renamed over it, before anything maps it.
  bool rebuild = false;
  for (int attempt = 0;; ++attempt) {
    bool added = false;
    if (!rebuild && MarkUsed(result.library_path) && VerifyCached(result.library_path, key)) {
      result.cached = true;
      result.compile_ms = 0;
    } else {
      result.compile_ms = Build(source, key, result.source_path, result.library_path);
      result.cached = false;
      added = true;
    }
    rebuild = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = loaded_.find(key); it != loaded_.end()) return it->second.kernel;
      void* handle = dlopen(result.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const std::string error = dlerror();
        if (attempt < 2) continue;
        throw InternalError("cannot load " + result.library_path + ": " + error);
      }
      result.function = reinterpret_cast<st_kernel_fn>(dlsym(handle, SPARSETUNE_KERNEL_ENTRY));
      result.handle = handle;
      handles_[key] = handle;
      loaded_[key] = Loaded{result, Clock::now()};
    }
    if (added) NoteAdded(result.source_path, result.library_path);
    return result;
  }
}

void Jit::NoteAdded(const std::string& source_path, const std::string& library_path) {
  if (limits_.max_bytes <= 0) return;
  bool scan = false;
  {
    std::lock_guard<std::mutex> lock(evict_mutex_);
    if (known_bytes_ >= 0) known_bytes_ += FileBytes(source_path) + FileBytes(library_path);
    ++added_since_scan_;
    // Other processes add kernels too: rescan now and then even when this one's count is low.
    scan = known_bytes_ < 0 || known_bytes_ > limits_.max_bytes || added_since_scan_ >= 64;
  }
  if (scan) EvictLeastRecentlyUsed();
}

int64_t Jit::EvictLeastRecentlyUsed() {
  std::unique_lock<std::mutex> lock(evict_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;  // another thread of this process is at it
  // Every file of the directory belongs to a kernel: its key is the name up to the first dot
  // (key.so, key.cpp, and the temporaries and logs of a compile in progress or failed).
  struct Kernel {
    int64_t bytes = 0;
    std::chrono::system_clock::time_point last_use;
    std::vector<std::string> files;
  };
  std::map<std::string, Kernel> kernels;
  int64_t total = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(cache_dir_, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string path = it->path().string();
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // gone meanwhile
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;  // the sweep's lock file
    Kernel& kernel = kernels[name.substr(0, name.find('.'))];
    kernel.bytes += st.st_size;
    kernel.last_use = std::max(kernel.last_use, ModificationTime(st));
    kernel.files.push_back(path);
    total += st.st_size;
  }
  known_bytes_ = total;
  added_since_scan_ = 0;
  if (limits_.max_bytes <= 0 || total <= limits_.max_bytes) return 0;

  std::vector<std::pair<std::chrono::system_clock::time_point, const Kernel*>> by_age;
  for (const auto& [key, kernel] : kernels) by_age.emplace_back(kernel.last_use, &kernel);
  std::sort(by_age.begin(), by_age.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const int64_t target = limits_.max_bytes - limits_.max_bytes / 10;
  const auto idle_since = std::chrono::system_clock::now() -
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              std::chrono::duration<double>(limits_.min_idle_seconds));
  int64_t removed = 0;
  for (const auto& [last_use, kernel] : by_age) {
    if (total - removed <= target || last_use >= idle_since) break;
    // Used since the scan (another process marked it)? Then it stays.
    bool used_since = false;
    for (const auto& file : kernel->files) {
      struct stat st;
      if (::stat(file.c_str(), &st) == 0 && ModificationTime(st) >= idle_since) used_since = true;
    }
    if (used_since) continue;
    // The shared object first: without it the kernel is a miss, whatever else remains.
    std::vector<std::string> files = kernel->files;
    std::stable_partition(files.begin(), files.end(), [](const std::string& f) {
      return f.size() > 3 && f.compare(f.size() - 3, 3, ".so") == 0;
    });
    for (const auto& file : files) ::unlink(file.c_str());  // ENOENT: removed by another process
    removed += kernel->bytes;
  }
  known_bytes_ = total - removed;
  return removed;
}

int Jit::SweepStaleTemporaries() {
  // One process sweeps at a time; the others skip it.
  const std::string lock_path = cache_dir_ + "/.sweep.lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return 0;
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return 0;
  }
  const auto now = std::chrono::system_clock::now();
  int removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(cache_dir_, ec), end; !ec && it != end;
       it.increment(ec)) {
    // A compile's temporaries: KEY.cpp.PID.N, KEY.so.PID.N and its log KEY.cpp.PID.N.log.
    const std::string name = it->path().filename().string();
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
      const size_t dot = name.find('.', start);
      parts.push_back(name.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    const bool log = parts.size() == 5 && parts[4] == "log";
    if (parts.size() != 4 && !log) continue;
    if ((parts[1] != "cpp" && parts[1] != "so") || parts[0].empty()) continue;
    long pid = 0;
    const auto [pid_end, pid_error] =
        std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), pid);
    if (pid_error != std::errc() || pid_end != parts[2].data() + parts[2].size() || pid <= 0)
      continue;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto age = now - ModificationTime(st);
    // Its compile is over when its process is gone: a temporary is removed then (a log, which
    // a failed compile's message names, a day later), and anything a week old in any case.
    const bool gone = ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
    const std::chrono::minutes settle = log ? std::chrono::minutes(24 * 60) : kStaleAfter;
    if ((gone && age > settle) || age > std::chrono::hours(24 * 7)) {
      if (::unlink(it->path().c_str()) == 0) ++removed;
    }
  }
  ::close(lock);  // releases the lock
  return removed;
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
