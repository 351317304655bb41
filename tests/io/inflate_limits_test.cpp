// Decompression stops at a ratio or a size: a gzip bomb is refused while it inflates, before
// it fills memory, while a small file that compresses very well is still read.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "base/errors.hpp"
#include "io/read_internal.hpp"

namespace sparsetune {
namespace {

// One gzip member of `bytes` zeros.
std::string GzipZeros(size_t bytes) {
  const std::string zeros(bytes, '\0');
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, zeros.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
  zs.avail_in = static_cast<uInt>(zeros.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(InflateLimits, ABombIsRefusedPastTheRatio) {
  const std::string member = GzipZeros(size_t(16) << 20);
  std::string bomb;
  for (int k = 0; k < 16; ++k) bomb += member;  // 256 MiB from about 250 KB
  try {
    io_internal::Gunzip(bomb, "bomb.mtx.gz");
    ADD_FAILURE() << "inflated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bomb.mtx.gz: compressed data inflates to over 200 "
                                         "times its size"),
              std::string::npos)
        << e.what();
    // Stopped on its way, not at the end.
    EXPECT_EQ(std::string(e.what()).find("256 MiB"), std::string::npos) << e.what();
  }
}

TEST(InflateLimits, SmallDataCompressingWellIsRead) {
  const std::string member = GzipZeros(size_t(16) << 20);
  const io_internal::Bytes out = io_internal::Gunzip(member + member, "zeros.gz");
  EXPECT_EQ(out.size(), size_t(32) << 20);
}

TEST(InflateLimits, TheSizeLimitHolds) {
  const std::string member = GzipZeros(size_t(1) << 20);
  try {
    io_internal::Gunzip(member + member, "two.gz", size_t(1) << 20);
    ADD_FAILURE() << "inflated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("inflates to more than 1048576 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_GE(io_internal::InputByteLimit(), size_t(64) << 20);
}

}  // namespace
}  // namespace sparsetune
