// Matrix Market reader: header checks first, then the entries parsed in line-aligned chunks on
// several threads. When a chunk fails or the entry count is off, the data is parsed again on
// one thread so that the message names the first bad line in file order.

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/errors.hpp"
#include "io/read.hpp"
#include "io/read_internal.hpp"
#include "io/read_scan.hpp"

namespace sparsetune {
namespace io_internal {

namespace {

enum class Format { kCoordinate, kArray };
enum class Field { kReal, kInteger, kPattern, kComplex };

const char* FieldName(Field field) {
  switch (field) {
    case Field::kReal:
      return "real";
    case Field::kInteger:
      return "integer";
    case Field::kPattern:
      return "pattern";
    case Field::kComplex:
      return "complex";
  }
  return "real";
}

struct Header {
  Format format = Format::kCoordinate;
  Field field = Field::kReal;
  Symmetry symmetry = Symmetry::kGeneral;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t entries = 0;         // declared entries (coordinate) or values to read (array)
  int64_t size_line = 0;       // line of the size line
  const char* data = nullptr;  // first byte after the size line
  int64_t data_line = 0;       // line number at `data`
  int64_t most = 0;            // the most entries the bytes after the size line can hold
};

constexpr const char* kBannerForm =
    "expected '%%MatrixMarket matrix coordinate|array real|integer|pattern|complex "
    "general|symmetric|skew-symmetric|hermitian'";

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::string_view> Tokens(const char* p, const char* end) {
  std::vector<std::string_view> tokens;
  for (p = SkipBlanks(p, end); !AtLineEnd(p, end); p = SkipBlanks(p, end)) {
    const char* start = p;
    while (!AtTokenEnd(p, end)) ++p;
    tokens.emplace_back(start, static_cast<size_t>(p - start));
  }
  return tokens;
}

std::string Quote(std::string_view token) {
  return DescribeToken(token.data(), token.data() + token.size());
}

// One number of the size line: non-negative, fits in int64.
int64_t ReadSize(std::string_view token, const char* what, const std::string& name, int64_t line) {
  const char* p = token.data();
  const char* end = token.data() + token.size();
  if (p < end && *p == '-') {
    Fail(name, line, std::string(what) + " " + Quote(token) + " is negative");
  }
  return ReadInteger(p, end, what, name, line);
}

Header ParseHeader(std::string_view text, const std::string& name) {
  if (text.empty()) Fail(name, 0, "empty file");
  const char* p = text.data();
  const char* end = p + text.size();
  if (text.size() >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 BOM

  Header h;
  const std::vector<std::string_view> banner = Tokens(p, end);
  if (banner.empty() || !EqualsNoCase(banner[0], "%%MatrixMarket")) {
    Fail(name, 1,
         std::string("missing %%MatrixMarket banner on the first line (") + kBannerForm + ")");
  }
  if (banner.size() < 5) {
    Fail(name, 1, "incomplete %%MatrixMarket banner (" + std::string(kBannerForm) + ")");
  }
  if (banner.size() > 5) {
    Fail(name, 1, "unexpected " + Quote(banner[5]) + " at the end of the banner");
  }
  if (!EqualsNoCase(banner[1], "matrix")) {
    Fail(name, 1, "unsupported object " + Quote(banner[1]) + " (only 'matrix' is supported)");
  }
  if (EqualsNoCase(banner[2], "coordinate")) {
    h.format = Format::kCoordinate;
  } else if (EqualsNoCase(banner[2], "array")) {
    h.format = Format::kArray;
  } else {
    Fail(name, 1, "unknown format " + Quote(banner[2]) + " (expected coordinate or array)");
  }
  if (EqualsNoCase(banner[3], "real")) {
    h.field = Field::kReal;
  } else if (EqualsNoCase(banner[3], "integer")) {
    h.field = Field::kInteger;
  } else if (EqualsNoCase(banner[3], "pattern")) {
    h.field = Field::kPattern;
  } else if (EqualsNoCase(banner[3], "complex")) {
    h.field = Field::kComplex;
  } else {
    Fail(name, 1,
         "unknown field " + Quote(banner[3]) + " (expected real, integer, pattern or complex)");
  }
  if (EqualsNoCase(banner[4], "general")) {
    h.symmetry = Symmetry::kGeneral;
  } else if (EqualsNoCase(banner[4], "symmetric")) {
    h.symmetry = Symmetry::kSymmetric;
  } else if (EqualsNoCase(banner[4], "skew-symmetric")) {
    h.symmetry = Symmetry::kSkewSymmetric;
  } else if (EqualsNoCase(banner[4], "hermitian")) {
    h.symmetry = Symmetry::kHermitian;
  } else {
    Fail(name, 1,
         "unknown symmetry " + Quote(banner[4]) +
             " (expected general, symmetric, skew-symmetric or hermitian)");
  }
  if (h.field == Field::kPattern && h.format == Format::kArray) {
    Fail(name, 1, "the array format cannot have the pattern field");
  }
  if (h.field == Field::kPattern && h.symmetry == Symmetry::kSkewSymmetric) {
    Fail(name, 1, "a pattern matrix cannot be skew-symmetric (it has no values to negate)");
  }

  // Comments and blank lines, then the size line.
  int64_t line = 1;
  p = NextLine(p, end);
  for (;;) {
    if (p == end) Fail(name, std::max<int64_t>(line, 1), "the file ends before the size line");
    ++line;
    const char* q = SkipBlanks(p, end);
    if (AtLineEnd(q, end) || *q == '%') {
      p = NextLine(q, end);
      continue;
    }
    break;
  }
  h.size_line = line;
  const std::vector<std::string_view> sizes = Tokens(p, end);
  const size_t wanted = h.format == Format::kCoordinate ? 3 : 2;
  if (sizes.size() != wanted) {
    Fail(name, line,
         "the size line has " + std::to_string(sizes.size()) + " field" +
             (sizes.size() == 1 ? "" : "s") + "; the " +
             (h.format == Format::kCoordinate ? "coordinate format needs 3 (rows columns entries)"
                                              : "array format needs 2 (rows columns)"));
  }
  h.rows = ReadSize(sizes[0], "row count", name, line);
  h.cols = ReadSize(sizes[1], "column count", name, line);
  for (const int64_t d : {h.rows, h.cols}) {
    if (d > kMaxDimension) {
      Fail(name, line,
           "dimension " + std::to_string(d) + " exceeds the largest supported dimension " +
               std::to_string(kMaxDimension));
    }
  }
  if (h.symmetry != Symmetry::kGeneral && h.rows != h.cols) {
    Fail(name, line,
         std::string("a ") + SymmetryName(h.symmetry) + " matrix must be square, but it is " +
             std::to_string(h.rows) + " x " + std::to_string(h.cols));
  }
  int64_t min_line_bytes = 0;  // the shortest entry line, its '\n' included
  if (h.format == Format::kCoordinate) {
    h.entries = ReadSize(sizes[2], "entry count", name, line);
    min_line_bytes = h.field == Field::kPattern ? 4 : h.field == Field::kComplex ? 8 : 6;
  } else {
    const int64_t n = h.rows;  // rows, cols <= 2^31, so no product overflows
    h.entries = h.symmetry == Symmetry::kGeneral         ? h.rows * h.cols
                : h.symmetry == Symmetry::kSkewSymmetric ? n * (n - 1) / 2
                                                         : n * (n + 1) / 2;
    min_line_bytes = h.field == Field::kComplex ? 4 : 2;
  }
  h.data = NextLine(p, end);
  h.data_line = line + 1;
  // Never trust the header for memory: reservations are capped by what the rest of the file
  // can hold.
  const int64_t remaining = end - h.data;
  h.most = (remaining + 1) / min_line_bytes;
  return h;
}

// Thrown when the file ends before `found` of the declared entries: names the size line
// when the declared count could never fit in the file, else the last line.
[[noreturn]] void FailShort(const Header& h, const char* end, int64_t found,
                            const std::string& name) {
  const char* what = h.format == Format::kArray ? " values" : " entries";
  if (h.entries > h.most) {
    Fail(name, h.size_line,
         "declares " + std::to_string(h.entries) + what + ", but the remaining " +
             std::to_string(end - h.data) + " bytes hold at most " + std::to_string(h.most) +
             " (truncated file or wrong size line)");
  }
  const int64_t last_line =
      h.data_line - 1 + CountLines({h.data, static_cast<size_t>(end - h.data)});
  Fail(name, last_line,
       "the file ends after " + std::to_string(found) + " of the " + std::to_string(h.entries) +
           what + " declared on line " + std::to_string(h.size_line) + " (truncated?)");
}

// Entries parsed from one chunk.
// A value as read: the imaginary part is zero but in complex files.
struct Value {
  double re = 0;
  double im = 0;
  Value operator-() const { return {-re, -im}; }
  Value Conjugate() const { return {re, -im}; }
  bool IsZero() const { return re == 0 && im == 0; }
};

struct Entries {
  std::vector<int32_t> row;
  std::vector<int32_t> col;
  std::vector<double> value;
  std::vector<double> imag;  // complex files only
  bool complex = false;
  int64_t stored = 0;  // entry lines read (before symmetric expansion)

  void Reserve(int64_t n) {
    row.reserve(static_cast<size_t>(n));
    col.reserve(static_cast<size_t>(n));
    value.reserve(static_cast<size_t>(n));
    if (complex) imag.reserve(static_cast<size_t>(n));
  }
  void Push(int32_t r, int32_t c, Value v) {
    row.push_back(r);
    col.push_back(c);
    value.push_back(v.re);
    if (complex) imag.push_back(v.im);
  }
};

[[noreturn]] void FailTooMany(const Header& h, const std::string& name, int64_t line) {
  Fail(name, line,
       "more entries than the " + std::to_string(h.entries) + " declared on line " +
           std::to_string(h.size_line));
}

[[noreturn]] void FailExtra(const char* p, const char* end, const Header& h,
                            const std::string& name, int64_t line) {
  const char* fields = h.field == Field::kPattern   ? "2 fields (row column)"
                       : h.field == Field::kComplex ? "4 fields (row column real imaginary)"
                                                    : "3 fields (row column value)";
  if (h.format == Format::kArray) {
    fields = h.field == Field::kComplex ? "2 fields (real imaginary)" : "1 field (the value)";
  }
  Fail(name, line,
       "unexpected " + DescribeToken(p, end) + " after the entry: a " + FieldName(h.field) + " " +
           (h.format == Format::kArray ? "array" : "coordinate") + " line has " + fields);
}

// The value of one entry, the parts after the indices.
template <Field kField>
inline Value ReadValue(const char*& p, const char* end, const std::string& name, int64_t line) {
  if constexpr (kField == Field::kPattern) {
    return {1.0, 0.0};
  } else if constexpr (kField == Field::kInteger) {
    return {static_cast<double>(ReadInteger(p, end, "value", name, line)), 0.0};
  } else if constexpr (kField == Field::kReal) {
    return {ReadReal(p, end, "value", name, line), 0.0};
  } else {
    const double re = ReadReal(p, end, "real part", name, line);
    p = SkipBlanks(p, end);
    return {re, ReadReal(p, end, "imaginary part", name, line)};
  }
}

// The entry mirrored across the diagonal of a symmetric, skew-symmetric or Hermitian matrix.
inline Value Mirrored(Symmetry symmetry, Value v) {
  return symmetry == Symmetry::kSkewSymmetric ? -v
         : symmetry == Symmetry::kHermitian   ? v.Conjugate()
                                              : v;
}

// Parses the coordinate lines in [p, end), the first of which is line `line`. Throws at the
// first bad line; stops with an error once more than `limit` entries are seen.
template <Field kField>
void ParseCoordinateLines(const char* p, const char* end, int64_t line, const Header& h,
                          int64_t limit, const std::string& name, Entries* out) {
  const bool mirror = h.symmetry != Symmetry::kGeneral;
  const bool negate = h.symmetry == Symmetry::kSkewSymmetric;
  out->complex = kField == Field::kComplex;
  int64_t stored = out->stored;
  while (p < end) {
    const char* q = SkipBlanks(p, end);
    if (q == end) break;
    if (*q == '\n' || *q == '%') {
      p = NextLine(q, end);
      ++line;
      continue;
    }
    if (stored == limit) FailTooMany(h, name, line);
    const int32_t r = ReadIndex(q, end, h.rows, "row index", name, line);
    q = SkipBlanks(q, end);
    const int32_t c = ReadIndex(q, end, h.cols, "column index", name, line);
    if constexpr (kField != Field::kPattern) q = SkipBlanks(q, end);
    const Value v = ReadValue<kField>(q, end, name, line);
    q = SkipBlanks(q, end);
    if (!AtLineEnd(q, end)) FailExtra(q, end, h, name, line);
    ++stored;
    out->Push(r, c, v);
    if (mirror) {
      if (r != c) {
        out->Push(c, r, Mirrored(h.symmetry, v));
      } else if (negate && !v.IsZero()) {
        Fail(name, line, "a skew-symmetric matrix has a nonzero diagonal entry");
      }
    }
    p = q + (q < end ? 1 : 0);
    ++line;
  }
  out->stored = stored;
}

using CoordinateParser = void (*)(const char*, const char*, int64_t, const Header&, int64_t,
                                  const std::string&, Entries*);

CoordinateParser CoordinateParserFor(Field field) {
  switch (field) {
    case Field::kReal:
      return ParseCoordinateLines<Field::kReal>;
    case Field::kInteger:
      return ParseCoordinateLines<Field::kInteger>;
    case Field::kPattern:
      return ParseCoordinateLines<Field::kPattern>;
    case Field::kComplex:
      return ParseCoordinateLines<Field::kComplex>;
  }
  return ParseCoordinateLines<Field::kReal>;
}

Entries ParseCoordinate(const Header& h, const char* end, const std::string& name,
                        const ParseOptions& options) {
  const CoordinateParser parse = CoordinateParserFor(h.field);
  const int64_t per_entry = h.symmetry == Symmetry::kGeneral ? 1 : 2;
  const size_t bytes = static_cast<size_t>(end - h.data);
  const int threads = ChooseThreads(bytes, options.threads, options.min_chunk_bytes);

  auto sequential = [&] {
    Entries all;
    all.complex = h.field == Field::kComplex;
    all.Reserve(std::min(h.entries, h.most) * per_entry);
    parse(h.data, end, h.data_line, h, h.entries, name, &all);
    if (all.stored < h.entries) FailShort(h, end, all.stored, name);
    return all;
  };
  if (threads <= 1) return sequential();

  const std::vector<std::string_view> chunks = SplitAtLines(h.data, end, threads);
  std::vector<Entries> parts(chunks.size());
  for (Entries& part : parts) part.complex = h.field == Field::kComplex;
  // The first part becomes the result, so it gets room for everything.
  parts[0].Reserve(std::min(h.entries, h.most) * per_entry);
  const std::vector<std::exception_ptr> errors =
      RunTasks(static_cast<int>(chunks.size()), [&](int k) {
        const std::string_view chunk = chunks[static_cast<size_t>(k)];
        Entries& part = parts[static_cast<size_t>(k)];
        if (k > 0) {
          const int64_t most = static_cast<int64_t>(chunk.size()) / 4 + 1;
          part.Reserve(std::min(h.entries, most) * per_entry);
        }
        // Line numbers are only right for the first chunk; errors are re-reported below.
        parse(chunk.data(), chunk.data() + chunk.size(), h.data_line, h, h.entries, name, &part);
      });
  int64_t stored = 0;
  bool failed = false;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (errors[k]) {
      try {
        std::rethrow_exception(errors[k]);
      } catch (const InputError&) {
        failed = true;
      }
    }
    stored += parts[k].stored;
  }
  if (failed || stored != h.entries) {
    parts.clear();
    return sequential();  // names the first bad line of the file
  }
  Entries& all = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) {
    all.row.insert(all.row.end(), parts[k].row.begin(), parts[k].row.end());
    all.col.insert(all.col.end(), parts[k].col.begin(), parts[k].col.end());
    all.value.insert(all.value.end(), parts[k].value.begin(), parts[k].value.end());
    all.imag.insert(all.imag.end(), parts[k].imag.begin(), parts[k].imag.end());
    std::vector<int32_t>().swap(parts[k].row);
    std::vector<int32_t>().swap(parts[k].col);
    std::vector<double>().swap(parts[k].value);
    std::vector<double>().swap(parts[k].imag);
  }
  all.stored = stored;
  return std::move(all);
}

// Dense column-major values; symmetric kinds hold the lower triangle (skew: strictly lower).
// Zeros are not entries of the result.
template <Field kField>
Entries ParseArray(const Header& h, const char* end, const std::string& name) {
  Entries out;
  out.complex = kField == Field::kComplex;
  const bool general = h.symmetry == Symmetry::kGeneral;
  const bool negate = h.symmetry == Symmetry::kSkewSymmetric;
  const int64_t first_row_offset = negate ? 1 : 0;  // skew: the diagonal is not stored
  int64_t i = first_row_offset;
  int64_t j = 0;
  int64_t count = 0;
  int64_t line = h.data_line;
  const char* p = h.data;
  while (p < end) {
    const char* q = SkipBlanks(p, end);
    if (q == end) break;
    if (*q == '\n' || *q == '%') {
      p = NextLine(q, end);
      ++line;
      continue;
    }
    if (count == h.entries) {
      Fail(name, line,
           "more values than the " + std::to_string(h.entries) + " that the " +
               std::to_string(h.rows) + " x " + std::to_string(h.cols) + " " +
               SymmetryName(h.symmetry) + " array declared on line " + std::to_string(h.size_line) +
               " holds");
    }
    const Value v = ReadValue<kField>(q, end, name, line);
    q = SkipBlanks(q, end);
    if (!AtLineEnd(q, end)) FailExtra(q, end, h, name, line);
    if (!v.IsZero()) {
      out.Push(static_cast<int32_t>(i), static_cast<int32_t>(j), v);
      if (!general && i != j)
        out.Push(static_cast<int32_t>(j), static_cast<int32_t>(i), Mirrored(h.symmetry, v));
    }
    ++count;
    if (++i == h.rows) {
      ++j;
      i = general ? 0 : j + first_row_offset;
    }
    p = q + (q < end ? 1 : 0);
    ++line;
  }
  if (count < h.entries) FailShort(h, end, count, name);
  out.stored = count;
  return out;
}

}  // namespace

CooTensor ParseMatrixMarket(std::string_view text, const std::string& name,
                            std::vector<std::string>* warnings, const ParseOptions& options) {
  RejectBinary(text, name);
  const Header h = ParseHeader(text, name);
  const char* end = text.data() + text.size();

  Entries entries;
  if (h.format == Format::kCoordinate) {
    entries = ParseCoordinate(h, end, name, options);
  } else if (h.field == Field::kComplex) {
    entries = ParseArray<Field::kComplex>(h, end, name);
  } else if (h.field == Field::kInteger) {
    entries = ParseArray<Field::kInteger>(h, end, name);
  } else {
    entries = ParseArray<Field::kReal>(h, end, name);
  }

  CooTensor tensor;
  tensor.dims = {h.rows, h.cols};
  tensor.coords.resize(2);
  tensor.coords[0] = std::move(entries.row);
  tensor.coords[1] = std::move(entries.col);
  tensor.values = std::move(entries.value);
  tensor.imag = std::move(entries.imag);
  tensor.symmetry = h.symmetry;
  tensor.pattern_only = h.field == Field::kPattern;
  if (options.canonicalize) tensor.Canonicalize();
  tensor.explicit_zeros = 0;
  for (int64_t e = 0; e < tensor.nnz(); ++e)
    tensor.explicit_zeros += tensor.values[e] == 0 && tensor.Imag(e) == 0;
  return tensor;
}

}  // namespace io_internal

CooTensor ParseMatrixMarket(std::string_view text, const std::string& name,
                            std::vector<std::string>* warnings) {
  return io_internal::ParseMatrixMarket(text, name, warnings, io_internal::ParseOptions{});
}

}  // namespace sparsetune
