// libFuzzer target: the FROSTT .tns parser (and gzip inflation), sequential against chunked.

#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsetune;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  io_internal::Bytes inflated;
  if (!fuzz::MaybeGunzip(&text, &inflated)) return 0;
  const fuzz::Outcome a =
      fuzz::Run([&] { return io_internal::ParseTns(text, "fuzz.tns", fuzz::Sequential()); });
  const fuzz::Outcome b =
      fuzz::Run([&] { return io_internal::ParseTns(text, "fuzz.tns", fuzz::Chunked()); });
  fuzz::CheckSame(a, b);
  return 0;
}
