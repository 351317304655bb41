// Large arrays keep their memory for the next array of the same size (tune packs one matrix for
// dozens of schedules), and bench can hand it all back to time a preparation on fresh memory.
#include <gtest/gtest.h>

#include "base/bulk_allocator.hpp"

namespace sparsetune {
namespace {

constexpr size_t kFloats = (size_t(6) << 20) / sizeof(float);  // 6 MiB: a kept size

TEST(BulkMemory, AFreedLargeArrayIsReusedBySameSizeAndReleasedOnRequest) {
  bulk_memory::ReleaseKept();
  const float* first = nullptr;
  {
    BulkVector<float> a(kFloats);
    a[kFloats - 1] = 1.0f;
    first = a.data();
  }
  EXPECT_EQ(bulk_memory::KeptBytes(), int64_t(6) << 20);
  {
    BulkVector<float> same(kFloats);
    EXPECT_EQ(same.data(), first);  // the kept block, not fresh memory
    EXPECT_EQ(bulk_memory::KeptBytes(), 0);
    // Arrays only a builder reads are kept apart from those a kernel reads (huge pages).
    std::vector<float, ScratchAllocator<float>> scratch(kFloats);
    EXPECT_NE(scratch.data(), first);
  }
  EXPECT_EQ(bulk_memory::KeptBytes(), int64_t(12) << 20);
  {
    BulkVector<float> other(kFloats / 2);  // another size: fresh
    EXPECT_NE(other.data(), first);
  }
  bulk_memory::ReleaseKept();
  EXPECT_EQ(bulk_memory::KeptBytes(), 0);
}

TEST(BulkMemory, SmallArraysAreNotKept) {
  bulk_memory::ReleaseKept();
  { BulkVector<float> small(1000); }
  EXPECT_EQ(bulk_memory::KeptBytes(), 0);
}

TEST(BulkMemory, ValueInitializationStillClearsAReusedBlock) {
  bulk_memory::ReleaseKept();
  {
    BulkVector<int32_t> dirty(kFloats);
    for (size_t e = 0; e < kFloats; e += 4096) dirty[e] = 7;
  }
  BulkVector<int32_t> cleared(kFloats, 0);
  for (size_t e = 0; e < kFloats; e += 4096) ASSERT_EQ(cleared[e], 0) << e;
  bulk_memory::ReleaseKept();
}

}  // namespace
}  // namespace sparsetune
