#include "io/inputs.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/errors.hpp"
#include "base/paths.hpp"
#include "base/strings.hpp"
#include "io/read.hpp"

namespace sparsetune {

namespace {

namespace fs = std::filesystem;

bool IsListFileName(const std::string& name) {
  return EndsWith(name, ".list") || EndsWith(name, ".txt");
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

// The entries of a corpus manifest (datasets/corpus/corpus.tsv) for one kernel, each with the
// manifest line it comes from; with `require_files`, a file that is not there is an error.
std::vector<InputFile> ManifestFiles(const std::string& manifest, const std::string& kernel,
                                     bool require_files) {
  std::ifstream in(manifest);
  if (!in) throw InputError(manifest, 0, "cannot open the manifest");
  const fs::path shared = SharedDatasetsDirectory(manifest);
  const fs::path cache = EnvOr("SPARSETUNE_CORPUS_CACHE", XdgCacheHome() + "/sparsetune/corpus");
  std::vector<InputFile> out;
  std::string line;
  int64_t number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = SplitTabs(line);
    if (!header) {
      if (fields.size() < 4 || fields[0] != "name" || fields[1] != "kernels" ||
          fields[3] != "source")
        throw InputError(manifest, number, "expected the header name, kernels, nnz, source");
      header = true;
      continue;
    }
    if (fields.size() < 4) throw InputError(manifest, number, "expected 4 tab-separated fields");
    if (("," + fields[1] + ",").find("," + kernel + ",") == std::string::npos) continue;
    const std::string& source = fields[3];
    fs::path file;
    const bool generated = source.rfind("gen ", 0) == 0;
    if (source.rfind("shared:", 0) == 0) {
      file = shared / source.substr(7);
    } else if (generated) {
      const bool tensor = source.find("tensor3") != std::string::npos;
      file = cache / "files" / (fields[0] + (tensor ? ".tns" : ".mtx"));
    } else {
      throw InputError(manifest, number, "a source is shared:PATH or a gen command");
    }
    std::error_code ec;
    if (require_files && !fs::is_regular_file(file, ec)) {
      throw InputError(manifest, number,
                       file.string() + " does not exist" +
                           (generated ? " (generate the corpus with "
                                        "scripts/collect_training_data.sh --materialize-only)"
                                      : ""));
    }
    out.push_back({file.string(), source});
  }
  if (!header) throw InputError(manifest, number, "no header: expected name, kernels, nnz, source");
  return out;
}

std::vector<InputFile> ListFiles(const std::string& list) {
  std::ifstream in(list);
  if (!in) throw InputError(list, 0, "cannot open the list");
  std::vector<InputFile> out;
  std::string line;
  int64_t number = 0;
  const fs::path base = fs::path(list).parent_path();
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    std::string entry = line.substr(0, tab);
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (entry.empty()) continue;
    const fs::path p = fs::path(entry).is_absolute() ? fs::path(entry) : base / entry;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) throw InputError(list, number, "no such file: " + p.string());
    const std::string origin = tab == std::string::npos ? p.string() : line.substr(tab + 1);
    out.push_back({p.string(), origin.empty() ? p.string() : origin});
  }
  return out;
}

}  // namespace

std::vector<InputFile> ExpandInputPaths(const std::vector<std::string>& paths,
                                        const std::string& kernel) {
  std::vector<InputFile> out;
  auto append = [&out](std::vector<InputFile> files) {
    out.insert(out.end(), files.begin(), files.end());
  };
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw InputError(path, 0, "no such file or directory");
    if (EndsWith(path, ".tsv")) {
      append(ManifestFiles(path, kernel, true));
    } else if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_regular_file() && HasTensorFileExtension(entry.path().filename().string()))
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      for (const auto& f : found) out.push_back({f, f});
    } else if (IsListFileName(path)) {
      append(ListFiles(path));
    } else {
      out.push_back({path, path});
    }
  }
  if (out.empty()) throw InputError("no matrix or tensor files found in the given paths");
  return out;
}

std::string MatrixNameOf(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".tar", ".tgz", ".mtx", ".tns"}) {
    if (EndsWith(name, ext)) name.resize(name.size() - std::string(ext).size());
  }
  return name;
}

std::string SharedDatasetsDirectory(const std::string& manifest) {
  const fs::path checkout = fs::absolute(manifest).parent_path().parent_path().parent_path();
  return EnvOr("SPARSETUNE_SHARED_DATASETS", (checkout.parent_path() / "shared/datasets").string());
}

std::vector<InputFile> CorpusManifestEntries(const std::string& manifest,
                                             const std::string& kernel) {
  return ManifestFiles(manifest, kernel, false);
}

}  // namespace sparsetune
