// The last-level cache size that stage 4's memory limit derives from.

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sparseauto/sparseauto.hpp"

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

}  // namespace

int64_t DetectLlcBytes() {
  namespace fs = std::filesystem;
  int best_level = 0;
  int64_t best = 0;
  std::error_code ec;
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    std::ifstream level_file(entry.path() / "level"), size_file(entry.path() / "size");
    std::ifstream type_file(entry.path() / "type");
    int level = 0;
    std::string size, type;
    if (!(level_file >> level) || !std::getline(size_file, size)) continue;
    std::getline(type_file, type);
    if (type == "Instruction") continue;
    const int64_t bytes = ParseCacheSize(size);
    if (bytes > 0 && (level > best_level || (level == best_level && bytes > best))) {
      best_level = level;
      best = bytes;
    }
  }
  if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return l3;
#endif
  return int64_t(32) * 1024 * 1024;
}

}  // namespace sparsetune
