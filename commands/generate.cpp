// `lmkit generate`: greedy or temperature-sampled continuation of token ids (golden checks, sample data for eval).
#include "lmkit/model/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "command.h"
#include "lmkit/io/token_file.h"
#include "lmkit/present/model.h"

namespace lmkit::cli {

RunFn SetupGenerate(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    model::GenerateRequest o;
    std::vector<std::string> prompt;  // as given: "1,450,32" and/or separate values
    std::string output;
    bool logits = false;
  };
  auto a = std::make_shared<Args>();
  sub.footer(
      "Continue token ids with a decoder checkpoint (docs/model.md families): greedy by default, or sampled with "
      "--temperature/--seed; "
      "prints the ids (one sequence per line), or writes them to a token file with -o.");
  sub.add_option("MODEL", a->o.model, "model directory (config.json + *.safetensors) or a .safetensors file")
      ->required();
  // Split here rather than by CLI11's delimiter, which drops empty items: "1,2,,3" must be an error, not [1, 2, 3].
  sub.add_option("--prompt-ids", a->prompt, "prompt token ids, e.g. 1 (BOS) or 1,450,32")->required();
  sub.add_option("--max-tokens", a->o.max_tokens, "ids to generate per sequence")->required();
  sub.add_option("--temperature", a->o.temperature, "0 = greedy (default); > 0 samples from softmax(logits / T)");
  sub.add_option("--seed", a->o.seed, "random seed for sampling (default: 0)");
  sub.add_option("--samples", a->o.samples, "number of sequences (default: 1)")->check(PositiveFinite());
  sub.add_option("-o,--output", a->output, "write all sequences, concatenated, to a .npy or .bin (uint16/uint32) file");
  sub.add_flag("--logits", a->logits, "with --json: include the first sequence's next-position logits");
  return [a, &g] {
    // The logits only go into the JSON document; without --json the flag was accepted and changed nothing.
    if (a->logits && !g.json) return UsageError("generate", "--logits needs --json (the logits go into the JSON)");
    a->o.prompt.clear();
    for (const std::string& item : a->prompt) {
      for (size_t begin = 0;;) {
        const size_t comma = std::min(item.find(',', begin), item.size());
        const std::string_view id(item.data() + begin, comma - begin);
        uint32_t v = 0;
        const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
        if (id.empty() || ec != std::errc() || end != id.data() + id.size())
          return UsageError("generate",
                            "--prompt-ids: " + (id.empty() ? std::string("an empty id") : "'" + std::string(id) + "'") +
                                " in '" + item + "' (expected token ids such as 1,450,32)");
        a->o.prompt.push_back(v);
        if (comma == item.size()) break;
        begin = comma + 1;
      }
    }
    // The token file replaces its destination; naming the checkpoint (or a file of its directory) would destroy it.
    // A checkpoint given as a .safetensors file reads the config.json beside it: that is an input too.
    std::vector<std::string> ins = {a->o.model};
    std::error_code ec;
    if (std::filesystem::is_regular_file(a->o.model, ec))
      ins.push_back((std::filesystem::path(a->o.model).parent_path() / "config.json").string());
    if (Status st = CheckOutputIsNotAnInput(ins, a->output); !st.ok()) return ReportError("generate", st);
    a->o.threads = g.ResolvedThreads();
    auto progress = MakeProgress(g);
    auto r = model::Generate(a->o, progress.get());
    if (!r.ok()) return ReportError("generate", r.status(), {{"prompt", "--prompt-ids"}});
    if (!a->output.empty()) {
      auto w = io::TokenWriter::Create(a->output, io::TokenFormatFromPath(a->output),
                                       io::ResolveAuto(io::TokenDtype::kAuto, r->vocab));
      if (!w.ok()) return ReportError("generate", w.status());
      for (const auto& s : r->sequences) {
        Status st = w->Append(s);
        if (!st.ok()) return ReportError("generate", st);
      }
      Status st = w->Commit();
      if (!st.ok()) return ReportError("generate", st);
    }
    if (g.json) {
      PrintJson(present::GenerateResultToJson(a->o, *r, a->logits));
      return static_cast<int>(kExitOk);
    }
    if (!a->output.empty()) {
      PrintText(
          fmt::format("{} sequences of {} tokens -> {}\n", r->sequences.size(), r->sequences[0].size(), a->output));
      return static_cast<int>(kExitOk);
    }
    std::string out;
    for (const auto& s : r->sequences) out += fmt::format("{}\n", fmt::join(s, " "));
    PrintText(out);
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
