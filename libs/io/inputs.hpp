// The matrices and tensors that collect, batch and training run over: files, directories, list
// files and corpus manifests, each entry with the origin the database keeps for it.
#pragma once

#include <string>
#include <vector>

namespace sparsetune {

struct InputFile {
  std::string path;
  // What the database keeps as the matrix's source: the path, or the corpus manifest's source
  // (a shared file, or a gen command with its seed, so that any machine can rebuild it).
  std::string origin;
};

// Expands PATH arguments (collect's, batch's), in order:
// - a corpus manifest (.tsv with columns name, kernels, nnz, source): its entries for `kernel`.
//   shared:PATH sources live in the shared datasets folder ($SPARSETUNE_SHARED_DATASETS, else
//   ../shared/datasets beside the checkout holding the manifest); generated ones in the corpus
//   cache ($SPARSETUNE_CORPUS_CACHE, else sparsetune/corpus under the XDG cache home);
// - a directory: every matrix or tensor file below it, sorted;
// - a list file (.list or .txt): one path per line, relative to the list's folder, optionally
//   followed by a tab and the origin; '#' starts a comment line;
// - anything else: a matrix or tensor file.
// Throws InputError naming the file and line of a missing file or a malformed entry.
std::vector<InputFile> ExpandInputPaths(const std::vector<std::string>& paths,
                                        const std::string& kernel);

// A corpus manifest's entries for `kernel` with the files they resolve to, as
// ExpandInputPaths does, whether or not each file is there (for callers that need only some).
std::vector<InputFile> CorpusManifestEntries(const std::string& manifest,
                                             const std::string& kernel);

// The shared datasets folder a manifest's shared:PATH sources refer to:
// $SPARSETUNE_SHARED_DATASETS, else ../shared/datasets beside the checkout holding the manifest.
std::string SharedDatasetsDirectory(const std::string& manifest);

// The file name without its matrix or tensor extensions: "bcsstk01" for bcsstk01.mtx.gz.
std::string MatrixNameOf(const std::string& path);

}  // namespace sparsetune
