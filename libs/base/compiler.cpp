#include "base/compiler.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "base/hash.hpp"
#include "base/paths.hpp"

namespace sparsetune {

namespace {

// The executable a command name runs: searched on PATH when it has no slash, links resolved.
std::string ResolveExecutable(const std::string& command) {
  std::string found;
  if (command.find('/') != std::string::npos) {
    found = command;
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
      if (::access(candidate.c_str(), X_OK) == 0) {
        found = candidate;
        break;
      }
    }
  }
  if (found.empty()) return "";
  char resolved[PATH_MAX];
  return ::realpath(found.c_str(), resolved) ? std::string(resolved) : "";
}

std::string RunVersion(const std::string& compiler) {
  const std::string command = ShellQuote(compiler) + " --version 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return "";
  char buffer[512];
  std::string first;
  if (std::fgets(buffer, sizeof buffer, pipe)) first = buffer;
  // Drain so the child does not die of SIGPIPE while we wait for it.
  while (std::fgets(buffer, sizeof buffer, pipe)) {
  }
  ::pclose(pipe);
  while (!first.empty() && (first.back() == '\n' || first.back() == '\r' || first.back() == ' '))
    first.pop_back();
  return first;
}

}  // namespace

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string CompilerVersionLine(const std::string& compiler) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string executable = ResolveExecutable(compiler);
  struct stat st;
  if (executable.empty() || ::stat(executable.c_str(), &st) != 0) return RunVersion(compiler);
  StableHasher key;
  key.UpdateString(compiler);
  key.UpdateString(executable);
  key.UpdateU64(static_cast<uint64_t>(st.st_size));
  key.UpdateU64(static_cast<uint64_t>(st.st_mtim.tv_sec));
  key.UpdateU64(static_cast<uint64_t>(st.st_mtim.tv_nsec));
  const std::string dir = CacheDirectory() + "/compilers";
  const std::string path = dir + "/" + key.HexDigest() + ".txt";
  {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
  }
  const std::string line = RunVersion(compiler);
  if (line.empty()) return line;
  try {
    EnsureDirectory(dir);
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp);
      out << line << "\n";
    }
    std::rename(tmp.c_str(), path.c_str());  // atomic: readers see the whole line or none
  } catch (const std::exception&) {
    // A cache that cannot be written only costs the next call the compiler's start.
  }
  return line;
}

}  // namespace sparsetune
