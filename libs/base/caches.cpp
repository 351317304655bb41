#include "base/caches.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>

namespace sparsetune {

namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return line.substr(begin, line.find_last_not_of(" \t\r\n") - begin + 1);
}

// "32K", "512K", "32768K", "1M" (or "KiB", "MiB") as sysfs writes cache sizes; 0 when unreadable.
int64_t ParseCacheSize(const std::string& text) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || value <= 0) return 0;
  const std::string unit = end;
  if (unit.empty()) return value;
  if (unit == "K" || unit == "KiB") return int64_t(value) << 10;
  if (unit == "M" || unit == "MiB") return int64_t(value) << 20;
  if (unit == "G" || unit == "GiB") return int64_t(value) << 30;
  return 0;
}

}  // namespace

CacheSizes ReportedCaches() {
  CacheSizes out;
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int index = 0; index < 16; ++index) {
    const std::string dir = base + std::to_string(index) + "/";
    const std::string level = FirstLine(dir + "level");
    if (level.empty()) break;
    const std::string type = FirstLine(dir + "type");
    const int64_t size = ParseCacheSize(FirstLine(dir + "size"));
    if (level == "1" && type == "Data") out.l1d = size;
    if (level == "2" && type != "Instruction") out.l2 = size;
    if (level == "3" && type != "Instruction") out.llc = size;
  }
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (out.l1d == 0) out.l1d = std::max(0L, sysconf(_SC_LEVEL1_DCACHE_SIZE));
  if (out.l2 == 0) out.l2 = std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE));
  if (out.llc == 0) out.llc = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
#endif
  return out;
}

const CacheSizes& MachineCaches() {
  static const CacheSizes caches = [] {
    CacheSizes c = ReportedCaches();
    if (c.llc <= 0) c.llc = c.l2;
    if (c.l1d <= 0) c.l1d = int64_t(32) << 10;
    if (c.l2 <= 0) c.l2 = int64_t(1) << 20;
    if (c.llc <= 0) c.llc = int64_t(32) << 20;
    return c;
  }();
  return caches;
}

}  // namespace sparsetune
