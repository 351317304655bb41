// Getting the text of an input into memory: plain files, gzip, SuiteSparse tar archives.

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include "base/errors.hpp"
#include "base/memory.hpp"
#include "io/read_internal.hpp"
#include "io/read_scan.hpp"

namespace sparsetune::io_internal {

namespace {

bool EndsWithNoCase(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(), [](char a, char b) {
           return a == std::tolower(static_cast<unsigned char>(b));
         });
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Closes a file descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Fails with a clear cause when `path` cannot be a readable file: directories and devices
// (/dev/zero would never end) are refused; pipes and sockets are read, bounded.
void CheckRegularOrStream(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) Fail(path, 0, "is a directory, not a file");
  if (S_ISCHR(st.st_mode)) Fail(path, 0, "is a character device, not a file");
  if (S_ISBLK(st.st_mode)) Fail(path, 0, "is a block device, not a file");
}

std::string Mebibytes(size_t bytes) {
  return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB";
}

[[noreturn]] void FailOverLimit(const std::string& path, const char* what, size_t limit) {
  Fail(path, 0,
       std::string(what) + " more than " + Mebibytes(limit) +
           ", the limit for streams and decompressed data (half the memory available; "
           "SPARSETUNE_MAX_INPUT_MB sets it)");
}

[[noreturn]] void FailRatio(const std::string& path, size_t out, size_t in) {
  Fail(path, 0,
       "compressed data inflates to over " + std::to_string(int(kMaxInflateRatio)) +
           " times its size (" + Mebibytes(out) + " from " + std::to_string(in) +
           " bytes): refused as a decompression bomb");
}

Bytes ReadAll(const std::string& path) {
  Fd file;
  do {
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (file.fd < 0 && errno == EINTR);
  if (file.fd < 0) Fail(path, 0, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    Fail(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  CheckRegularOrStream(path, st);
  const bool stream = !S_ISREG(st.st_mode);

  Bytes bytes;
  // Large regular files are mapped: on this kind of machine, copying 300 MB into fresh memory
  // with read() costs as much as parsing it, a populated mapping a tenth of that. A file
  // truncated by another process meanwhile is caught by the mapping's SIGBUS guard.
  constexpr off_t kMapAtLeast = off_t(16) << 20;
  if (S_ISREG(st.st_mode) && st.st_size >= kMapAtLeast &&
      static_cast<uint64_t>(st.st_size) <= static_cast<uint64_t>(SIZE_MAX) &&
      bytes.Map(file.fd, static_cast<size_t>(st.st_size))) {
    return bytes;
  }
  // A regular file's size is a hint only: the file may change while it is read.
  size_t capacity =
      S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : size_t(1) << 16;
  // A regular file may grow while it is read; past its size (or from a stream), reading stops
  // at the input limit.
  const size_t limit =
      std::max(InputByteLimit(), S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0);
  bytes.Reserve(capacity);
  size_t size = 0;
  bool checked_start = !stream;
  for (;;) {
    if (size == bytes.capacity()) {
      if (size > limit)
        FailOverLimit(path, stream ? "the stream holds" : "the file grew to", limit);
      bytes.Reserve(std::min(bytes.capacity() * 2, limit + 1));
    }
    const size_t want = std::min<size_t>(bytes.capacity() - size, size_t(1) << 30);
    const ssize_t got = ::read(file.fd, bytes.data() + size, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      Fail(path, 0, std::string("cannot read: ") + std::strerror(errno));
    }
    if (got == 0) break;
    size += static_cast<size_t>(got);
    // Binary data from a stream is refused at once rather than at the limit.
    if (!checked_start && size >= 4096) {
      checked_start = true;
      if (!LooksGzipped({bytes.data(), size})) RejectBinary({bytes.data(), size}, path);
    }
  }
  bytes.Resize(size);
  return bytes;
}

// libarchive handle, freed on every path out.
struct ArchiveReader {
  struct archive* a = archive_read_new();
  ~ArchiveReader() { archive_read_free(a); }
};

std::string ArchiveMessage(struct archive* a) {
  const char* message = archive_error_string(a);
  return message ? message : "unknown error";
}

void OpenArchive(ArchiveReader& reader, const std::string& path) {
  if (!reader.a) throw std::bad_alloc();
  archive_read_support_filter_all(reader.a);
  archive_read_support_format_tar(reader.a);
  if (archive_read_open_filename(reader.a, path.c_str(), size_t(1) << 16) != ARCHIVE_OK) {
    Fail(path, 0, "cannot read the archive: " + ArchiveMessage(reader.a));
  }
}

// Moves to the next regular-file entry and returns its name without a leading "./";
// returns false at the end of the archive.
bool NextFileEntry(ArchiveReader& reader, const std::string& path, std::string* entry_name) {
  for (;;) {
    struct archive_entry* entry = nullptr;
    const int status = archive_read_next_header(reader.a, &entry);
    if (status == ARCHIVE_EOF) return false;
    if (status < ARCHIVE_WARN) Fail(path, 0, "corrupt archive: " + ArchiveMessage(reader.a));
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    const char* name = archive_entry_pathname(entry);
    std::string n = name ? name : "";
    while (n.rfind("./", 0) == 0) n.erase(0, 2);
    *entry_name = n;
    return true;
  }
}

Bytes ReadEntryData(ArchiveReader& reader, const std::string& path) {
  Bytes bytes;
  bytes.Reserve(size_t(1) << 16);
  size_t size = 0;
  const size_t limit = InputByteLimit();
  for (;;) {
    if (size == bytes.capacity()) {
      if (size > limit) FailOverLimit(path, "the archive's matrix inflates to", limit);
      // Bytes read from the archive file so far (compressed), against bytes inflated.
      const int64_t consumed = archive_filter_bytes(reader.a, -1);
      if (size > kInflateRatioFrom && consumed > 0 &&
          double(size) > kMaxInflateRatio * double(consumed))
        FailRatio(path, size, static_cast<size_t>(consumed));
      bytes.Reserve(std::min(bytes.capacity() * 2, limit + 1));
    }
    const la_ssize_t got =
        archive_read_data(reader.a, bytes.data() + size, bytes.capacity() - size);
    if (got < 0) Fail(path, 0, "corrupt archive: " + ArchiveMessage(reader.a));
    if (got == 0) break;
    size += static_cast<size_t>(got);
  }
  bytes.Resize(size);
  return bytes;
}

// ---- SIGBUS guard of mapped files ----------------------------------------------------------
//
// Reading a page of a mapped file past its end (another process truncated it) raises SIGBUS.
// Each mapping registers its address range in a slot; the handler maps zero pages over the
// rest of the range that faulted, marks the slot changed and returns, so the faulting read
// sees zeros and the reader reports the change afterwards (FailIfChanged). Faults outside
// every slot go to the previous disposition.

constexpr int kGuardSlots = 64;

struct GuardSlot {
  std::atomic<bool> taken{false};
  std::atomic<uintptr_t> begin{0}, end{0};  // begin 0: not armed
  std::atomic<bool> changed{false};
};

GuardSlot g_guard_slots[kGuardSlots];
struct sigaction g_previous_sigbus;

void OnSigbus(int signal_number, siginfo_t* info, void* context) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_guard_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    const uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= end) continue;
    const uintptr_t page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t page = address & ~(page_size - 1);
    // The file lost everything from this page on: zeros for the rest of the mapping.
    void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros != MAP_FAILED) {
      slot.changed.store(true, std::memory_order_release);
      return;
    }
  }
  const struct sigaction& previous = g_previous_sigbus;
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal_number);
    return;
  }
  // Default action: the signal is blocked while this handler runs, so raising it again
  // delivers it on return, with the default disposition restored.
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void InstallSigbusGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

