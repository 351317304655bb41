#include "io/read.hpp"

#include "io/read_internal.hpp"

namespace sparsetune {

CooTensor ReadTensorFile(const std::string& path, std::vector<std::string>* warnings) {
  using namespace io_internal;
  const ParseOptions options;
  switch (KindFromName(path)) {
    case FileKind::kArchive: {
      const LoadedText text = LoadFromArchive(path);
      return ParseMatrixMarket(text.bytes.view(), text.name, warnings, options);
    }
    case FileKind::kTns: {
      const Bytes bytes = LoadFile(path);
      return ParseUnchanged(bytes, path, [&] { return ParseTns(bytes.view(), path, options); });
    }
    case FileKind::kMatrixMarket:
      break;
  }
  const Bytes bytes = LoadFile(path);
  return ParseUnchanged(
      bytes, path, [&] { return ParseMatrixMarket(bytes.view(), path, warnings, options); });
}

}  // namespace sparsetune
