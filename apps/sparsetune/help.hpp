// Help that teaches: an example at the foot of every subcommand's --help, and "did you mean"
// for a mistyped subcommand or option.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace sparsetune::cli {

// Puts its example(s) at the foot of every subcommand's --help (before any footer it has).
void AddHelpExamples(CLI::App& app);

// The example text of the subcommand at `path` ("tune", "db stats", "gen tensor3 uniform"),
// or "" when it has none.
std::string HelpExample(const std::string& path);

// The subcommand paths of `app`, depth first ("gen", "gen uniform", ...).
std::vector<std::string> SubcommandPaths(const CLI::App& app);

// What is wrong with the command line before CLI11 parses it, or "": a word where a subcommand
// must be that names none ("tun": did you mean tune?), or a long option the subcommand does
// not have ("--kernal": did you mean --kernel?). The text names the subcommand, the word and
// the nearest names; the command ends with exit code 2.
std::string CommandLineMistake(const CLI::App& app, const std::vector<std::string>& args);

// The edit distance (insertions, deletions, substitutions, transpositions) of two words.
size_t EditDistance(const std::string& a, const std::string& b);

}  // namespace sparsetune::cli
