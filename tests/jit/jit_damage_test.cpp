// A damaged cache never stops a run: an object that is empty, cut short, altered or not the
// one compiled for its key is compiled again and replaced; what killed compiles leave behind is
// swept, by one process at a time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "cli/cli_support.hpp"
#include "jit/jit.hpp"

namespace sparsetune {
namespace {

namespace fs = std::filesystem;

std::string Source(int value) {
  return std::string("#include <stdint.h>\nextern \"C\" {\n") + SPARSETUNE_KERNEL_ABI_TEXT +
         "\nint " SPARSETUNE_KERNEL_ENTRY "(const st_args*) { return " + std::to_string(value) +
         "; }\n}\n";
}

int Call(const CompiledKernel& kernel) {
  st_args args{};
  return kernel.function(&args);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

JitCacheLimits NoCap() {
  JitCacheLimits limits;
  limits.max_bytes = 0;
  return limits;
}

class JitDamage : public ::testing::Test {
 protected:
  std::string cache() const { return dir_.path() + "/jit"; }
  testing::TempDir dir_;
};

TEST_F(JitDamage, AFreshObjectCarriesItsTrailer) {
  Jit jit(cache(), NoCap());
  const CompiledKernel k = jit.Compile(Source(3));
  const std::string key = fs::path(k.library_path).stem().string();
  EXPECT_TRUE(Jit::VerifyCached(k.library_path, key));
  EXPECT_FALSE(Jit::VerifyCached(k.library_path, std::string(32, '0')));
  const std::string bytes = Slurp(k.library_path);
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(bytes.substr(bytes.size() - 64, 15), "sparsetune-jit1");
  EXPECT_EQ(bytes.substr(bytes.size() - 48, 32), key);
}

// Runs `body` in a child process and returns its exit code: a process that loaded a shared
// object finds it again by name, so each load of a damaged cache is a fresh process's, as it
// is for the commands.
int InChild(const std::function<int()>& body) {
  const pid_t child = fork();
  if (child == 0) _exit(body());
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Each damage, done to the cached object of Source(5) before another process loads it.
TEST_F(JitDamage, ADamagedObjectIsCompiledAgain) {
  const std::string library = Jit(cache(), NoCap()).LibraryPath(Source(5));
  const std::string other_library = Jit(cache(), NoCap()).LibraryPath(Source(6));
  auto compile = [&](int value) {
    return InChild([&] {
      Jit jit(cache(), NoCap());
      const CompiledKernel k = jit.Compile(Source(value));
      if (Call(k) != value) return 10;
      return k.cached ? 1 : 0;
    });
  };
  ASSERT_EQ(compile(5), 0);
  ASSERT_EQ(compile(6), 0);
  ASSERT_EQ(compile(5), 1);  // a hit
  const std::string good = Slurp(library), other = Slurp(other_library);
  std::string system_library;
  for (const char* candidate :
       {"/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"}) {
    if (fs::exists(candidate) && system_library.empty()) system_library = Slurp(candidate);
  }
  const std::vector<std::pair<std::string, std::function<std::string()>>> damages = {
      {"empty", [] { return std::string(); }},
      // Loading it raised SIGBUS.
      {"cut to 3000 bytes", [&] { return good.substr(0, 3000); }},
      {"cut short of its trailer", [&] { return good.substr(0, good.size() - 10); }},
      {"a byte changed",
       [&] {
         std::string bytes = good;
         bytes[bytes.size() / 2] ^= 0x55;
         return bytes;
       }},
      {"another kernel's object", [&] { return other; }},
      {"a system library", [&] { return system_library; }},
  };
  for (const auto& [what, damage] : damages) {
    Write(library, damage());
    EXPECT_EQ(compile(5), 0) << what << ": not compiled again, or wrong";
    EXPECT_EQ(Slurp(library), good) << what;
    EXPECT_EQ(compile(5), 1) << what << ": the rebuilt object is not a hit";
  }
}

// A dead process's id: a child that has exited and been reaped.
pid_t DeadPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

void Touch(const std::string& path, int seconds_ago) {
  Write(path, "partial");
  const timespec when{time(nullptr) - seconds_ago, 0};
  const timespec times[2] = {when, when};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST_F(JitDamage, TemporariesOfKilledCompilesAreSwept) {
  fs::create_directories(cache());
  const std::string dead = std::to_string(DeadPid());
  const std::string alive = std::to_string(getpid());
  const std::string key = std::string(32, 'a');
  const std::string d = cache() + "/";
  const int hour = 3600, day = 24 * hour;
  Touch(d + key + ".so." + dead + ".0", hour);          // gone, old: swept
  Touch(d + key + ".cpp." + dead + ".1", hour);         // gone, old: swept
  Touch(d + key + ".so." + dead + ".2", 10);            // gone but just now: kept
  Touch(d + key + ".so." + alive + ".3", hour);         // its compile may go on: kept
  Touch(d + key + ".cpp." + dead + ".4.log", hour);     // a failure's log: kept a day
  Touch(d + key + ".cpp." + dead + ".5.log", 2 * day);  // swept
  Touch(d + key + ".so." + alive + ".6", 8 * day);      // a week old: swept
  Touch(d + "notes.txt", 8 * day);                      // not ours: kept
  Touch(d + key + ".so", 8 * day);                      // a kernel (eviction's business)

  // Another process sweeping holds the lock: this one leaves everything.
  const int lock = ::open((d + ".sweep.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  Jit waiting(cache(), NoCap());
  EXPECT_EQ(waiting.SweepStaleTemporaries(), 0);
  ::close(lock);

  Jit jit(cache(), NoCap());
  EXPECT_EQ(jit.SweepStaleTemporaries(), 4);
  for (const std::string kept :
       {key + ".so." + dead + ".2", key + ".so." + alive + ".3", key + ".cpp." + dead + ".4.log",
        std::string("notes.txt"), key + ".so"})
    EXPECT_TRUE(fs::exists(d + kept)) << kept;
  for (const std::string gone : {key + ".so." + dead + ".0", key + ".cpp." + dead + ".1",
                                 key + ".cpp." + dead + ".5.log", key + ".so." + alive + ".6"})
    EXPECT_FALSE(fs::exists(d + gone)) << gone;
}

// Compile sweeps once, on its first call.
TEST_F(JitDamage, CompileSweepsOnItsFirstCall) {
  fs::create_directories(cache());
  const std::string stale =
      cache() + "/" + std::string(32, 'b') + ".so." + std::to_string(DeadPid()) + ".0";
  Touch(stale, 3600);
  Jit jit(cache(), NoCap());
  EXPECT_EQ(Call(jit.Compile(Source(9))), 9);
  EXPECT_FALSE(fs::exists(stale));
}

}  // namespace
}  // namespace sparsetune
