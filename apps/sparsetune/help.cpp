#include "help.hpp"

#include <algorithm>
#include <map>

namespace sparsetune::cli {

namespace {

// One or more command lines per subcommand, with what they do when it is not plain.
const std::map<std::string, std::string>& Examples() {
  static const std::map<std::string, std::string> examples = {
      {"info", "sparsetune info datasets/examples/cavity24.mtx --stats"},
      {"gen", "sparsetune gen powerlaw --rows 1M --nnz 10M --seed 2 -o graph.mtx"},
      {"gen uniform", "sparsetune gen uniform --rows 100k --cols 100k --nnz 1M -o uniform.mtx"},
      {"gen powerlaw", "sparsetune gen powerlaw --rows 1M --nnz 10M --seed 2 -o rmat.mtx"},
      {"gen graph500", "sparsetune gen graph500 --scale 18 --edge-factor 16 -o graph500.mtx"},
      {"gen chung-lu",
       "sparsetune gen chung-lu --vertices 1M --edges 5M --exponent 2.1 -o social.mtx"},
      {"gen communities",
       "sparsetune gen communities --vertices 1M --edges 10M --mixing 0.2 -o communities.mtx"},
      {"gen banded", "sparsetune gen banded --rows 1M --bandwidth 8 --fill 0.6 -o banded.mtx"},
      {"gen blocked",
       "sparsetune gen blocked --rows 100k --block 4 --nnz 2M --block-fill 0.8 -o blocked.mtx"},
      {"gen stencil2d", "sparsetune gen stencil2d --nx 1000 --ny 1000 -o poisson2d.mtx"},
      {"gen stencil3d", "sparsetune gen stencil3d --nx 100 --ny 100 --nz 100 -o poisson3d.mtx"},
      {"gen diagonal-heavy",
       "sparsetune gen diagonal-heavy --rows 500k --nnz 5M --diag-fraction 0.7 -o diag.mtx"},
      {"gen dnn",
       "sparsetune gen dnn --rows 4096 --cols 4096 --density 0.1 --structure nm -o layer.mtx"},
      {"gen resize",
       "sparsetune gen resize datasets/examples/cavity24.mtx --rows 1M --cols 1M -o big.mtx"},
      {"gen tensor3", "sparsetune gen tensor3 powerlaw --dims 10k,10k,10k --nnz 1M -o counts.tns"},
      {"gen tensor3 uniform",
       "sparsetune gen tensor3 uniform --dims 1000,1000,1000 --nnz 1M -o uniform.tns"},
      {"gen tensor3 powerlaw",
       "sparsetune gen tensor3 powerlaw --dims 10k,10k,10k --nnz 1M --alpha 1.2 -o counts.tns"},
      {"run",
       "sparsetune run datasets/examples/cavity24.mtx --kernel spmv --schedule default --explain\n"
       "  sparsetune run m.mtx --kernel spmm --dense j=64 --schedule bcsr.json --json"},
      {"schedules",
       "sparsetune schedules --kernel sddmm_spmm --tensor m.mtx\n"
       "  sparsetune schedules --expr \"A(i,l) = B(i,j) * C(j,k) * D(k,l)\" --heuristic"},
      {"collect", "sparsetune collect --kernel spmv datasets/corpus/corpus.tsv --samples 100"},
      {"tune",
       "sparsetune tune datasets/examples/cavity24.mtx --kernel spmv\n"
       "  sparsetune tune m.mtx --kernel spmm --dense j=64 --emit tuned/   (and write the "
       "kernel)"},
      {"query",
       "sparsetune query datasets/examples/cavity24.mtx --kernel spmv --emit tuned/\n"
       "  (exit code 1 and the tune command to run when nothing is stored)"},
      {"batch",
       "sparsetune batch datasets/examples --kernel spmv --summary spmv.csv\n"
       "  sparsetune batch --catalog ssstats.csv --root ~/suitesparse --max-nnz 1M --kernel spmv "
       "--shard 0/4"},
      {"bench",
       "sparsetune bench datasets/examples/cavity24.mtx --kernel spmv\n"
       "  sparsetune bench m.mtx --kernel spmm --threads 1 --csv > spmm.csv"},
      {"train", "sparsetune train --kernel spmv --db corpus.db --out models/spmv --epochs 20"},
      {"calibrate",
       "sparsetune calibrate --kernel spmv --minutes 5\n"
       "  sparsetune calibrate --kernel spmm --patterns 24 --samples 16 --json"},
      {"db", "sparsetune db stats"},
      {"db stats", "sparsetune db stats --db spmv.db --json"},
      {"db export",
       "sparsetune db export --measurements spmv.jsonl.gz\n"
       "  sparsetune db export --winners -   (one JSON line per winner on stdout)"},
      {"db import", "sparsetune db import datasets/measurements/*.jsonl.gz --db corpus.db"},
      {"db merge", "sparsetune db merge all.db shard-0.db shard-1.db shard-2.db shard-3.db"},
  };
  return examples;
}

void CollectPaths(const CLI::App& app, const std::string& prefix, std::vector<std::string>& out) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    out.push_back(path);
    CollectPaths(*sub, path, out);
  }
}

