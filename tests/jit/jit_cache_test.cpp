// The JIT's content-addressed cache: a kernel compiles once and loads from the cache after,
// and the cap removes the least recently used kernels, never one in recent use.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "base/errors.hpp"
#include "jit/jit.hpp"
#include "cli/cli_support.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

// A kernel that returns `value`; distinct values give distinct cache entries.
std::string Source(int value) {
  return std::string("#include <stdint.h>\nextern \"C\" {\n") + SPARSETUNE_KERNEL_ABI_TEXT +
         "\nint " SPARSETUNE_KERNEL_ENTRY "(const st_args*) { return " + std::to_string(value) +
         "; }\n}\n";
}

int Call(const CompiledKernel& kernel) {
  st_args args{};
  return kernel.function(&args);
}

// Sets the last use of a cached kernel (every file of it) `seconds_ago`.
void Age(const Jit& jit, const std::string& library_path, int seconds_ago) {
  const std::string stem = fs::path(library_path).stem().string();
  const timespec when{time(nullptr) - seconds_ago, 0};
  const timespec times[2] = {when, when};
  for (const auto& entry : fs::directory_iterator(jit.cache_dir())) {
    if (entry.path().filename().string().rfind(stem, 0) == 0)
      ASSERT_EQ(utimensat(AT_FDCWD, entry.path().c_str(), times, 0), 0);
  }
}

class JitCache : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<testing::TempDir>(); }
  std::string cache() const { return dir_->path() + "/jit"; }
  std::unique_ptr<testing::TempDir> dir_;
};

TEST_F(JitCache, CompilesOnceThenLoadsFromTheCache) {
  JitCacheLimits no_cap;
  no_cap.max_bytes = 0;
  {
    Jit jit(cache(), no_cap);
    const CompiledKernel first = jit.Compile(Source(7));
    EXPECT_FALSE(first.cached);
    EXPECT_GT(first.compile_ms, 0);
    EXPECT_EQ(Call(first), 7);
    EXPECT_TRUE(fs::exists(first.library_path));
    const CompiledKernel again = jit.Compile(Source(7));  // loaded in this process
    EXPECT_TRUE(again.cached);
    EXPECT_EQ(again.function, first.function);
  }
  Jit other(cache(), no_cap);  // another process's view: the shared object on disk
  const CompiledKernel loaded = other.Compile(Source(7));
  EXPECT_TRUE(loaded.cached);
  EXPECT_EQ(loaded.compile_ms, 0);
  EXPECT_EQ(Call(loaded), 7);
  EXPECT_EQ(Call(other.Compile(Source(8))), 8);
}

TEST_F(JitCache, TheCapRemovesTheLeastRecentlyUsedFirst) {
  JitCacheLimits no_cap;
  no_cap.max_bytes = 0;
  Jit fill(cache(), no_cap);
  const std::string oldest = fill.Compile(Source(1)).library_path;
  const std::string middle = fill.Compile(Source(2)).library_path;
  const std::string newest = fill.Compile(Source(3)).library_path;
  Age(fill, oldest, 3 * 3600);
  Age(fill, middle, 2 * 3600);
  Age(fill, newest, 1 * 3600);
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(cache())) total += fs::file_size(entry.path());

  // Just over the cap: the oldest kernel goes, and nothing else.
  JitCacheLimits limits;
  limits.max_bytes = total - 1;
  limits.min_idle_seconds = 60;
  Jit capped(cache(), limits);
  EXPECT_GT(capped.EvictLeastRecentlyUsed(), 0);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(fs::path(oldest).replace_extension(".cpp")));
  EXPECT_TRUE(fs::exists(middle));
  EXPECT_TRUE(fs::exists(newest));

  // A removed kernel is compiled again, and works.
  const CompiledKernel rebuilt = capped.Compile(Source(1));
  EXPECT_FALSE(rebuilt.cached);
  EXPECT_EQ(Call(rebuilt), 1);
}

TEST_F(JitCache, KernelsInRecentUseStayWhateverTheCap) {
  JitCacheLimits limits;
  limits.max_bytes = 1;  // everything is over the cap
  limits.min_idle_seconds = 600;
  Jit jit(cache(), limits);
  const std::string idle = jit.Compile(Source(11)).library_path;
  const std::string recent = jit.Compile(Source(12)).library_path;
  Age(jit, idle, 3600);
  jit.EvictLeastRecentlyUsed();
  EXPECT_FALSE(fs::exists(idle));
  EXPECT_TRUE(fs::exists(recent));
  // A cache hit marks the kernel used: aged, then loaded by another Jit, it stays.
  Age(jit, recent, 3600);
  Jit reader(cache(), limits);
  EXPECT_TRUE(reader.Compile(Source(12)).cached);
  reader.EvictLeastRecentlyUsed();
  EXPECT_TRUE(fs::exists(recent));
}

// A library without the kernel entry compiles with the same flags and cache; its own functions
// are found by name, and Compile still refuses it.
TEST_F(JitCache, LibrariesExportTheirOwnFunctions) {
  JitCacheLimits no_cap;
  no_cap.max_bytes = 0;
  const std::string source = "extern \"C\" int twice(int x) { return 2 * x; }\n";
  {
    Jit jit(cache(), no_cap);
    const CompiledKernel library = jit.CompileLibrary(source);
    EXPECT_FALSE(library.cached);
    EXPECT_EQ(library.function, nullptr);
    auto twice = reinterpret_cast<int (*)(int)>(Jit::Symbol(library, "twice"));
    ASSERT_NE(twice, nullptr);
    EXPECT_EQ(twice(21), 42);
    EXPECT_EQ(Jit::Symbol(library, "thrice"), nullptr);
    EXPECT_THROW(jit.Compile(source), InternalError);
  }
  Jit again(cache(), no_cap);
  const CompiledKernel cached = again.CompileLibrary(source);
  EXPECT_TRUE(cached.cached);
  EXPECT_NE(Jit::Symbol(cached, "twice"), nullptr);
  // A kernel source through CompileLibrary has its entry too.
  EXPECT_EQ(Call(again.CompileLibrary(Source(5))), 5);
}

TEST(JitCacheLimits, EnvironmentSetsTheCapOrIsRefused) {
  const char* saved = getenv("SPARSETUNE_JIT_CACHE_MB");
  const std::string restore = saved ? saved : "";
  setenv("SPARSETUNE_JIT_CACHE_MB", "64", 1);
  EXPECT_EQ(JitCacheLimits::FromEnvironment().max_bytes, int64_t(64) << 20);
  setenv("SPARSETUNE_JIT_CACHE_MB", "0", 1);
  EXPECT_EQ(JitCacheLimits::FromEnvironment().max_bytes, 0);
  for (const char* bad : {"-1", "12MB", "lots", "1.5"}) {
    setenv("SPARSETUNE_JIT_CACHE_MB", bad, 1);
    EXPECT_THROW(JitCacheLimits::FromEnvironment(), InputError) << bad;
  }
  if (saved) setenv("SPARSETUNE_JIT_CACHE_MB", restore.c_str(), 1);
  else unsetenv("SPARSETUNE_JIT_CACHE_MB");
}

}  // namespace
}  // namespace sparsetune
