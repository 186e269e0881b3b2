// `lmkit bpe`: a group of subcommands. Each lives in its own file (bpe_train.cpp, bpe_count.cpp, bpe_encode.cpp).
#include <string>

#include "command.h"

namespace lmkit::cli {
namespace {

const CommandSpec kBpeCommands[] = {
    {"train", "learn a byte-level BPE vocabulary and merges from text (CS336 semantics)", SetupBpeTrain},
    {"count", "count the pre-tokens of one shard of a corpus, for bpe train --counts", SetupBpeCount},
    {"encode", "turn text into token ids (tiktoken-exact)", SetupBpeEncode},
    {"decode", "turn token ids back into the exact bytes", SetupBpeDecode},
};

}  // namespace

std::span<const CommandSpec> BpeCommands() { return kBpeCommands; }

RunFn SetupBpe(CLI::App& sub, const GlobalOptions& g) {
  sub.require_subcommand(1);
  struct Entry {
    CLI::App* app;
    RunFn run;
  };
  auto entries = std::make_shared<std::vector<Entry>>();
  std::string names;
  for (const CommandSpec& c : kBpeCommands) {
    CLI::App* s = sub.add_subcommand(c.name, c.summary);
    s->fallthrough();
    entries->push_back({s, c.setup(*s, g)});
    names += (names.empty() ? "" : ", ") + std::string(c.name);
  }
  return [entries, names] {
    for (auto& e : *entries)
      if (e.app->parsed()) return e.run();
    return UsageError("bpe", "expected one of: " + names);
  };
}

}  // namespace lmkit::cli
