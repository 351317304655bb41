#include "io/write.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <vector>

#include "base/errors.hpp"
#include "base/strings.hpp"

namespace sparsetune {

namespace {

// Temporary files being written. If the process is interrupted (SIGINT, SIGTERM, SIGHUP) a
// handler removes them, so a killed run does not leave a hidden file of gigabytes behind.
constexpr int kTempSlots = 16;
std::atomic<const char*> g_temp_files[kTempSlots];

extern "C" void RemoveTempFilesAndReraise(int signal_number) {
  for (auto& slot : g_temp_files) {
    if (const char* name = slot.load()) unlink(name);
  }
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

// Installs the handler only for signals still at their default: a program that handles or
// ignores them keeps its own behaviour.
void InstallCleanupHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (sigaction(signal_number, nullptr, &old) != 0) continue;
      if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = RemoveTempFilesAndReraise;
      sigemptyset(&action.sa_mask);
      sigaction(signal_number, &action, nullptr);
    }
  });
}

int RegisterTempFile(const char* name) {
  InstallCleanupHandlers();
  for (int k = 0; k < kTempSlots; ++k) {
    const char* expected = nullptr;
    if (g_temp_files[k].compare_exchange_strong(expected, name)) return k;
  }
  return -1;  // more concurrent writes than slots: those just go without the cleanup
}

void UnregisterTempFile(int slot) {
  if (slot >= 0) g_temp_files[slot].store(nullptr);
}

// The output goes to a temporary file next to the target and is renamed over it only once
// complete, so an interrupted or failed write never leaves a partial file under the real name.
// (No fsync: this guards against interruption, not power loss, and fsync of gigabytes is slow.)
class AtomicOutput {
 public:
  AtomicOutput(const std::string& path, bool compress) : path_(path) {
    static std::atomic<unsigned> counter{0};
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) throw InputError(path, 0, "cannot write: the path names a directory");
    temp_ = dir + "." + base + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    slot_ = RegisterTempFile(temp_.c_str());  // before the file exists: no unguarded moment
    fd_ = open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) {
      const int error = errno;
      UnregisterTempFile(slot_);
      throw InputError(path, 0, std::string("cannot create the file: ") + std::strerror(error));
    }
    if (compress) {
      // Level 1: about five times faster than the default level for 10% more bytes on this
      // kind of text, which matters for files of gigabytes.
      gz_ = gzdopen(fd_, "wb1");
      if (gz_ == nullptr) {
        close(fd_);
        fd_ = -1;
        unlink(temp_.c_str());
        UnregisterTempFile(slot_);
        throw InternalError(path + ": cannot start compression");
      }
      fd_ = -1;  // owned by gz_ now
      gzbuffer(gz_, 1 << 20);
    }
  }

  ~AtomicOutput() {
    if (!committed_) {
      if (gz_ != nullptr) gzclose(gz_);
      if (fd_ >= 0) close(fd_);
      unlink(temp_.c_str());
    }
    UnregisterTempFile(slot_);
  }

  void Write(const char* data, size_t size) {
    if (gz_ != nullptr) {
      while (size > 0) {
        const unsigned piece = static_cast<unsigned>(std::min<size_t>(size, 1u << 30));
        if (gzwrite(gz_, data, piece) != static_cast<int>(piece)) Fail(GzMessage());
        data += piece;
        size -= piece;
      }
      return;
    }
    while (size > 0) {
      const ssize_t written = write(fd_, data, size);
      if (written < 0) {
        if (errno == EINTR) continue;
        Fail(std::strerror(errno));
      }
      data += written;
      size -= static_cast<size_t>(written);
    }
  }

  void Commit() {
    if (gz_ != nullptr) {
      const int status = gzclose(gz_);
      gz_ = nullptr;
      if (status != Z_OK) Fail(status == Z_ERRNO ? std::strerror(errno) : "compression failed");
    } else {
      const int status = close(fd_);
      fd_ = -1;
      if (status != 0) Fail(std::strerror(errno));
    }
    if (rename(temp_.c_str(), path_.c_str()) != 0) {
      const int error = errno;
      unlink(temp_.c_str());
      committed_ = true;
      throw InputError(path_, 0, std::string("cannot replace the file: ") + std::strerror(error));
    }
    committed_ = true;
  }

 private:
  std::string GzMessage() {
    int code = Z_OK;
    const char* message = gzerror(gz_, &code);
    if (code == Z_ERRNO) return std::strerror(errno);
    return message ? message : "compression failed";
  }

  [[noreturn]] void Fail(const std::string& cause) {
    // Failing to write to a file we could create is the environment's fault (disk full,
    // quota, I/O error), not the input's.
    throw InternalError(path_ + ": write failed: " + cause);
  }

  std::string path_, temp_;
  int fd_ = -1;
  int slot_ = -1;
  gzFile gz_ = nullptr;
  bool committed_ = false;
};

enum class ValueText { kNone, kValue, kOne };

