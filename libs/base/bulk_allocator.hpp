#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace sparsetune {

// An allocator for arrays of millions of elements that are written right after allocation
// (packed formats, dense operands, sort scratch). Savings over std::allocator:
// - elements are default-initialized, so resize() does not clear memory that is about to be
//   overwritten (value-initialization, e.g. assign(n, 0), still clears);
// - blocks of 2 MiB and more are 2 MiB aligned and, with kHugePages, advised for transparent
//   huge pages: a kernel's gathers from them miss the TLB far less, and its streams run on
//   without a prefetcher stopping at every 4 KiB page. The first touch of a huge page can cost
//   more than 512 small ones (the kernel compacts memory to find it: 0.5-3.8 GB/s against
//   2.4 GB/s on a virtual machine), so arrays a kernel never reads go without (ScratchAllocator);
// - smaller blocks are aligned to a cache line, so a kernel's vector loads of dense rows do not
//   straddle two lines (glibc's 16-byte alignment made SpMM's B rows cost 1.2x their time).
// Blocks of 2 MiB and more are kept when freed, up to a bound, for the next allocation of the
// same size: tune and collect pack one matrix for dozens of schedules, and each pack's arrays
// have the sizes of the last one's. Fresh memory is faulted in page by page (on a virtual
// machine, 2 GB/s: two thirds of a large graph's tune was the kernel mapping and clearing
// pages), kept memory is not.
namespace bulk_memory {
// A kept block of exactly `bytes` (a multiple of 2 MiB) from allocations `huge_pages` alike, or
// nullptr.
void* TakeKept(size_t bytes, bool huge_pages);
// Keeps the block, or returns false when the bound is reached (the caller frees it).
bool Keep(void* block, size_t bytes, bool huge_pages);
// Frees every kept block: bench does so before timing each contender's preparation, so that
// it is timed on fresh memory, as a caller's first preparation is.
void ReleaseKept();
int64_t KeptBytes();
}  // namespace bulk_memory

template <class T, bool kHugePages>
class BasicBulkAllocator {
 public:
  using value_type = T;
  template <class U>
  struct rebind {
    using other = BasicBulkAllocator<U, kHugePages>;
  };
  static constexpr size_t kHugePage = size_t(1) << 21;
  static constexpr std::align_val_t kCacheLine{64};

  BasicBulkAllocator() = default;
  template <class U>
  BasicBulkAllocator(const BasicBulkAllocator<U, kHugePages>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return static_cast<T*>(::operator new(bytes, kCacheLine));
    const size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    if (void* kept = bulk_memory::TakeKept(rounded, kHugePages)) return static_cast<T*>(kept);
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, rounded) != 0) throw std::bad_alloc();
    if (kHugePages) madvise(p, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      ::operator delete(p, kCacheLine);
      return;
    }
    const size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    if (!bulk_memory::Keep(p, rounded, kHugePages)) std::free(p);
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }

  template <class U>
  bool operator==(const BasicBulkAllocator<U, kHugePages>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const BasicBulkAllocator<U, kHugePages>&) const {
    return false;
  }
};

// Arrays a kernel reads: packed formats, dense operands.
template <class T>
using BulkAllocator = BasicBulkAllocator<T, true>;
// Arrays only their builder reads: sort keys, scratch, per-entry positions.
template <class T>
using ScratchAllocator = BasicBulkAllocator<T, false>;

template <class T>
using BulkVector = std::vector<T, BulkAllocator<T>>;

}  // namespace sparsetune