// A free slot guarding [begin, end), or -1 when every slot is in use.
int ArmGuard(const char* begin, size_t length) {
  InstallSigbusGuard();
  for (int s = 0; s < kGuardSlots; ++s) {
    GuardSlot& slot = g_guard_slots[s];
    bool expected = false;
    if (!slot.taken.compare_exchange_strong(expected, true)) continue;
    slot.changed.store(false, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(begin) + length, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return s;
  }
  return -1;
}

// Disarms slot `s` (before its range is unmapped) and tells whether the mapping changed.
bool DisarmGuard(int s) {
  GuardSlot& slot = g_guard_slots[s];
  slot.begin.store(0, std::memory_order_release);
  slot.end.store(0, std::memory_order_release);
  const bool changed = slot.changed.load(std::memory_order_acquire);
  slot.taken.store(false, std::memory_order_release);
  return changed;
}

}  // namespace

Bytes& Bytes::operator=(Bytes&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    mapped_ = other.mapped_;
    guard_ = other.guard_;
    changed_ = other.changed_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
    other.mapped_ = false;
    other.guard_ = -1;
    other.changed_ = false;
  }
  return *this;
}

void Bytes::Release() {
  if (mapped_) {
    if (guard_ >= 0) DisarmGuard(guard_);
    ::munmap(data_, capacity_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = capacity_ = 0;
  mapped_ = false;
  guard_ = -1;
  changed_ = false;
}

bool Bytes::changed() const {
  return changed_ || (guard_ >= 0 && g_guard_slots[guard_].changed.load(std::memory_order_acquire));
}

bool Bytes::Map(int fd, size_t size) {
  Release();
  if (size == 0) return false;
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;  // fault every page in at once, not one by one while parsing
#endif
  void* p = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
  if (p == MAP_FAILED) return false;
  const int guard = ArmGuard(static_cast<const char*>(p), size);
  if (guard < 0) {  // unguarded, a truncation would kill the process: the caller reads instead
    ::munmap(p, size);
    return false;
  }
  data_ = static_cast<char*>(p);
  size_ = capacity_ = size;
  mapped_ = true;
  guard_ = guard;
  return true;
}

void Bytes::Reserve(size_t capacity) {
  if (capacity <= capacity_) return;
  if (mapped_) {  // a mapping cannot grow: continue in allocated memory
    char* copy = static_cast<char*>(std::malloc(capacity));
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, data_, size_);
    const size_t size = size_;
    const bool changed = this->changed();
    Release();
    data_ = copy;
    size_ = size;
    capacity_ = capacity;
    changed_ = changed;
    return;
  }
  void* grown = std::realloc(data_, capacity);
  if (!grown) throw std::bad_alloc();
  data_ = static_cast<char*>(grown);
  capacity_ = capacity;
}

FileKind KindFromName(const std::string& path) {
  if (EndsWithNoCase(path, ".tar.gz") || EndsWithNoCase(path, ".tgz")) return FileKind::kArchive;
  if (EndsWithNoCase(path, ".tns") || EndsWithNoCase(path, ".tns.gz")) return FileKind::kTns;
  return FileKind::kMatrixMarket;
}

bool LooksGzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Bytes Gunzip(std::string_view compressed, const std::string& name, size_t max_output) {
  z_stream zs{};
  // 15 + 32: the largest window, gzip or zlib header detected automatically.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw std::bad_alloc();
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);

  Bytes out;
  const size_t first =
      std::min<size_t>(max_output, std::max<size_t>(compressed.size() * 4, size_t(1) << 16));
  out.Reserve(std::max<size_t>(first, 1));
  size_t size = 0;
  const unsigned char* in = reinterpret_cast<const unsigned char*>(compressed.data());
  size_t in_left = compressed.size();
  for (;;) {
    if (size == out.capacity()) {
      if (size >= max_output) {
        Fail(name, 0, "gzip data inflates to more than " + std::to_string(max_output) + " bytes");
      }
      const size_t consumed = compressed.size() - in_left;
      if (size > kInflateRatioFrom && double(size) > kMaxInflateRatio * double(consumed))
        FailRatio(name, size, consumed);
      out.Reserve(std::min(max_output, out.capacity() * 2));
    }
    zs.next_in = const_cast<unsigned char*>(in);
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, UINT_MAX));
    zs.next_out = reinterpret_cast<unsigned char*>(out.data() + size);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.capacity() - size, UINT_MAX));
    const uInt avail_in = zs.avail_in;
    const uInt avail_out = zs.avail_out;
    const int status = inflate(&zs, Z_NO_FLUSH);
    const size_t used = avail_in - zs.avail_in;
    in += used;
    in_left -= used;
    size += avail_out - zs.avail_out;
    if (status == Z_STREAM_END) {
      // Concatenated gzip members are one stream (as gzip -d reads them); trailing zero
      // padding is tolerated, anything else is not.
      const std::string_view rest(reinterpret_cast<const char*>(in), in_left);
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;
      if (!LooksGzipped(rest))
        Fail(name, 0, "corrupt gzip data: trailing garbage after the stream");
      if (inflateReset(&zs) != Z_OK) Fail(name, 0, "corrupt gzip data");
      continue;
    }
    if (status == Z_MEM_ERROR) throw std::bad_alloc();
    if (status == Z_NEED_DICT || status == Z_DATA_ERROR || status == Z_STREAM_ERROR) {
      Fail(name, 0, std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "invalid stream"));
    }
    if (status == Z_BUF_ERROR || (status == Z_OK && used == 0 && avail_out == zs.avail_out)) {
      if (in_left == 0) Fail(name, 0, "corrupt gzip data: the stream is truncated");
      if (zs.avail_out != 0) Fail(name, 0, "corrupt gzip data: inflate made no progress");
    }
  }
  out.Resize(size);
  return out;
}

