// libFuzzer target: the Matrix Market parser (and gzip inflation), sequential against chunked.

#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsetune;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  io_internal::Bytes inflated;
  if (!fuzz::MaybeGunzip(&text, &inflated)) return 0;
  std::vector<std::string> warnings_a, warnings_b;
  const fuzz::Outcome a = fuzz::Run([&] {
    return io_internal::ParseMatrixMarket(text, "fuzz.mtx", &warnings_a, fuzz::Sequential());
  });
  const fuzz::Outcome b = fuzz::Run([&] {
    return io_internal::ParseMatrixMarket(text, "fuzz.mtx", &warnings_b, fuzz::Chunked());
  });
  fuzz::CheckSame(a, b);
  if (!a.failed && a.tensor.order() != 2) std::abort();
  if (warnings_a != warnings_b || warnings_a.size() > 1) std::abort();
  return 0;
}
