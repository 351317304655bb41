#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace sparsetune {

// An allocator for arrays of millions of elements that are written right after allocation
// (packed formats, sort scratch). Two savings over std::allocator:
// - elements are default-initialized, so resize() does not clear memory that is about to be
//   overwritten (value-initialization, e.g. assign(n, 0), still clears);
// - blocks of 2 MiB and more are 2 MiB aligned and advised for transparent huge pages, which
//   cuts the page faults of first touch 512-fold (they dominate packing time on virtual
//   machines);
// - smaller blocks are aligned to a cache line, so a kernel's vector loads of dense rows do not
//   straddle two lines (glibc's 16-byte alignment made SpMM's B rows cost 1.2x their time).
template <class T>
class BulkAllocator {
 public:
  using value_type = T;
  static constexpr size_t kHugePage = size_t(1) << 21;
  static constexpr std::align_val_t kCacheLine{64};

  BulkAllocator() = default;
  template <class U>
  BulkAllocator(const BulkAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return static_cast<T*>(::operator new(bytes, kCacheLine));
    const size_t rounded = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, rounded) != 0) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePage) {
      ::operator delete(p, kCacheLine);
    } else {
      std::free(p);
    }
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
  bool operator==(const BulkAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const BulkAllocator<U>&) const {
    return false;
  }
};

template <class T>
using BulkVector = std::vector<T, BulkAllocator<T>>;

}  // namespace sparsetune
