// One lmkit command line, for main() and for the Python module: the table of subcommands, the global options, and the
// mapping of parse results to exit codes. What a subcommand does lives in commands/<name>.cpp and src/lmkit/.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "command.h"
#include "lmkit/common/interrupt_cleanup.h"
#include "lmkit/common/thread_start.h"
#include "lmkit/version.h"

namespace lmkit::cli {
namespace {

// The one table of subcommands: drives `lmkit --help`, dispatch and the did-you-mean suggestion. Help lines share one
// style: a summary here is a lowercase phrase with no final period (a subcommand's longer prose goes in its footer),
// and so is every flag's help, its default last as "(default: X)".
const CommandSpec kCommands[] = {
    {"bpe", "train, encode and decode byte-level BPE tokenizers (GPT-2, tiktoken, HF formats)", SetupBpe},
    {"flops", "FLOPs per matmul, parameters, training/inference cost and time on a GPU", SetupFlops},
    {"memory", "memory for weights, gradients, optimizer, activations and KV cache; what fits", SetupMemory},
    {"plan", "many models on a few GPUs: memory, latency, load/switch time and a packing per GPU", SetupPlan},
    {"calibrate", "INT8 activation ranges from sample activations or a model run (minmax, percentile, entropy, mse)",
     SetupCalibrate},
    {"quantize", "quantize a safetensors checkpoint (INT8, FP8, INT4; RTN or GPTQ, SmoothQuant), with an error report",
     SetupQuantize},
    {"eval", "perplexity of a decoder checkpoint on token ids; KL/top-1 against another (e.g. INT8)", SetupEval},
    {"generate", "greedy or sampled continuation of token ids with a decoder checkpoint", SetupGenerate},
    {"dataload", "can this token-file pipeline keep the GPU fed, and if not, why", SetupDataload},
    {"inspect",
     "tensor names, dtypes, shapes and bytes, and the parameter total, of a .safetensors/.npy file or model directory",
     SetupInspect},
    {"env", "CPU model and cores, memory and CUDA devices (name, memory, compute capability, driver) of this machine",
     SetupEnv},
};

// Command groups whose first positional word must be one of their subcommands (for the did-you-mean check).
struct GroupSpec {
  const char* group;
  std::span<const CommandSpec> (*children)();
};
const GroupSpec kGroups[] = {{"bpe", BpeCommands}};

// Global options that take a value, so the scan for the subcommand name can skip it.
bool TakesValue(const char* arg) { return std::strcmp(arg, "--threads") == 0 || std::strcmp(arg, "-j") == 0; }

int Main(int argc, char** argv, bool standalone) {
  if (standalone) InstallInterruptCleanup();

  // An unknown subcommand gets a suggestion rather than CLI11's generic "arguments were not expected".
  std::vector<std::string> names;
  for (const auto& c : kCommands) names.emplace_back(c.name);
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      if (TakesValue(argv[i])) ++i;
      continue;
    }
    std::string word = argv[i];
    bool known = false;
    for (const auto& n : names) known = known || n == word;
    if (!known) {
      std::string near = NearestName(word, names);
      return UsageError("", "unknown command '" + word + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
                                " (see 'lmkit --help')");
    }
    for (const auto& g : kGroups) {
      if (word != g.group) continue;
      for (int k = i + 1; k < argc; ++k) {
        if (argv[k][0] == '-') {
          if (TakesValue(argv[k])) ++k;
          continue;
        }
        std::string child = argv[k];
        std::vector<std::string> children;
        for (const CommandSpec& c : g.children()) children.emplace_back(c.name);
        bool ok = false;
        for (const auto& c : children) ok = ok || c == child;
        if (!ok) {
          std::string near = NearestName(child, children);
          return UsageError(word, "unknown command '" + child + "'" +
                                      (near.empty() ? "" : "; did you mean '" + near + "'?") + " (see 'lmkit " + word +
                                      " --help')");
        }
        break;
      }
    }
    break;
  }

  CLI::App app{"lmkit " LMKIT_VERSION " - the numbers language-model engineers need every day", "lmkit"};
  app.set_help_flag("-h,--help", "print this help and exit");  // subcommands copy it
  app.set_version_flag("--version", "lmkit " LMKIT_VERSION, "print the version and exit");
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions globals;
  app.add_flag("--json", globals.json, "print one JSON document on stdout instead of text");
  app.add_option("--threads,-j", globals.threads, "worker threads (default: all CPUs)")
      ->transform(DecimalCount())
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            // Past the CPUs a thread only costs memory (a stack, buffers, an encoder cache each).
            if (v.size() > 6 || std::stoul(v) > kMaxThreads)
              return "at most " + std::to_string(kMaxThreads) + " threads, got " + v;
            return "";
          },
          "", "max threads"));
  app.add_flag("--quiet,-q", globals.quiet, "no progress or notes on stderr");

  std::vector<std::pair<CLI::App*, RunFn>> runs;
  for (const auto& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    sub->fallthrough();
    runs.emplace_back(sub, c.setup(*sub, globals));
  }
  RequireDecimalIntegers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string cmd;
    for (auto* sub : app.get_subcommands()) {
      cmd = sub->get_name();
      for (auto* sub2 : sub->get_subcommands()) cmd += " " + sub2->get_name();
    }
    return UsageError(cmd, std::string(e.what()) + " (see 'lmkit " + (cmd.empty() ? "" : cmd + " ") + "--help')");
  }
  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    const int rc = run();
    if (const int err = StdoutWriteError(); err != 0) {
      std::string cmd = sub->get_name();
      for (auto* sub2 : sub->get_subcommands()) cmd += " " + sub2->get_name();
      std::fprintf(CliErr(), "lmkit %s: stdout: write failed: %s\n", cmd.c_str(), std::strerror(err));
      return rc == 0 ? kExitFailure : rc;
    }
    return rc;
  }
  return UsageError("", "no command given (see 'lmkit --help')");
}

}  // namespace

int RunCli(int argc, char** argv, bool standalone) {
  try {
    return Main(argc, argv, standalone);
  } catch (const std::bad_alloc&) {
    std::fprintf(CliErr(), "lmkit: out of memory\n");
    return kExitFailure;
  } catch (const std::exception& e) {
    // The core returns Status; an exception here is a bug, but it must still end in one clear line.
    std::fprintf(CliErr(), "lmkit: internal error: %s\n", e.what());
    return kExitFailure;
  }
}

}  // namespace lmkit::cli
