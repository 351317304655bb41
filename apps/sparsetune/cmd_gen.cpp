#include "commands.hpp"

namespace sparsetune::cli {
void RegisterGen(CLI::App& app, Context& context) {}
}  // namespace sparsetune::cli
