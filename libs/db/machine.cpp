#include "db/machine.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "base/caches.hpp"
#include "base/compiler.hpp"
#include "base/hash.hpp"
#include "base/threads.hpp"

namespace sparsetune {

namespace {

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return std::string();
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

void DetectCpu(MachineInfo& machine) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, physical_id = "0";
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> flags;
  bool have_flags = false;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
    if (key == "model name" && machine.cpu_model.empty()) {
      machine.cpu_model = value;
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      cores.insert({physical_id, value});
    } else if ((key == "flags" || key == "Features") && !have_flags) {
      have_flags = true;
      std::istringstream words(value);
      for (std::string word; words >> word;) flags.insert(word);
    }
  }
  // Only the features that change which code a compiler emits for our kernels.
  static const char* kIsa[] = {"sse4_2",      "avx",      "avx2",     "fma",      "avx512f",
                               "avx512bw",    "avx512vl", "avx512dq", "avx512cd", "avx512_vnni",
                               "avx512_bf16", "amx_tile", "asimd",    "sve",      "sve2"};
  for (const char* name : kIsa) {
    if (!flags.count(name)) continue;
    if (!machine.isa.empty()) machine.isa += ' ';
    machine.isa += name;
  }
  machine.threads = HardwareThreads();
  // /proc/cpuinfo lists every core of the machine; a process confined to fewer CPUs (taskset,
  // a cgroup) uses at most one core per usable thread.
  machine.cores = cores.empty() ? machine.threads : std::min(int(cores.size()), machine.threads);
}

void DetectCaches(MachineInfo& machine) {
  const CacheSizes reported = ReportedCaches();
  machine.l1d_bytes = reported.l1d;
  machine.l2_bytes = reported.l2;
  machine.l3_bytes = reported.llc;
}

void DetectCompiler(MachineInfo& machine, const std::string& compiler) {
  const std::string first = Trim(CompilerVersionLine(compiler));
  machine.compiler = first;
  // The version is the last word that starts with a digit and contains a dot:
  // "c++ (Debian 12.2.0-14) 12.2.0", "Debian clang version 14.0.6".
  std::istringstream words(first);
  for (std::string word; words >> word;) {
    if (!word.empty() && isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('.') != std::string::npos)
      machine.compiler_version = word;
  }
}

}  // namespace

std::string MachineKey(const MachineInfo& machine) {
  StableHasher hasher;
  hasher.UpdateString("sparsetune-machine-1");
  hasher.UpdateString(machine.cpu_model);
  hasher.UpdateU64(uint64_t(machine.cores));
  hasher.UpdateU64(uint64_t(machine.threads));
  hasher.UpdateU64(uint64_t(machine.l1d_bytes));
  hasher.UpdateU64(uint64_t(machine.l2_bytes));
  hasher.UpdateU64(uint64_t(machine.l3_bytes));
  hasher.UpdateString(machine.isa);
  hasher.UpdateString(machine.compiler);
  hasher.UpdateString(machine.compiler_version);
  hasher.UpdateString(machine.flags);
  return hasher.HexDigest();
}

MachineInfo DetectMachine(const std::string& compiler, const std::string& flags) {
  MachineInfo machine;
  DetectCpu(machine);
  DetectCaches(machine);
  DetectCompiler(machine, compiler);
  machine.flags = flags;
  return machine;
}

}  // namespace sparsetune
