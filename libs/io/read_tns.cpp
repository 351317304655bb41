// FROSTT .tns reader: one entry per line, `i j k ... value` with 1-based indices, '#' comments.
// The order comes from the first entry line; the dimensions are the largest index per mode.

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

// Orders above this are surely a misread file (say, a dense row of numbers).
constexpr int kMaxOrder = 32;

struct TnsPart {
  std::vector<std::vector<int32_t>> coords;
  std::vector<double> values;
  std::vector<int32_t> max_index;  // 0-based, -1 when the part has no entry

  void Init(int order, int64_t capacity) {
    coords.resize(static_cast<size_t>(order));
    for (auto& c : coords) c.reserve(static_cast<size_t>(capacity));
    values.reserve(static_cast<size_t>(capacity));
    max_index.assign(static_cast<size_t>(order), -1);
  }
};

struct TnsLayout {
  int order = 0;
  int64_t first_line = 0;                // the first entry line, which fixes the order
  std::vector<std::string> index_names;  // "mode-1 index", ...
};

int64_t CountFields(const char* p, const char* end) {
  int64_t fields = 0;
  for (p = SkipBlanks(p, end); !AtLineEnd(p, end); p = SkipBlanks(p, end)) {
    ++fields;
    while (!AtTokenEnd(p, end)) ++p;
  }
  return fields;
}

void ParseTnsLines(const char* p, const char* end, int64_t line, const TnsLayout& layout,
                   const std::string& name, TnsPart* out) {
  const int order = layout.order;
  int32_t index[kMaxOrder];
  const char* line_start = p;
  try {
    while (p < end) {
      line_start = p;
      const char* q = SkipBlanks(p, end);
      if (q == end) break;
      if (*q == '\n' || *q == '#') {
        p = NextLine(q, end);
        ++line;
        continue;
      }
      for (int m = 0; m < order; ++m) {
        if (m > 0) q = SkipBlanks(q, end);
        index[m] = ReadIndex(q, end, kMaxDimension,
                             layout.index_names[static_cast<size_t>(m)].c_str(), name, line);
      }
      q = SkipBlanks(q, end);
      const double v = ReadReal(q, end, "value", name, line);
      q = SkipBlanks(q, end);
      if (!AtLineEnd(q, end)) Fail(name, line, "extra field");  // reworded below
      for (int m = 0; m < order; ++m) {
        out->coords[static_cast<size_t>(m)].push_back(index[m]);
        out->max_index[static_cast<size_t>(m)] =
            std::max(out->max_index[static_cast<size_t>(m)], index[m]);
      }
      out->values.push_back(v);
      p = q + (q < end ? 1 : 0);
      ++line;
    }
  } catch (const InputError&) {
    // A wrong field count explains most bad tokens better than the token itself.
    const int64_t fields = CountFields(line_start, end);
    if (fields != order + 1) {
      Fail(name, line,
           "the line has " + std::to_string(fields) + " field" + (fields == 1 ? "" : "s") +
               ", but the first entry (line " + std::to_string(layout.first_line) + ") has " +
               std::to_string(order + 1) + ": every line needs " + std::to_string(order) +
               " indices and a value");
    }
    throw;
  }
}

}  // namespace

