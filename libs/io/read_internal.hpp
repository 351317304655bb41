#pragma once

// Internals of the readers, shared by the parsers, the tests, the fuzz targets and the
// benchmark. Not part of the io interface.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune::io_internal {

// Owns a byte buffer without zero-filling it first (files can be hundreds of MB): either
// malloc'd memory or a read-only mapping of a file. A mapped file that another process
// truncates while it is read would raise SIGBUS on the pages past its new end; a handler
// replaces those pages with zeros instead and marks the buffer changed(), so that the reader
// reports the file (FailIfChanged) rather than dying.
class Bytes {
 public:
  Bytes() = default;
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  Bytes(Bytes&& other) noexcept { *this = std::move(other); }
  Bytes& operator=(Bytes&& other) noexcept;
  ~Bytes() { Release(); }

  // Maps `size` bytes of the open file `fd` read-only; false when the system refuses (or
  // too many mappings are guarded at once).
  bool Map(int fd, size_t size);
  // True when the mapped file lost pages (was truncated) while this buffer held it.
  bool changed() const;

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_, size_}; }

  // Grows the allocation to at least `capacity` bytes; throws std::bad_alloc on failure.
  void Reserve(size_t capacity);
  void Resize(size_t size) {
    Reserve(size);
    size_ = size;
  }

 private:
  void Release();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool mapped_ = false;
  int guard_ = -1;        // slot of the SIGBUS guard while mapped
  bool changed_ = false;  // the mapping lost pages before it was copied or released
};

// Throws InputError naming `name` when `bytes` changed while it was read.
void FailIfChanged(const Bytes& bytes, const std::string& name);

// Runs `parse` over `bytes`; when the file changed meanwhile, that is the error reported,
// whether the parse failed on the damaged text or not.
template <typename Parse>
auto ParseUnchanged(const Bytes& bytes, const std::string& name, Parse&& parse) {
  try {
    auto result = parse();
    FailIfChanged(bytes, name);
    return result;
  } catch (...) {
    FailIfChanged(bytes, name);
    throw;
  }
}

// The contents of a file, decompressed, and the name to use in messages.
struct LoadedText {
  Bytes bytes;
  std::string name;
};

enum class FileKind { kMatrixMarket, kTns, kArchive };

// Chooses the parser from the file name (.tar.gz/.tgz, .tns[.gz], anything else Matrix Market).
FileKind KindFromName(const std::string& path);

// Reads a plain or gzip-compressed file (detected by its magic bytes), whole. A directory or a
// device is refused; a pipe or socket is read up to InputByteLimit().
Bytes LoadFile(const std::string& path);

// How many bytes a stream (pipe, socket) or decompressed data may reach:
// $SPARSETUNE_MAX_INPUT_MB when set, else half the memory available when first asked. Throws
// InputError when the variable is not a positive whole number.
size_t InputByteLimit();
// Decompression stops at this ratio of output to input once past kInflateRatioFrom bytes:
// real Matrix Market and FROSTT text compresses 3 to 10 times; gzip bombs about 1000 times.
constexpr double kMaxInflateRatio = 200;
constexpr size_t kInflateRatioFrom = size_t(64) << 20;

// Picks Name/Name.mtx (or else the only .mtx) out of a SuiteSparse .tar.gz archive.
LoadedText LoadFromArchive(const std::string& path);

// Inflates gzip (or zlib) data, concatenated members included. Throws InputError naming
// `name` when the data is corrupt or truncated, inflates to more than `max_output` bytes, or
// more than kMaxInflateRatio times its size (past kInflateRatioFrom bytes).
Bytes Gunzip(std::string_view compressed, const std::string& name,
             size_t max_output = static_cast<size_t>(-1));

bool LooksGzipped(std::string_view bytes);

// How the parsers split work. Defaults: as many threads as the machine has (at most 8),
// chunks of at least 1 MiB, canonical output.
struct ParseOptions {
  int threads = 0;
  size_t min_chunk_bytes = size_t(1) << 20;
  bool canonicalize = true;
};

CooTensor ParseMatrixMarket(std::string_view text, const std::string& name,
                            std::vector<std::string>* warnings, const ParseOptions& options);
CooTensor ParseTns(std::string_view text, const std::string& name, const ParseOptions& options);

// Throws InputError when `text` holds a NUL byte (binary data), naming its line.
void RejectBinary(std::string_view text, const std::string& name);

}  // namespace sparsetune::io_internal
