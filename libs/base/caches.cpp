#include "base/caches.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sparsetune {

namespace {

// "32768K", "32M": sysfs cache sizes; 0 when unreadable.
int64_t ParseCacheSize(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty()) return 0;
  int64_t scale = 1;
  const char unit = text.back();
  if (unit == 'K' || unit == 'k') scale = 1024;
  if (unit == 'M' || unit == 'm') scale = 1024 * 1024;
  if (unit == 'G' || unit == 'g') scale = int64_t(1024) * 1024 * 1024;
  if (scale > 1) text.pop_back();
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  return end && *end == '\0' && value > 0 ? value * scale : 0;
}

CacheSizes ReadCaches() {
  namespace fs = std::filesystem;
  CacheSizes out;
  int llc_level = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream level_file(entry.path() / "level"), size_file(entry.path() / "size");
    std::ifstream type_file(entry.path() / "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !std::getline(size_file, size)) continue;
    std::getline(type_file, type);
    if (type == "Instruction") continue;
    const int64_t bytes = ParseCacheSize(size);
    if (bytes <= 0) continue;
    if (level == 1) out.l1d = bytes;
    if (level == 2) out.l2 = bytes;
    if (level > llc_level || (level == llc_level && bytes > out.llc)) {
      llc_level = level;
      out.llc = bytes;
    }
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (out.llc <= 0 || llc_level < 3) {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > out.llc) out.llc = l3;
  }
#endif
  if (out.l1d <= 0) out.l1d = int64_t(32) << 10;
  if (out.l2 <= 0) out.l2 = int64_t(1) << 20;
  if (out.llc <= 0) out.llc = int64_t(32) << 20;
  return out;
}

}  // namespace

const CacheSizes& MachineCaches() {
  static const CacheSizes caches = ReadCaches();
  return caches;
}

}  // namespace sparsetune
