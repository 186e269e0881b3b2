// `lmkit eval`: NLL / perplexity of a decoder checkpoint (docs/model.md families) over a token file; --compare adds KL
// and top-1 agreement.
#include "lmkit/model/eval.h"

#include <optional>

#include "command.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/io/dtype.h"
#include "lmkit/present/eval_svg.h"
#include "lmkit/present/model.h"

namespace lmkit::cli {

RunFn SetupEval(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    model::EvalRequest o;
    std::string dtype = "u16", svg;
  };
  auto a = std::make_shared<Args>();
  sub.footer(
      "Mean negative log-likelihood and perplexity of a Hugging Face decoder checkpoint (Llama, Qwen, Gemma, Phi-3, "
      "OLMo 2, Mixtral, ...) (float, or INT8 from "
      "'lmkit quantize') over a token file; --compare OTHER adds per-token KL divergence, top-1 agreement and the "
      "perplexity delta.");
  sub.add_option("MODEL", a->o.model, "model directory (config.json + *.safetensors) or a .safetensors file")
      ->required();
  sub.add_option("--tokens", a->o.tokens, "token ids (.npy, or headerless .bin as written by 'lmkit bpe encode')")
      ->required();
  sub.add_option("--compare", a->o.compare, "a second checkpoint to compare with MODEL on the same tokens");
  sub.add_option("--seq-len", a->o.seq_len, "window length in tokens (default: min(max_position_embeddings, 1024))");
  sub.add_option("--max-tokens", a->o.max_tokens, "evaluate only the first N tokens of the file");
  auto* dtype = sub.add_option("--dtype", a->dtype, "id type of a .bin token file: u16 (default) or u32");
  sub.add_option("--svg", a->svg, "with --compare: write a chart of the KL divergence by position to this SVG file");
  return [a, dtype, &g] {
    if (a->dtype != "u16" && a->dtype != "u32") return UsageError("eval", "--dtype must be u16 or u32");
    // A .npy header gives the ids' type; there the flag was accepted and changed nothing.
    const std::string& t = a->o.tokens;
    if (dtype->count() > 0 && t.size() >= 4 && t.compare(t.size() - 4, 4, ".npy") == 0)
      return UsageError("eval", "--dtype applies to .bin token files (a .npy header gives its own dtype)");
    a->o.bin_dtype = a->dtype == "u16" ? io::TokenDtype::kU16 : io::TokenDtype::kU32;
    if (!a->svg.empty() && a->o.compare.empty())
      return UsageError("eval", "--svg needs --compare (the chart is the KL divergence by position)");
    if (Status st = CheckOutputIsNotAnInput({a->o.model, a->o.compare, a->o.tokens}, a->svg, "--svg"); !st.ok())
      return ReportError("eval", st);
    std::optional<AtomicFile> svg_file;
    if (!a->svg.empty()) {
      auto f = AtomicFile::Create(a->svg);
      if (!f.ok()) return ReportError("eval", f.status());
      svg_file = std::move(*f);
    }
    a->o.threads = g.ResolvedThreads();
    auto progress = MakeProgress(g);
    auto r = model::Evaluate(a->o, progress.get());
    if (!r.ok()) return ReportError("eval", r.status());
    if (svg_file) {
      Status st = svg_file->Write(present::EvalKlSvg(*r));
      if (st.ok()) st = svg_file->Commit();
      if (!st.ok()) return ReportError("eval", st);
    }
    if (g.json) {
      PrintJson(present::EvalResultToJson(*r));
    } else {
      PrintText(present::EvalResultToText(*r));
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