// Formats entries [begin, end) as text lines into `out`: 1-based coordinates, then the value
// (or 1, or nothing). Returns the end of the text.
char* FormatEntries(const CooTensor& t, int64_t begin, int64_t end, ValueText value, char* out) {
  const int order = t.order();
  for (int64_t e = begin; e < end; ++e) {
    for (int m = 0; m < order; ++m) {
      out = std::to_chars(out, out + 16, int64_t(t.coords[m][e]) + 1).ptr;
      *out++ = ' ';
    }
    switch (value) {
      case ValueText::kValue:
        // Shortest text that reads back to the same double.
        out = std::to_chars(out, out + 32, t.values[e]).ptr;
        if (t.is_complex()) {
          *out++ = ' ';
          out = std::to_chars(out, out + 32, t.imag[e]).ptr;
        }
        break;
      case ValueText::kOne:
        *out++ = '1';
        break;
      case ValueText::kNone:
        --out;
        break;  // no trailing space
    }
    *out++ = '\n';
  }
  return out;
}

}  // namespace

void WriteTensorFile(const CooTensor& tensor, const std::string& path) {
  WriteTensorFile(tensor, path, std::string());
}

void WriteTensorFile(const CooTensor& tensor, const std::string& path, const std::string& comment) {
  const bool compress = EndsWith(path, ".gz");
  const std::string name = compress ? path.substr(0, path.size() - 3) : path;
  const bool tns = EndsWith(name, ".tns") || tensor.order() != 2;
  if (tensor.order() < 1) throw InputError(path, 0, "cannot write a tensor of order 0");
  if (tensor.is_complex() && tns) {
    throw InputError(path, 0, "FROSTT .tns files hold real values; write a complex matrix as .mtx");
  }
  if (tensor.order() != 2 && EndsWith(name, ".mtx")) {
    throw InputError(path, 0,
                     "Matrix Market holds matrices only; this tensor has order " +
                         std::to_string(tensor.order()) + " (name the file .tns)");
  }
  if (int64_t(tensor.coords.size()) != tensor.order()) {
    throw InternalError("WriteTensorFile: coordinate arrays do not match the order");
  }
  for (const auto& c : tensor.coords) {
    if (int64_t(c.size()) != tensor.nnz()) {
      throw InternalError("WriteTensorFile: coordinate and value arrays differ in length");
    }
  }

  AtomicOutput output(path, compress);
  std::string header;
  if (!tns) {
    header = tensor.pattern_only   ? "%%MatrixMarket matrix coordinate pattern general\n"
             : tensor.is_complex() ? "%%MatrixMarket matrix coordinate complex general\n"
                                   : "%%MatrixMarket matrix coordinate real general\n";
    size_t pos = 0;
    while (pos < comment.size()) {
      size_t end = comment.find('\n', pos);
      if (end == std::string::npos) end = comment.size();
      header += "% " + comment.substr(pos, end - pos) + "\n";
      pos = end + 1;
    }
    header += std::to_string(tensor.dims[0]) + " " + std::to_string(tensor.dims[1]) + " " +
              std::to_string(tensor.nnz()) + "\n";
  }
  output.Write(header.data(), header.size());

  // FROSTT has no pattern variant: pattern tensors are written with value 1.
  const ValueText value = !tensor.pattern_only ? ValueText::kValue
                          : tns                ? ValueText::kOne
                                               : ValueText::kNone;
  // Entries are formatted in blocks of about 1 MiB of text, the blocks of one round in
  // parallel; a writer thread writes (and compresses) one round while the next is formatted.
  // Two sets of buffers alternate: set r % 2 is free again once round r - 1 has been written.
  const int64_t bytes_per_entry = 12 * tensor.order() + (tensor.is_complex() ? 52 : 26);
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / bytes_per_entry);
  constexpr int kBlocksPerRound = 8;
  struct Round {
    std::vector<std::vector<char>> buffers;
    std::vector<size_t> lengths;
  };
  Round rounds[2];
  for (Round& r : rounds) {
    r.buffers.assign(kBlocksPerRound, std::vector<char>(block * bytes_per_entry + 64));
    r.lengths.assign(kBlocksPerRound, 0);
  }
  std::future<void> writing;
  const int64_t n = tensor.nnz();
  for (int64_t round = 0; round * block * kBlocksPerRound < n; ++round) {
    Round& r = rounds[round % 2];
    const int64_t first = round * block * kBlocksPerRound;
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < kBlocksPerRound; ++k) {
      const int64_t begin = std::min(n, first + k * block), end = std::min(n, begin + block);
      char* text = r.buffers[k].data();
      r.lengths[k] = FormatEntries(tensor, begin, end, value, text) - text;
    }
    if (writing.valid()) writing.get();  // rethrows a write error
    writing = std::async(std::launch::async, [&output, &r] {
      for (int k = 0; k < kBlocksPerRound; ++k) output.Write(r.buffers[k].data(), r.lengths[k]);
    });
  }
  if (writing.valid()) writing.get();
  output.Commit();
}

}  // namespace sparsetune
