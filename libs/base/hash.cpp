#include "base/hash.hpp"

#include <cstring>

namespace sparsetune {

namespace {
inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
}  // namespace

void StableHasher::MixWord(uint64_t word) {
  lane_a_ = Mix(lane_a_ ^ word) + 0x632be59bd9b4e019ULL;
  lane_b_ = Mix(lane_b_ + word * 0x9e3779b97f4a7c15ULL) ^ (lane_a_ >> 17);
}

void StableHasher::Update(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += bytes;
  while (bytes > 0 && pending_bytes_ != 0) {
    pending_ |= uint64_t(*p++) << (8 * pending_bytes_);
    --bytes;
    if (++pending_bytes_ == 8) {
      MixWord(pending_);
      pending_ = 0;
      pending_bytes_ = 0;
    }
  }
  while (bytes >= 8) {
    uint64_t word = 0;
    for (int b = 0; b < 8; ++b) word |= uint64_t(p[b]) << (8 * b);  // little-endian always
    MixWord(word);
    p += 8;
    bytes -= 8;
  }
  while (bytes > 0) {
    pending_ |= uint64_t(*p++) << (8 * pending_bytes_);
    ++pending_bytes_;
    --bytes;
  }
}

void StableHasher::UpdateU64(uint64_t value) {
  unsigned char bytes[8];
  for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(value >> (8 * b));
  Update(bytes, 8);
}

void StableHasher::UpdateString(std::string_view text) {
  UpdateU64(text.size());
  Update(text.data(), text.size());
}

uint64_t StableHasher::Digest64() const {
  uint64_t a = lane_a_, b = lane_b_;
  uint64_t tail = pending_ ^ (uint64_t(pending_bytes_) << 56);
  a = Mix(a ^ tail ^ length_);
  b = Mix(b + a);
  return Mix(a ^ (b << 1));
}

std::string StableHasher::HexDigest() const {
  uint64_t a = lane_a_, b = lane_b_;
  uint64_t tail = pending_ ^ (uint64_t(pending_bytes_) << 56);
  a = Mix(a ^ tail ^ length_);
  b = Mix(b + a + length_);
  uint64_t hi = Mix(a ^ (b << 1)), lo = Mix(b ^ (a >> 1) ^ 0x5851f42d4c957f2dULL);
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = digits[(hi >> (60 - 4 * i)) & 15];
    out[16 + i] = digits[(lo >> (60 - 4 * i)) & 15];
  }
  return out;
}

std::string StableHashHex(std::string_view text) {
  StableHasher h;
  h.Update(text.data(), text.size());
  return h.HexDigest();
}

}  // namespace sparsetune