void AddExamples(CLI::App& app, const std::string& prefix) {
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    const std::string example = HelpExample(path);
    if (!example.empty()) {
      const std::string footer = sub->get_footer();
      sub->footer("Example:\n  " + example + (footer.empty() ? "" : "\n\n" + footer));
    }
    AddExamples(*sub, path);
  }
}

// The names nearest to `word` among `names`: within an edit distance of a third of the word
// (at least 1, at most 3), or names that start with it; at the same distance, names that
// start with the word come first ("tun": tune rather than run).
std::vector<std::string> Nearest(const std::string& word, const std::vector<std::string>& names) {
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  size_t best = 2 * limit + 2;
  std::vector<std::string> nearest;
  for (const std::string& name : names) {
    const bool prefix = word.size() >= 2 && name.rfind(word, 0) == 0;
    size_t d = EditDistance(word, name);
    if (d > limit && prefix) d = limit;
    if (d > limit) continue;
    const size_t score = 2 * d + (prefix ? 0 : 1);
    if (score < best) {
      best = score;
      nearest.clear();
    }
    if (score == best) nearest.push_back(name);
  }
  return nearest;
}

std::string OneOf(const std::vector<std::string>& names) {
  std::string out;
  for (size_t k = 0; k < names.size(); ++k)
    out += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
  return out;
}

std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (; app; app = app->get_parent()) path = app->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

bool HasPositionals(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options())
    if (option->get_positional()) return true;
  return false;
}

// The option named by a command-line word ("--kernel", "--kernel=spmv", "-k"), or nullptr.
const CLI::Option* FindOption(const CLI::App& app, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  for (const CLI::App* a = &app; a; a = a->get_parent()) {
    for (const CLI::Option* option : a->get_options()) {
      if (option->check_name(name)) return option;
    }
    // Options of a parent apply after a subcommand only where CLI11 lets them fall through.
    if (!a->get_fallthrough()) break;
  }
  return nullptr;
}

}  // namespace

size_t EditDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein plus the swap of two neighbours.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string HelpExample(const std::string& path) {
  auto it = Examples().find(path);
  return it == Examples().end() ? "" : it->second;
}

std::vector<std::string> SubcommandPaths(const CLI::App& app) {
  std::vector<std::string> out;
  CollectPaths(app, "", out);
  return out;
}

void AddHelpExamples(CLI::App& app) {
  AddExamples(app, "");
}

std::string CommandLineMistake(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  bool expects_value = false;
  for (const std::string& word : args) {
    if (word == "--") break;  // what follows is positional
    if (expects_value) {
      expects_value = false;
      continue;
    }
    if (word.size() > 1 && word[0] == '-') {
      const CLI::Option* option = FindOption(*current, word);
      if (!option && word.rfind("--", 0) == 0) {
        const std::string name = word.substr(0, word.find('='));
        std::vector<std::string> names;
        for (const CLI::Option* o : current->get_options())
          for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
        const std::vector<std::string> nearest = Nearest(name, names);
        return CommandPath(current) + ": unknown option " + name +
               (nearest.empty() ? "" : "; did you mean " + OneOf(nearest) + "?") + " (see " +
               CommandPath(current) + " --help)";
      }
      // A value follows an option that takes one, unless it came with "=" or is a flag.
      if (option && option->get_type_size() != 0 && word.find('=') == std::string::npos &&
          word.rfind("--", 0) == 0)
        expects_value = true;
      if (option && option->get_type_size() != 0 && word.rfind("--", 0) != 0 && word.size() == 2)
        expects_value = true;
      continue;
    }
    // A word where only a subcommand can stand: the app has subcommands and no positionals.
    const std::vector<const CLI::App*> subs = current->get_subcommands({});
    if (subs.empty() || HasPositionals(*current)) continue;
    const CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* sub : subs) {
      if (sub->check_name(word)) next = sub;
      names.push_back(sub->get_name());
    }
    if (!next) {
      const std::vector<std::string> nearest = Nearest(word, names);
      std::string all;
      for (const std::string& n : names) all += (all.empty() ? "" : " ") + n;
      return CommandPath(current) + ": '" + word + "' is not a command" +
             (nearest.empty() ? "" : "; did you mean " + OneOf(nearest) + "?") +
             "\n  commands: " + all;
    }
    current = next;
  }
  return "";
}

}  // namespace sparsetune::cli
