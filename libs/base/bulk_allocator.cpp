#include "base/bulk_allocator.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "base/memory.hpp"

namespace sparsetune {
namespace bulk_memory {

namespace {

struct KeptBlocks {
  std::mutex mutex;
  std::multimap<size_t, void*> blocks[2];  // by size; [1]: advised for huge pages
  size_t bytes = 0;
  size_t bound = 0;  // set on the first Keep
};

KeptBlocks& Kept() {
  static KeptBlocks* kept = new KeptBlocks;  // never destroyed: allocators free at exit too
  return *kept;
}

}  // namespace

void* TakeKept(size_t bytes, bool huge_pages) {
  KeptBlocks& k = Kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  auto& blocks = k.blocks[huge_pages];
  auto found = blocks.find(bytes);
  if (found == blocks.end()) return nullptr;
  void* block = found->second;
  blocks.erase(found);
  k.bytes -= bytes;
  return block;
}

bool Keep(void* block, size_t bytes, bool huge_pages) {
  KeptBlocks& k = Kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  if (k.bound == 0) {
    // An eighth of what the process may allocate (at most 4 GiB): enough for one pack's
    // arrays of a 20M-nonzero matrix, little enough not to crowd anything out.
    const int64_t available = MemoryAvailableToProcess() + int64_t(k.bytes);
    k.bound = size_t(std::clamp<int64_t>(available / 8, 0, int64_t(4) << 30));
  }
  if (k.bytes + bytes > k.bound) return false;
  k.blocks[huge_pages].emplace(bytes, block);
  k.bytes += bytes;
  return true;
}

void ReleaseKept() {
  KeptBlocks& k = Kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  for (auto& blocks : k.blocks) {
    for (auto& [bytes, block] : blocks) std::free(block);
    blocks.clear();
  }
  k.bytes = 0;
}

int64_t KeptBytes() {
  KeptBlocks& k = Kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  return int64_t(k.bytes);
}

}  // namespace bulk_memory
}  // namespace sparsetune
