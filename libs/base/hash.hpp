#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sparsetune {

// A stable, platform-independent 128-bit streaming hash (two independent 64-bit lanes of a
// multiply-xorshift mix). Used for pattern fingerprints and content-addressed caches, so its
// output must never change between versions.
class StableHasher {
 public:
  void Update(const void* data, size_t bytes);
  void UpdateU64(uint64_t value);
  void UpdateString(std::string_view text);
  // 32 lowercase hex digits.
  std::string HexDigest() const;
  uint64_t Digest64() const;

 private:
  void MixWord(uint64_t word);
  uint64_t lane_a_ = 0x9e3779b97f4a7c15ULL;
  uint64_t lane_b_ = 0xc2b2ae3d27d4eb4fULL;
  uint64_t length_ = 0;
  uint64_t pending_ = 0;
  int pending_bytes_ = 0;
};

std::string StableHashHex(std::string_view text);

}  // namespace sparsetune