CooTensor ParseTns(std::string_view text, const std::string& name, const ParseOptions& options) {
  if (text.empty()) Fail(name, 0, "empty file");
  RejectBinary(text, name);
  const char* p = text.data();
  const char* end = p + text.size();
  if (text.size() >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 BOM

  // Comments and blank lines, then the first entry, which fixes the order.
  int64_t line = 1;
  for (;;) {
    const char* q = SkipBlanks(p, end);
    if (q == end) {
      Fail(name, std::max<int64_t>(1, CountLines(text)),
           "no entries: a .tns file needs lines of 'i j k ... value'");
    }
    if (*q != '\n' && *q != '#') break;
    p = NextLine(q, end);
    ++line;
  }
  TnsLayout layout;
  layout.first_line = line;
  const int64_t fields = CountFields(p, end);
  if (fields < 2) {
    Fail(name, line,
         "an entry line needs at least one index and a value, but this one has 1 field");
  }
  if (fields - 1 > kMaxOrder) {
    Fail(name, line,
         "the line has " + std::to_string(fields) + " fields: order " + std::to_string(fields - 1) +
             " is above the supported " + std::to_string(kMaxOrder));
  }
  layout.order = static_cast<int>(fields - 1);
  for (int m = 0; m < layout.order; ++m) {
    layout.index_names.push_back("mode-" + std::to_string(m + 1) + " index");
  }

  const size_t bytes = static_cast<size_t>(end - p);
  const int threads = ChooseThreads(bytes, options.threads, options.min_chunk_bytes);
  const std::vector<std::string_view> chunks = SplitAtLines(p, end, threads);
  std::vector<int64_t> line_counts(chunks.size());
  // Room per chunk: its lines, but no more than entries of the shortest form ("1 1 1 1\n")
  // could fill, so that a file of blank lines reserves little.
  const int64_t shortest_entry = 2 * (layout.order + 1);
  for (size_t k = 0; k < chunks.size(); ++k) {
    line_counts[k] = std::min(CountLines(chunks[k]),
                              static_cast<int64_t>(chunks[k].size()) / shortest_entry + 1);
  }
  int64_t total_lines = 0;
  for (int64_t n : line_counts) total_lines += n;

  std::vector<TnsPart> parts(chunks.size());
  auto sequential = [&] {
    TnsPart all;
    all.Init(layout.order, total_lines);
    ParseTnsLines(p, end, layout.first_line, layout, name, &all);
    return all;
  };
  TnsPart result;
  if (chunks.size() <= 1) {
    result = sequential();
  } else {
    const std::vector<std::exception_ptr> errors =
        RunTasks(static_cast<int>(chunks.size()), [&](int k) {
          const std::string_view chunk = chunks[static_cast<size_t>(k)];
          // The first part becomes the result, so it gets room for everything.
          parts[static_cast<size_t>(k)].Init(
              layout.order, k == 0 ? total_lines : line_counts[static_cast<size_t>(k)]);
          // Line numbers are only right for the first chunk; errors are re-reported below.
          ParseTnsLines(chunk.data(), chunk.data() + chunk.size(), layout.first_line, layout, name,
                        &parts[static_cast<size_t>(k)]);
        });
    bool failed = false;
    for (const auto& error : errors) {
      if (!error) continue;
      try {
        std::rethrow_exception(error);
      } catch (const InputError&) {
        failed = true;
      }
    }
    if (failed) {
      parts.clear();
      result = sequential();  // names the first bad line of the file
    } else {
      result = std::move(parts[0]);
      for (size_t k = 1; k < parts.size(); ++k) {
        for (int m = 0; m < layout.order; ++m) {
          auto& to = result.coords[static_cast<size_t>(m)];
          auto& from = parts[k].coords[static_cast<size_t>(m)];
          to.insert(to.end(), from.begin(), from.end());
          std::vector<int32_t>().swap(from);
          result.max_index[static_cast<size_t>(m)] = std::max(
              result.max_index[static_cast<size_t>(m)], parts[k].max_index[static_cast<size_t>(m)]);
        }
        result.values.insert(result.values.end(), parts[k].values.begin(), parts[k].values.end());
        std::vector<double>().swap(parts[k].values);
      }
    }
  }

  CooTensor tensor;
  for (int m = 0; m < layout.order; ++m) {
    tensor.dims.push_back(int64_t(result.max_index[static_cast<size_t>(m)]) + 1);
  }
  tensor.coords = std::move(result.coords);
  tensor.values = std::move(result.values);
  if (options.canonicalize) tensor.Canonicalize();
  tensor.explicit_zeros = std::count(tensor.values.begin(), tensor.values.end(), 0.0);
  return tensor;
}

}  // namespace io_internal

CooTensor ParseTns(std::string_view text, const std::string& name) {
  return io_internal::ParseTns(text, name, io_internal::ParseOptions{});
}

}  // namespace sparsetune