void FailIfChanged(const Bytes& bytes, const std::string& name) {
  if (bytes.changed()) Fail(name, 0, "the file changed (was truncated) while it was read");
}

size_t InputByteLimit() {
  static const size_t limit = [] {
    const char* value = std::getenv("SPARSETUNE_MAX_INPUT_MB");
    if (value && *value) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long mb = std::strtoull(value, &end, 10);
      if (errno != 0 || *end != '\0' || mb == 0 || mb > (1ull << 30) || value[0] == '-')
        return size_t(0);
      return static_cast<size_t>(mb) << 20;
    }
    return static_cast<size_t>(
        std::max<int64_t>(MemoryAvailableToProcess() / 2, int64_t(64) << 20));
  }();
  if (limit == 0)
    throw InputError(
        "SPARSETUNE_MAX_INPUT_MB: expected a positive whole number of mebibytes, not '" +
        std::string(std::getenv("SPARSETUNE_MAX_INPUT_MB")) + "'");
  return limit;
}

Bytes LoadFile(const std::string& path) {
  Bytes raw = ReadAll(path);
  if (LooksGzipped(raw.view())) {
    return ParseUnchanged(raw, path, [&] { return Gunzip(raw.view(), path, InputByteLimit()); });
  }
  if (EndsWithNoCase(path, ".gz") && raw.size() > 0) {
    Fail(path, 0, "not gzip data, although the name ends in .gz");
  }
  return raw;
}

