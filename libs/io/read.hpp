#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensor/coo.hpp"

namespace sparsetune {

// Reads a sparse matrix or tensor, choosing the parser by name: Matrix Market (.mtx, .mtx.gz),
// a SuiteSparse archive (Name.tar.gz holding Name/Name.mtx) or FROSTT (.tns, .tns.gz).
// The result is canonical (sorted, duplicates summed and counted). Bad input throws
// InputError naming the file, the line and the cause; one-line warnings (such as dropping the
// imaginary part of complex values) are appended to `warnings` when it is given.
CooTensor ReadTensorFile(const std::string& path, std::vector<std::string>* warnings = nullptr);

// Whether ReadTensorFile reads a file of this name: .mtx, .mtx.gz, .tns, .tns.gz, .tar.gz or
// .tgz, in any letter case.
bool HasTensorFileExtension(const std::string& path);

// The parsers over text already in memory; `name` is used in messages.
CooTensor ParseMatrixMarket(std::string_view text, const std::string& name,
                            std::vector<std::string>* warnings = nullptr);
CooTensor ParseTns(std::string_view text, const std::string& name);

}  // namespace sparsetune
