// `lmkit bpe`: a group of subcommands. Each lives in its own file (bpe_train.cpp, bpe_count.cpp, bpe_encode.cpp).
#include "commands.h"

namespace lmkit::cli {

RunFn SetupBpeTrain(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeCount(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeEncode(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpeDecode(CLI::App& sub, const GlobalOptions& g);

RunFn SetupBpe(CLI::App& sub, const GlobalOptions& g) {
  sub.require_subcommand(1);
  struct Entry {
    CLI::App* app;
    RunFn run;
  };
  auto entries = std::make_shared<std::vector<Entry>>();
  auto add = [&](const char* name, const char* summary, RunFn (*setup)(CLI::App&, const GlobalOptions&)) {
    CLI::App* s = sub.add_subcommand(name, summary);
    s->fallthrough();
    entries->push_back({s, setup(*s, g)});
  };
  add("train", "learn a byte-level BPE vocabulary and merges from text (CS336 semantics)", SetupBpeTrain);
  add("count", "count the pre-tokens of one shard of a corpus, for bpe train --counts", SetupBpeCount);
  add("encode", "turn text into token ids (tiktoken-exact)", SetupBpeEncode);
  add("decode", "turn token ids back into the exact bytes", SetupBpeDecode);
  return [entries] {
    for (auto& e : *entries)
      if (e.app->parsed()) return e.run();
    return UsageError("bpe", "expected one of: train, count, encode, decode");
  };
}

}  // namespace lmkit::cli