LoadedText LoadFromArchive(const std::string& path) {
  {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      Fail(path, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    CheckRegularOrStream(path, st);
  }
  std::string stem = Basename(path);
  stem.erase(stem.size() - (EndsWithNoCase(stem, ".tgz") ? 4 : 7));
  const std::string wanted = stem + "/" + stem + ".mtx";

  std::vector<std::string> candidates;
  {
    ArchiveReader reader;
    OpenArchive(reader, path);
    std::string entry;
    while (NextFileEntry(reader, path, &entry)) {
      if (entry == wanted) return {ReadEntryData(reader, path), path + "[" + entry + "]"};
      if (EndsWithNoCase(entry, ".mtx")) candidates.push_back(entry);
    }
  }
  if (candidates.empty()) Fail(path, 0, "the archive holds no .mtx file (expected " + wanted + ")");
  if (candidates.size() > 1) {
    Fail(path, 0,
         "the archive holds " + std::to_string(candidates.size()) + " .mtx files and none is " +
             wanted);
  }
  ArchiveReader reader;
  OpenArchive(reader, path);
  std::string entry;
  while (NextFileEntry(reader, path, &entry)) {
    if (entry == candidates[0]) return {ReadEntryData(reader, path), path + "[" + entry + "]"};
  }
  Fail(path, 0, "the archive changed while it was read");
}

void RejectBinary(std::string_view text, const std::string& name) {
  const void* nul = std::memchr(text.data(), '\0', text.size());
  if (!nul) return;
  const size_t offset = static_cast<size_t>(static_cast<const char*>(nul) - text.data());
  const int64_t line = std::count(text.data(), text.data() + offset, '\n') + 1;
  Fail(name, line,
       "binary data (a NUL byte at offset " + std::to_string(offset) + "), not a text file");
}

}  // namespace sparsetune::io_internal

namespace sparsetune {

bool HasTensorFileExtension(const std::string& path) {
  for (const char* ext : {".mtx", ".mtx.gz", ".tns", ".tns.gz", ".tar.gz", ".tgz"}) {
    if (io_internal::EndsWithNoCase(path, ext)) return true;
  }
  return false;
}

}  // namespace sparsetune
