#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune::testing {

// A fresh directory under /tmp, removed with its files at the end of the scope.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/sparsetune_io_test_XXXXXX";
    const char* made = mkdtemp(pattern);
    path_ = made ? made : "/tmp";
  }
  ~TempDir() {
    for (const auto& f : files_) std::remove(f.c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

  // Writes `contents` to `name` in the directory and returns the full path.
  std::string Write(const std::string& name, std::string_view contents) {
    const std::string full = Track(name);
    if (FILE* f = std::fopen(full.c_str(), "wb")) {
      std::fwrite(contents.data(), 1, contents.size(), f);
      std::fclose(f);
    }
    return full;
  }
  // Returns the full path of `name` and removes it at the end of the scope.
  std::string Track(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

struct Entry {
  std::vector<int32_t> coordinate;
  double value;
  bool operator==(const Entry& o) const { return coordinate == o.coordinate && value == o.value; }
};

inline std::vector<Entry> Entries(const CooTensor& t) {
  std::vector<Entry> out;
  for (int64_t e = 0; e < t.nnz(); ++e) {
    Entry entry{{}, t.values[static_cast<size_t>(e)]};
    for (int m = 0; m < t.order(); ++m) {
      entry.coordinate.push_back(t.coords[static_cast<size_t>(m)][static_cast<size_t>(e)]);
    }
    out.push_back(entry);
  }
  return out;
}

}  // namespace sparsetune::testing
