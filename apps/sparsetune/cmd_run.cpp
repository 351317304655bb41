#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "io/read.hpp"
#include "ir/footprint.hpp"
#include "ir/loop_nest.hpp"
#include "jit/jit.hpp"
#include "measure/runner.hpp"

namespace sparsetune::cli {

namespace {

struct RunCommandOptions {
  std::string file;
  KernelOptions kernel;
  std::string schedule = "default";
  int threads = -1;
  bool verify = true;
  bool json = false;
  bool explain = false;
  bool baked = false;
};

void RunRun(const RunCommandOptions& o, Context& context) {
  ResolvedKernel k = ResolveKernel(o.kernel);
  // Everything about the schedule is checked before the tensor is read or a compiler runs.
  const bool random = IsRandomScheduleSpec(o.schedule);
  std::mt19937_64 rng(random ? RandomScheduleSeed(o.schedule) : 0);
  Schedule schedule = random ? Schedule() : LoadSchedule(o.schedule, k.expression);
  if (o.threads >= 0) schedule.threads = o.threads;

  std::vector<std::string> warnings;
  CooTensor tensor = ReadTensorFile(o.file, &warnings);
  if (std::string left_out = ValuesLeftOut(tensor, k.dtype); !left_out.empty())
    warnings.push_back(o.file + ": " + left_out);
  for (const auto& w : warnings) std::fprintf(stderr, "sparsetune: warning: %s\n", w.c_str());
  IndexSizes sizes = ResolveIndexSizes(k.expression, tensor.dims, k.dense_sizes);
  try {
    CheckRunFitsInMemory(k.expression, tensor, sizes, k.dtype);
  } catch (const InputError& error) {
    throw InputError(o.file, 0, error.cause());
  }
  auto sample = [&] {
    schedule = SampleSchedule(k.name, k.expression, sizes, rng);
    if (o.threads >= 0) schedule.threads = o.threads;
  };
  if (random) sample();
  LowerOutcome lowered = Lower(k.expression, schedule);
  if (!lowered.nest) throw InputError(o.schedule, 0, "invalid schedule: " + lowered.error);

  Jit jit;
  KernelRunner runner(k.expression, tensor, sizes, k.dtype, jit);
  RunOptions options;
  options.verify = o.verify;
  options.mode = o.baked ? CodegenMode::kBaked : CodegenMode::kRuntimeParameters;
  RunResult r = runner.Run(schedule, options);
  // A sampled format may pad past the cap on this tensor: the seed's next draws stand in.
  for (int redraw = 0; random && r.status == RunStatus::kFormatRefused && redraw < 100; ++redraw) {
    sample();
    r = runner.Run(schedule, options);
  }
  if (r.status == RunStatus::kFormatRefused) {
    throw InputError(o.schedule, 0, "the format does not apply to " + o.file + ": " + r.message);
  }
  if (r.status == RunStatus::kInvalidSchedule)
    throw InputError(o.schedule, 0, "invalid schedule: " + r.message);
  if (r.status == RunStatus::kWrongResult) {
    context.exit_code = 3;
    std::fprintf(stderr,
                 "sparsetune: internal error: the generated kernel (%s) gave a wrong result: %s\n",
                 r.source_path.c_str(), r.message.c_str());
  }

  nlohmann::json out;
  out["file"] = o.file;
  out["kernel"] = k.name;
  out["expression"] = k.expression.text;
  out["dtype"] = DTypeName(k.dtype);
  out["dense"] = nlohmann::json::object();
  for (const auto& index : k.expression.DenseOnlyIndices()) out["dense"][index] = sizes.at(index);
  out["schedule"] = nlohmann::json::parse(r.schedule_json);
  out["status"] = RunStatusName(r.status);
  out["verified"] = r.verified;
  out["max_relative_error"] = r.max_relative_error;
  out["time_ms"] = {{"median", r.time.median_ms}, {"min", r.time.min_ms}, {"max", r.time.max_ms}};
  if (r.time.far_weight > 0) {
    out["time_ms"]["near"] = r.time.near_ms;
    out["time_ms"]["far"] = r.time.far_ms;
    out["time_ms"]["far_weight"] = r.time.far_weight;
  }
  out["reps"] = r.time.reps;
  out["disturbed"] = r.time.disturbed;
  if (r.time.disturbed) out["disturbance"] = r.time.disturbance;
  out["timing_attempts"] = r.time.attempts;
  out["probe_us"] = r.time.probe_us;
  out["pack_ms"] = r.pack_ms;
  out["ordering_ms"] = r.ordering_ms;
  out["compile_ms"] = r.compile_ms;
  out["compile_cached"] = r.compile_cached;
  out["source"] = r.source_path;
  if (o.explain) out["nest"] = r.nest;
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::printf("%s  %s  %s\n", o.file.c_str(), k.name.c_str(), k.expression.text.c_str());
  std::printf("  schedule   %s\n", schedule.Summary().c_str());
  if (o.explain) std::printf("%s", r.nest.c_str());
  std::printf("  verified   %s (max relative error %.2g)\n", r.verified ? "yes" : "no",
              r.max_relative_error);
  std::printf("  time       median %s  min %s  max %s  (%d reps)\n",
              FormatMs(r.time.median_ms).c_str(), FormatMs(r.time.min_ms).c_str(),
              FormatMs(r.time.max_ms).c_str(), r.time.reps);
  if (r.time.disturbed)
    std::printf("  machine    disturbed, the time is not to be trusted: %s (timed %d times)\n",
                r.time.disturbance.c_str(), r.time.attempts);
  if (r.ordering_ms > 0) {
    const bool columns_too =
        tensor.order() == 2 && RenumbersColumns(schedule.ordering, tensor.dims[0], tensor.dims[1]);
    std::printf("  ordering   %s   (rows%s renumbered before packing)\n",
                FormatMs(r.ordering_ms).c_str(), columns_too ? " and columns" : "");
  }
  std::printf("  pack       %s   compile %s%s\n", FormatMs(r.pack_ms).c_str(),
              FormatMs(r.compile_ms).c_str(), r.compile_cached ? " (cached)" : "");
  std::printf("  source     %s\n", r.source_path.c_str());
}

}  // namespace

void RegisterRun(CLI::App& app, Context& context) {
  auto o = std::make_shared<RunCommandOptions>();
  CLI::App* sub =
      app.add_subcommand("run", "Run one schedule: pack, generate, compile, verify, time");
  sub->add_option("FILE", o->file, "Sparse matrix or tensor file")->required();
  AddKernelOptions(sub, o->kernel);
  sub->add_option("--schedule,-s", o->schedule,
                  "Schedule JSON file, 'default' (FixedCSR) or 'random:SEED' (a sampled valid "
                  "schedule; a WACO SuperSchedule for spmv, spmm, sddmm, mttkrp)");
  sub->add_option("--threads,-t", o->threads, "Override the schedule's thread count (0: all)")
      ->check(ThreadCount());
  sub->add_flag("--verify,!--no-verify", o->verify,
                "Check the result against the reference (default on)");
  sub->add_flag("--baked", o->baked, "Compile split sizes and chunk in as constants");
  sub->add_flag("--explain", o->explain, "Print the loop nest");
  sub->add_flag("--json", o->json, "One JSON object on stdout");
  sub->callback([o, &context] { RunRun(*o, context); });
}

}  // namespace sparsetune::cli
