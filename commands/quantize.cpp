// `lmkit quantize`: options -> quant::Quantize -> the report (present/quant.h).
#include "lmkit/quant/quantize.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "command.h"
#include "corpus_flags.h"
#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/present/quant.h"

namespace lmkit::cli {
namespace {

// How quantize spells the request's fields where the default (--field-name) does not apply.
const FlagNames kQuantizeFlags = {{"input", "INPUT"}, {"output", "-o"}};

std::string SchemeHelp() {
  std::string out = "what the Linear layers compute with:";
  for (const quant::SchemeInfo& s : quant::Schemes()) out += fmt::format(" {}: {};", s.name, s.summary);
  out.pop_back();
  return out + " (default: w8a16; --list-schemes shows which loaders serve each)";
}

// A file beside `near` that is removed when this goes out of scope (the ids of --calibration-text).
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty()) unlink(path.c_str());
  }
};

// Encodes `text` (text, JSONL or Parquet, as `bpe encode` reads it) with `tokenizer` into a u32 .bin file beside
// `near`, named in `out->path`.
Status EncodeCalibrationText(const std::vector<std::string>& text, const std::string& tokenizer,
                             const CorpusFlags& flags, const std::string& near, unsigned threads, TempFile* out) {
  std::filesystem::path dir = std::filesystem::path(near).parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = (dir / ".lmkit-calibration-ids.XXXXXX").string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) return Status::Io(tmpl, std::string("cannot create a scratch file: ") + std::strerror(errno));
  close(fd);
  out->path = tmpl;
  bpe::EncodeRequest req;
  req.tokenizer = tokenizer;
  LMKIT_ASSIGN_OR_RETURN(req.corpus, CorpusOptionsFrom(flags, text));
  req.output = tmpl;
  req.format = bpe::IdFormat::kBin;
  req.dtype = io::TokenDtype::kU32;
  req.threads = threads;
  LMKIT_ASSIGN_OR_RETURN(bpe::EncodeResult r, bpe::EncodeFile(req, nullptr));
  (void)r;
  return Status::Ok();
}

std::string FormatHelp() {
  std::string out;
  for (const quant::FormatInfo& f : quant::Formats())
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", f.name, f.summary);
  return out + " (default: compressed-tensors)";
}

}  // namespace

