// The first line of `COMPILER --version`, which both the JIT cache key and the machine row
// include. Running the compiler costs about 20 ms, most of what `sparsetune query` would
// spend, so the line is kept in the cache directory, keyed by the resolved executable's path,
// size and modification time: an upgrade or another alternative changes the key.
#pragma once

#include <string>

namespace sparsetune {

// "" when the compiler cannot be run. Safe to call from several threads and processes.
std::string CompilerVersionLine(const std::string& compiler);

// `text` quoted for /bin/sh.
std::string ShellQuote(const std::string& text);

}  // namespace sparsetune
