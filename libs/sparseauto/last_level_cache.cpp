// The last-level cache size that stage 4's memory limit derives from.

#include "base/caches.hpp"
#include "sparseauto/sparseauto.hpp"

namespace sparsetune {

int64_t DetectLlcBytes() {
  return MachineCaches().llc;
}

}  // namespace sparsetune