RunFn SetupQuantize(CLI::App& sub, const GlobalOptions& g) {
  struct Args {
    quant::QuantizeRequest o;
    std::string scheme = "w8a16", granularity, format = "compressed-tensors", report, svg, method = "rtn", smoothquant,
                tokens_dtype = "u16", tokenizer;
    std::vector<std::string> calibration_text;
    CorpusFlags corpus;
    bool list_schemes = false;
  };
  auto a = std::make_shared<Args>();
  sub.footer(
      "Quantize the Linear weights of a .safetensors file or Hugging Face model directory (INT8 or FP8 in "
      "compressed-tensors for vLLM and transformers; or GGUF Q8_0 for llama.cpp) and report per-tensor error.");
  sub.add_option("INPUT", a->o.input, "a .safetensors file or a model directory (config.json + shards)");
  sub.add_option("-o,--output", a->o.output, "output file (file input) or directory (directory input)");
  sub.add_option("--scheme", a->scheme, SchemeHelp());
  sub.add_option("--granularity", a->granularity,
                 "weights per scale: " + std::string(quant::GranularityChoices()) +
                     "; default: the scheme's (channel; tensor for fp8-static); gguf-q8_0 is always group:32");
  sub.add_option("--calibration", a->o.calibration,
                 "CALIB.json from `lmkit calibrate`: static input scales (w8a8: optional, fp8-static: required)");
  sub.add_option("--include", a->o.include, "regex: quantize only matching 2-D weights (repeatable)")
      ->allow_extra_args(false);
  sub.add_option("--exclude", a->o.exclude, "regex: never quantize matching tensors (repeatable)")
      ->allow_extra_args(false);
  sub.add_flag("--split-fused", a->o.split_fused,
               "write a checkpoint that quantizes only part of q/k/v or gate/up (vLLM fuses them and refuses it)");
  std::string methods;
  for (const quant::MethodInfo& m : quant::Methods())
    methods += fmt::format("{}{}: {}", methods.empty() ? "" : "; ", m.name, m.summary);
  sub.add_option("--method", a->method, methods + " (default: rtn)");
  sub.add_option("--smoothquant", a->smoothquant,
                 "ALPHA in [0, 1] or auto: fold SmoothQuant scales max|X_j|^a / max|W_j|^(1-a) into the norms and the "
                 "q/k/v and gate/up weights (auto: the alpha of 0.3..0.9 with the lowest KL on held-out windows)");
  sub.add_option("--calibration-tokens", a->o.calibration_tokens,
                 "token ids the model runs over for --method gptq and --smoothquant (.npy, or .bin from `lmkit bpe "
                 "encode`)");
  sub.add_option("--calibration-text", a->calibration_text,
                 "text, JSONL or Parquet files to encode with --tokenizer into the calibration tokens (instead of "
                 "--calibration-tokens; read as `lmkit bpe encode` reads them, documents joined, cut into windows of "
                 "--seq-len)")
      ->allow_extra_args(false);
  sub.add_option("--tokenizer", a->tokenizer,
                 "the tokenizer of --calibration-text: gpt2 | cl100k_base | o200k_base | DIR | tokenizer.json | ... "
                 "(as for `lmkit bpe encode`)");
  AddCorpusFlags(sub, &a->corpus);
  sub.add_option("--tokens-dtype", a->tokens_dtype, "id type of a .bin calibration token file: u16 (default) or u32");
  sub.add_option("--samples", a->o.samples, "calibration windows to run (default: every full window of the file)");
  sub.add_option("--seq-len", a->o.seq_len, "calibration window length (default: min(max_position_embeddings, 512))");
  sub.add_option("--dampening", a->o.dampening, "GPTQ: fraction of mean(diag H) added to H's diagonal (default: 0.01)");
  sub.add_flag("--act-order,!--no-act-order", a->o.act_order,
               "GPTQ: quantize input channels in descending order of diag H (default: on, as llm-compressor's "
               "\"static\" act order; --no-act-order for column order)");
  sub.add_option("--format", a->format, FormatHelp());
  sub.add_option("--report", a->report, "also write the JSON report to this file");
  sub.add_option("--svg", a->svg,
                 "also write a chart of SQNR and max error per layer (or per tensor) to this SVG file");
  sub.add_flag("--list-schemes", a->list_schemes,
               "list every scheme x format x granularity and what vLLM, transformers and llama.cpp do with it "
               "(with --json: a stable document for scripts), then exit");
  return [a, &g] {
    if (a->list_schemes) {
      if (g.json)
        PrintJson(present::SchemeListJson());
      else
        PrintText(present::SchemeListText());
      return static_cast<int>(kExitOk);
    }
    if (a->o.input.empty() || a->o.output.empty())
      return UsageError("quantize", "INPUT and -o OUTPUT are required (or --list-schemes)");
    auto scheme = quant::ParseQuantScheme(a->scheme);
    if (!scheme.ok()) return ReportError("quantize", scheme.status(), kQuantizeFlags);
    auto format = quant::ParseQuantFormat(a->format);
    if (!format.ok()) return ReportError("quantize", format.status(), kQuantizeFlags);
    const bool gguf = *format == quant::QuantFormat::kGgufQ8_0;
    const std::string gran_text = !a->granularity.empty() ? a->granularity
                                  : gguf                  ? std::string("group:32")
                                                          : std::string(quant::InfoOf(*scheme).default_granularity);
    auto gran = quant::ParseGranularity(gran_text);
    if (!gran.ok()) return ReportError("quantize", gran.status(), kQuantizeFlags);
    auto method = quant::ParseQuantMethod(a->method);
    if (!method.ok()) return ReportError("quantize", method.status(), kQuantizeFlags);
    a->o.method = *method;
    if (a->smoothquant == "auto") {
      a->o.smoothquant_auto = true;
    } else if (!a->smoothquant.empty()) {
      char* end = nullptr;
      const double alpha = std::strtod(a->smoothquant.c_str(), &end);
      if (end == a->smoothquant.c_str() || *end != '\0' || !(alpha >= 0 && alpha <= 1))
        return UsageError("quantize", "--smoothquant must be a number in [0, 1] or auto, not '" + a->smoothquant + "'");
      a->o.smoothquant_alpha = alpha;
    }
    if (a->tokens_dtype != "u16" && a->tokens_dtype != "u32")
      return UsageError("quantize", "--tokens-dtype must be u16 or u32");
    a->o.tokens_dtype = a->tokens_dtype == "u16" ? io::TokenDtype::kU16 : io::TokenDtype::kU32;
    a->o.scheme = *scheme;
    a->o.granularity = *gran;
    a->o.format = *format;
    a->o.threads = g.ResolvedThreads();
    TempFile ids;
    std::string text_label;
    if (!a->calibration_text.empty() || !a->tokenizer.empty()) {
      if (a->calibration_text.empty() || a->tokenizer.empty())
        return UsageError("quantize", "--calibration-text and --tokenizer go together");
      if (!a->o.calibration_tokens.empty())
        return UsageError("quantize", "give --calibration-tokens or --calibration-text, not both");
      for (const std::string& f : a->calibration_text) text_label += (text_label.empty() ? "" : " ") + f;
      if (Status st =
              EncodeCalibrationText(a->calibration_text, a->tokenizer, a->corpus, a->o.output, a->o.threads, &ids);
          !st.ok())
        return ReportError("quantize", st, BpeFlagNames());
      a->o.calibration_tokens = ids.path;
      a->o.tokens_dtype = io::TokenDtype::kU32;
      a->o.calibration_label = text_label;
    }
    const quant::RenderQuantizeOutput render = present::AddQuantizeOutputs(&a->o, a->report, a->svg);
    auto progress = MakeProgress(g);
    auto rep = quant::Quantize(a->o, progress.get(), render);
    if (!rep.ok()) {
      // The scratch ids are the text's: errors about them name the text.
      Status st = rep.status();
      if (!ids.path.empty() && st.subject() == ids.path)
        st = st.WithSubjectReplaced(text_label + " (encoded by " + a->tokenizer + ")");
      return ReportError("quantize", st, kQuantizeFlags);
    }
    for (const std::string& w : rep->warnings)
      Note(g, "quantize", "warning: " + RenderFields(w, [](std::string_view f) { return FlagFor(f, kQuantizeFlags); }));
    if (g.json)
      PrintJson(present::QuantizeReportJson(*rep));
    else
      PrintText(present::QuantizeReportText(*rep));
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
