#include "version.hpp"

namespace sparsetune::cli {

const char* SparsetuneVersion() {
  return SPARSETUNE_VERSION;
}

std::string VersionText() {
  return std::string("sparsetune ") + SparsetuneVersion() + " (git " + SparsetuneRevision() + ")";
}

}  // namespace sparsetune::cli
