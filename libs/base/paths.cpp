#include "base/paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/errors.hpp"

namespace sparsetune {

namespace {
std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return (value && *value) ? std::string(value) : fallback;
}
std::string Home() {
  return EnvOr("HOME", "/tmp");
}
}  // namespace

std::string XdgDataHome() {
  return EnvOr("XDG_DATA_HOME", Home() + "/.local/share");
}
std::string XdgCacheHome() {
  return EnvOr("XDG_CACHE_HOME", Home() + "/.cache");
}

std::string DefaultDatabasePath() {
  return EnvOr("SPARSETUNE_DB", XdgDataHome() + "/sparsetune/sparsetune.db");
}

std::string CacheDirectory() {
  return EnvOr("SPARSETUNE_CACHE", XdgCacheHome() + "/sparsetune");
}

void EnsureDirectory(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw InternalError("cannot create directory " + path + ": " + ec.message());
}

}  // namespace sparsetune
