#include "base/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace sparsetune {

namespace {

// MemAvailable from /proc/meminfo, else half the physical memory.
int64_t SystemAvailable() {
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char key[64];
    long long kib = 0;
    char unit[16];
    while (std::fscanf(f, "%63s %lld %15s", key, &kib, unit) == 3) {
      if (std::strcmp(key, "MemAvailable:") == 0) {
        std::fclose(f);
        return int64_t(kib) * 1024;
      }
    }
    std::fclose(f);
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * page / 2 : int64_t(1) << 33;
}

// What the address-space limit leaves beyond what is mapped now.
int64_t AddressSpaceLeft() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return INT64_MAX;
  int64_t mapped = 0;
  std::ifstream status("/proc/self/statm");
  int64_t pages = 0;
  if (status >> pages) mapped = pages * ::sysconf(_SC_PAGE_SIZE);
  return std::max<int64_t>(0, int64_t(limit.rlim_cur) - mapped);
}

// A cgroup (v2) memory.max less its memory.current.
int64_t CgroupLeft() {
  std::ifstream max("/sys/fs/cgroup/memory.max"), current("/sys/fs/cgroup/memory.current");
  std::string max_text;
  int64_t limit = 0, used = 0;
  if (!(max >> max_text) || max_text == "max" || !(current >> used)) return INT64_MAX;
  try {
    limit = std::stoll(max_text);
  } catch (...) {
    return INT64_MAX;
  }
  return std::max<int64_t>(0, limit - used);
}

}  // namespace

int64_t MemoryAvailableToProcess() {
  return std::min({SystemAvailable(), AddressSpaceLeft(), CgroupLeft()});
}

}  // namespace sparsetune
