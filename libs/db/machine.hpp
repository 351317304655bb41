#pragma once

#include <cstdint>
#include <string>

namespace sparsetune {

// The hardware and compiler a time was measured with. Times are only comparable within one
// machine, so every measurement and winner refers to one.
struct MachineInfo {
  std::string cpu_model;         // "model name" in /proc/cpuinfo
  int cores = 0;                 // physical cores
  int threads = 0;               // logical CPUs online
  int64_t l1d_bytes = 0;         // per core
  int64_t l2_bytes = 0;          // per core (or per cluster, as the kernel reports it)
  int64_t l3_bytes = 0;          // one last-level cache instance
  std::string isa;               // space-separated SIMD features, e.g. "avx2 avx512f fma"
  std::string compiler;          // first line of `c++ --version`
  std::string compiler_version;  // e.g. "12.2.0"
  std::string flags;             // flags the kernels are compiled with
};

// Stable hash of every field: identical hardware, compiler and flags give the same key on any
// host, so measurements imported from elsewhere attach to the right machine. 32 hex digits.
std::string MachineKey(const MachineInfo& machine);

// Reads /proc/cpuinfo and the caches as sysfs reports them (ReportedCaches) and runs
// `compiler --version`. Fields that cannot be found stay empty or zero; never throws.
MachineInfo DetectMachine(const std::string& compiler = "c++", const std::string& flags = "");

}  // namespace sparsetune
