#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/errors.hpp"
#include "commands.hpp"
#include "help.hpp"
#include "tune/tune.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sparsetune: an offline autotuner for sparse tensor kernels on CPUs", "sparsetune"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  app.set_version_flag("--version", sparsetune::cli::VersionText(),
                       "Print the version and the git revision it was built from");
  sparsetune::cli::Context context;
  sparsetune::cli::RegisterInfo(app, context);
  sparsetune::cli::RegisterGen(app, context);
  sparsetune::cli::RegisterRun(app, context);
  sparsetune::cli::RegisterSchedules(app, context);
  sparsetune::cli::RegisterCollect(app, context);
  sparsetune::cli::RegisterTune(app, context);
  sparsetune::cli::RegisterQuery(app, context);
  sparsetune::cli::RegisterBatch(app, context);
  sparsetune::cli::RegisterBench(app, context);
  sparsetune::cli::RegisterTrain(app, context);
  sparsetune::cli::RegisterCalibrate(app, context);
  sparsetune::cli::RegisterDb(app, context);
  sparsetune::cli::AddHelpExamples(app);
  // After the subcommands: each takes its parent's footer when it is created.
  app.footer(
      "Example:\n  sparsetune tune datasets/examples/cavity24.mtx --kernel spmv\n\n"
      "`sparsetune COMMAND --help` shows a command's options and an example.");
  // No command at all: what there is to run.
  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return 2;
  }
  // A mistyped subcommand or option gets the nearest names, not CLI11's generic message.
  const std::string mistake =
      sparsetune::cli::CommandLineMistake(app, std::vector<std::string>(argv + 1, argv + argc));
  if (!mistake.empty()) {
    std::fprintf(stderr, "%s\n", mistake.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the usage error
    return code == 0 ? 0 : 2;
  } catch (const sparsetune::InputError& e) {
    std::fprintf(stderr, "sparsetune: error: %s\n", e.what());
    return 2;
  } catch (const sparsetune::MachineBusyError& e) {
    std::fprintf(stderr, "sparsetune: error: %s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sparsetune: internal error: out of memory\n");
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsetune: internal error: %s\n", e.what());
    return 3;
  }
  return context.exit_code;
}
