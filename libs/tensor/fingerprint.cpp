#include "tensor/fingerprint.hpp"

#include "base/errors.hpp"
#include "base/hash.hpp"

namespace sparsetune {

std::string PatternFingerprint(const CooTensor& tensor) {
  if (!tensor.IsCanonical()) throw InternalError("fingerprint of a non-canonical tensor");
  StableHasher hasher;
  hasher.UpdateString("sparsetune-pattern-v1");
  hasher.UpdateU64(tensor.dims.size());
  for (int64_t d : tensor.dims) hasher.UpdateU64(static_cast<uint64_t>(d));
  hasher.UpdateU64(static_cast<uint64_t>(tensor.nnz()));
  // Mode-major: each coordinate array is contiguous, so hashing is one pass per mode.
  for (const auto& c : tensor.coords) hasher.Update(c.data(), c.size() * sizeof(int32_t));
  return hasher.HexDigest();
}

}  // namespace sparsetune
