// The version of this build and the git revision it was built from (sparsetune --version).
#pragma once

#include <string>

namespace sparsetune::cli {

// The project's version ("0.1.0").
const char* SparsetuneVersion();
// `git describe --always --dirty` of the checkout at build time; "unknown" outside one.
const char* SparsetuneRevision();
// "sparsetune 0.1.0 (git da30248abcde)".
std::string VersionText();

}  // namespace sparsetune::cli
