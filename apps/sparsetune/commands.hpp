#pragma once

#include <CLI/CLI.hpp>

namespace sparsetune::cli {

// Each subcommand registers its options and a callback that runs it. A callback signals bad
// input by throwing InputError (exit 2) and sets `exit_code` for other non-zero outcomes.
struct Context {
  int exit_code = 0;
};

void RegisterInfo(CLI::App& app, Context& context);
void RegisterGen(CLI::App& app, Context& context);
void RegisterRun(CLI::App& app, Context& context);
void RegisterSchedules(CLI::App& app, Context& context);
void RegisterCollect(CLI::App& app, Context& context);
void RegisterDb(CLI::App& app, Context& context);
void RegisterTune(CLI::App& app, Context& context);
void RegisterQuery(CLI::App& app, Context& context);
void RegisterBatch(CLI::App& app, Context& context);
void RegisterBench(CLI::App& app, Context& context);
void RegisterTrain(CLI::App& app, Context& context);
void RegisterCalibrate(CLI::App& app, Context& context);

}  // namespace sparsetune::cli
