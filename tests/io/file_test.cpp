#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "io/read.hpp"
#include "io/read_internal.hpp"
#include "io/write.hpp"
#include "io_test_util.hpp"

namespace sparsetune {
namespace {

using testing::Entries;
using testing::Entry;
using testing::TempDir;

const std::string kSmall =
    "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2\n";
const std::vector<Entry> kSmallEntries = {{{0, 0}, 1.5}, {{2, 1}, -2}};

std::string Gzip(const std::string& text) {
  uLongf size = compressBound(static_cast<uLong>(text.size())) + 64;
  std::string out(size, '\0');
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip wrapper
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Writes a .tar.gz holding the given (name, contents) files.
void WriteTarGz(const std::string& path,
                const std::vector<std::pair<std::string, std::string>>& files) {
  struct archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, path.c_str());
  for (const auto& [name, contents] : files) {
    struct archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_size(entry, static_cast<la_int64_t>(contents.size()));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_write_header(a, entry);
    archive_write_data(a, contents.data(), contents.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
}

void ExpectFileError(const std::string& path, const std::string& cause, int64_t line = 0) {
  try {
    ReadTensorFile(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.cause().find(cause), std::string::npos) << e.what();
  }
}

TEST(ReadTensorFile, MatrixMarketFile) {
  TempDir dir;
  const CooTensor t = ReadTensorFile(dir.Write("a.mtx", kSmall));
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Entries(t), kSmallEntries);
}

TEST(ReadTensorFile, GzippedMatrixMarket) {
  TempDir dir;
  EXPECT_EQ(Entries(ReadTensorFile(dir.Write("a.mtx.gz", Gzip(kSmall)))), kSmallEntries);
  // Concatenated members read as one stream, as gzip -d does.
  const std::string half = kSmall.substr(0, 60);
  EXPECT_EQ(Entries(ReadTensorFile(dir.Write("b.mtx.gz", Gzip(half) + Gzip(kSmall.substr(60))))),
            kSmallEntries);
  // Compressed content is recognised whatever the name.
  EXPECT_EQ(Entries(ReadTensorFile(dir.Write("c.mtx", Gzip(kSmall)))), kSmallEntries);
}

TEST(ReadTensorFile, TnsAndGzippedTns) {
  TempDir dir;
  const std::string text = "1 2 3 4\n2 1 1 5\n";
  const CooTensor plain = ReadTensorFile(dir.Write("a.tns", text));
  EXPECT_EQ(plain.dims, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Entries(ReadTensorFile(dir.Write("a.tns.gz", Gzip(text)))), Entries(plain));
}

TEST(ReadTensorFile, SuiteSparseArchivePicksNameSlashName) {
  TempDir dir;
  const std::string path = dir.Track("bcs.tar.gz");
  WriteTarGz(path, {{"bcs/bcs_b.mtx", "%%MatrixMarket matrix array real general\n1 1\n5\n"},
                    {"bcs/bcs.mtx", kSmall},
                    {"bcs/README", "text"}});
  EXPECT_EQ(Entries(ReadTensorFile(path)), kSmallEntries);
}

TEST(ReadTensorFile, ArchiveWithOneMatrixOfAnotherName) {
  TempDir dir;
  const std::string path = dir.Track("x.tar.gz");
  WriteTarGz(path, {{"./other/Other.mtx", kSmall}, {"other/notes.txt", "x"}});
  EXPECT_EQ(Entries(ReadTensorFile(path)), kSmallEntries);
}

TEST(ReadTensorFile, ArchiveErrors) {
  TempDir dir;
  const std::string none = dir.Track("none.tar.gz");
  WriteTarGz(none, {{"none/README", "x"}});
  ExpectFileError(none, "holds no .mtx file (expected none/none.mtx)");
  const std::string two = dir.Track("two.tar.gz");
  WriteTarGz(two, {{"two/a.mtx", kSmall}, {"two/b.mtx", kSmall}});
  ExpectFileError(two, "holds 2 .mtx files and none is two/two.mtx");
  const std::string bad = dir.Track("bad.tar.gz");
  WriteTarGz(bad, {{"bad/bad.mtx", kSmall + "1 1 1\n"}});
  try {
    ReadTensorFile(bad);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad + "[bad/bad.mtx]");
    EXPECT_EQ(e.line(), 5);
  }
  ExpectFileError(dir.Write("plain.tar.gz", Gzip(kSmall)), "cannot read the archive");
  ExpectFileError(dir.Write("garbage.tar.gz", "not an archive at all"), "cannot read the archive");
  ExpectFileError(dir.path() + "/missing.tar.gz", "cannot open");
}

TEST(ReadTensorFile, FileErrors) {
  TempDir dir;
  ExpectFileError(dir.path() + "/missing.mtx", "cannot open: No such file or directory");
  ExpectFileError(dir.path(), "is a directory");
  ExpectFileError(dir.Write("plain.mtx", kSmall) + "/inside.mtx", "cannot open: Not a directory");
  ExpectFileError(dir.Write("empty.mtx", ""), "empty file");
  ExpectFileError(dir.Write("empty.mtx.gz", ""), "empty file");
  ExpectFileError(dir.Write("empty.tns", ""), "empty file");
  ExpectFileError(dir.Write("empty_member.mtx.gz", Gzip("")), "empty file");
  const std::string gz = Gzip(kSmall);
  ExpectFileError(dir.Write("cut.mtx.gz", gz.substr(0, gz.size() / 2)), "truncated");
  std::string corrupt = gz;
  for (size_t i = 10; i < 20 && i < corrupt.size(); ++i) corrupt[i] = '\xff';
  ExpectFileError(dir.Write("corrupt.mtx.gz", corrupt), "corrupt gzip data");
  ExpectFileError(dir.Write("trailing.mtx.gz", gz + "junk"), "trailing garbage");
  ExpectFileError(dir.Write("plain.mtx.gz", kSmall), "not gzip data");
  ExpectFileError(dir.Write("bad.mtx", kSmall + "1 1 1\n"), "more entries", 5);
}

TEST(ReadTensorFile, LargeFilesAreMappedAndReadTheSame) {
  // Above 16 MB plain files are mapped rather than read; the result must not change.
  std::string text = "%%MatrixMarket matrix coordinate real general\n1000 1000 900000\n";
  for (int e = 0; e < 900000; ++e) {
    text += std::to_string(e % 1000 + 1) + " " + std::to_string(e / 900 + 1) + " " +
            std::to_string(e % 977) + ".06250000\n";
  }
  ASSERT_GT(text.size(), size_t(16) << 20);
  TempDir dir;
  const CooTensor mapped = ReadTensorFile(dir.Write("big.mtx", text));
  const CooTensor parsed = ParseMatrixMarket(text, "big.mtx");
  EXPECT_EQ(mapped.nnz(), 900000);
  EXPECT_EQ(mapped.coords, parsed.coords);
  EXPECT_EQ(mapped.values, parsed.values);
  EXPECT_EQ(mapped.duplicates_summed, 0);
}

TEST(Bytes, AMappedBufferGrowsIntoAllocatedMemory) {
  TempDir dir;
  const std::string path = dir.Write("m.txt", "mapped text");
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  io_internal::Bytes bytes;
  ASSERT_TRUE(bytes.Map(fd, 11));
  ::close(fd);
  EXPECT_EQ(bytes.view(), "mapped text");
  bytes.Resize(100);
  EXPECT_EQ(std::string_view(bytes.data(), 11), "mapped text");
  io_internal::Bytes moved = std::move(bytes);
  EXPECT_EQ(moved.size(), 100u);
  EXPECT_EQ(bytes.size(), 0u);
}

TEST(ReadTensorFile, TrailingZeroPaddingAfterGzipIsIgnored) {
  TempDir dir;
  const std::string padded = Gzip(kSmall) + std::string(512, '\0');
  EXPECT_EQ(Entries(ReadTensorFile(dir.Write("pad.mtx.gz", padded))), kSmallEntries);
}

// A complex matrix written and read back keeps both parts of every value.
TEST(ReadTensorFile, ComplexMatricesRoundTrip) {
  TempDir dir;
  const std::string path = dir.Write(
      "c.mtx", "%%MatrixMarket matrix coordinate complex general\n2 3 2\n1 1 1 2\n2 3 -0.5 0.25\n");
  const CooTensor t = ReadTensorFile(path);
  const std::string copy = dir.Track("copy.mtx");
  WriteTensorFile(t, copy);
  const CooTensor back = ReadTensorFile(copy);
  EXPECT_EQ(back.coords, t.coords);
  EXPECT_EQ(back.values, (std::vector<double>{1, -0.5}));
  EXPECT_EQ(back.imag, (std::vector<double>{2, 0.25}));
  EXPECT_THROW(WriteTensorFile(t, dir.Track("c.tns")), InputError);
}

TEST(Gunzip, RefusesToInflatePastTheCap) {
  const std::string big(1 << 20, 'a');
  EXPECT_THROW(io_internal::Gunzip(Gzip(big), "big.gz", 1000), InputError);
  EXPECT_EQ(io_internal::Gunzip(Gzip(big), "big.gz", big.size()).size(), big.size());
}

TEST(KindFromName, ChoosesTheParserByName) {
  using io_internal::FileKind;
  using io_internal::KindFromName;
  EXPECT_EQ(KindFromName("a/b.mtx"), FileKind::kMatrixMarket);
  EXPECT_EQ(KindFromName("a/b.mtx.gz"), FileKind::kMatrixMarket);
  EXPECT_EQ(KindFromName("b.MTX"), FileKind::kMatrixMarket);
  EXPECT_EQ(KindFromName("b.tns"), FileKind::kTns);
  EXPECT_EQ(KindFromName("b.tns.gz"), FileKind::kTns);
  EXPECT_EQ(KindFromName("b.tar.gz"), FileKind::kArchive);
  EXPECT_EQ(KindFromName("b.tgz"), FileKind::kArchive);
}

}  // namespace
}  // namespace sparsetune
