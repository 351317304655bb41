#pragma once

#include <string>

namespace sparsetune {

// XDG base directories with their documented fallbacks; created on demand.
std::string XdgDataHome();
std::string XdgCacheHome();
// $SPARSETUNE_DB, else $XDG_DATA_HOME/sparsetune/sparsetune.db.
std::string DefaultDatabasePath();
// $SPARSETUNE_CACHE, else $XDG_CACHE_HOME/sparsetune.
std::string CacheDirectory();
// mkdir -p; throws InternalError naming the path on failure.
void EnsureDirectory(const std::string& path);

}  // namespace sparsetune
