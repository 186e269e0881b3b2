// `lmkit bpe encode` and `lmkit bpe decode`: flags → EncodeRequest/DecodeRequest → one core call → summary.
#include <unistd.h>

#include <cstdio>

#include "command.h"
#include "corpus_flags.h"
#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/bpe/encode/special_policy.h"
#include "lmkit/common/name_table.h"
#include "lmkit/common/units.h"
#include "lmkit/present/bpe_json.h"

namespace lmkit::cli {
namespace {

struct EncodeFlags {
  std::string tokenizer;
  std::vector<std::string> specials;
  std::string allowed_special = "all";
  std::string disallowed_special = "all";
  std::vector<std::string> inputs;  // encode: none = stdin
  std::string input = "-";          // decode
  std::string output;
  std::string format;
  std::string dtype = "auto";
  std::string pattern;
  size_t chunk_bytes = 0;
  bool mpi = false;
  bool add_special_tokens = false;
  CorpusFlags corpus;
};

// Fills the parts of the options that come from --pattern and --special-token.
Status TokenizerOptionsFrom(const std::string& pattern, const std::vector<std::string>& specials,
                            bpe::TokenizerOptions* out) {
  if (!pattern.empty()) {
    auto p = bpe::PatternFromName(pattern);
    if (!p.ok()) return Status::InvalidArgument("unknown --pattern '" + pattern + "' (expected gpt2, cl100k or o200k)");
    out->pattern = *p;
  }
  // An empty one would match nowhere; the loader's error for it had no token to name ("lmkit bpe encode:
  // --special-token is not ..."), so it is refused here as the usage error bpe train makes of it.
  for (const auto& s : specials)
    if (s.empty()) return Status::InvalidArgument("--special-token: a special token must not be empty");
  out->specials = specials;
  return Status::Ok();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

RunFn SetupBpeEncode(CLI::App& sub, const GlobalOptions& g) {
  auto f = std::make_shared<EncodeFlags>();
  sub.add_option("--tokenizer,-t", f->tokenizer,
                 "gpt2 | cl100k_base | o200k_base | DIR (vocab.json+merges.txt or tokenizer.json) | tokenizer.json | "
                 "tekken.json | SentencePiece .model | FILE.tiktoken")
      ->required();
  sub.add_option("--special-token", f->specials, "also match this special token in the text (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  const std::string sets = NameList(bpe::kSpecialSetNames, &bpe::SpecialSetEntry::kind, " | ", " | ") + " | T[,T...]";
  sub.add_option("--allowed-special", f->allowed_special,
                 sets + ": specials in the text encoded as their ids (tiktoken's allowed_special; default all)");
  sub.add_option("--disallowed-special", f->disallowed_special,
                 sets +
                     ": specials in the text that are an error (tiktoken's disallowed_special; default all, i.e. "
                     "those not allowed); others are encoded as text");
  sub.add_option("inputs", f->inputs,
                 "corpus files to encode, read in order as one stream: text, JSONL or Parquet (default: - = stdin)");
  sub.add_option("-o,--output", f->output, "write ids here (atomically); default (or -): stdout");
  sub.add_option("--format", f->format,
                 NameList(bpe::kIdFormatNames, &bpe::IdFormatEntry::format, " | ", " | ") +
                     " (default: from -o's extension: .npy, .json, .txt, else bin; json on stdout)");
  sub.add_option("--dtype", f->dtype,
                 NameList(bpe::kIdDtypeNames, &bpe::IdDtypeEntry::dtype, " | ", " | ") +
                     " for bin/npy (auto: uint16 when the vocabulary fits)");
  sub.add_option("--pattern", f->pattern,
                 "pre-tokenization pattern for rank files: " +
                     NameList(bpe::kPatternNames, &bpe::PatternEntry::pattern, " | ", " | "));
  sub.add_option("--chunk-bytes", f->chunk_bytes, "input bytes per parallel chunk (default: 1 MiB)")
      ->transform(DecimalCount())
      ->group("");  // for tests and experiments
  sub.add_flag("--mpi", f->mpi, "run as one rank of an MPI job: each rank encodes a range, rank 0 writes -o");
  sub.add_flag("--add-special-tokens", f->add_special_tokens,
               "add the ids of a tokenizer.json's post-processor (e.g. BOS) around the input, as HF's "
               "add_special_tokens=True (default: none)");
  AddCorpusFlags(sub, &f->corpus);
  return [f, &g]() -> int {
    const std::string cmd = "bpe encode";
    bpe::EncodeRequest req;
    req.tokenizer = f->tokenizer;
    if (Status st = TokenizerOptionsFrom(f->pattern, f->specials, &req.tokenizer_options); !st.ok())
      return ReportError(cmd, st);
    auto allowed = bpe::SpecialSetFromText(f->allowed_special, "allowed_special");
    if (!allowed.ok()) return ReportError(cmd, allowed.status());
    auto disallowed = bpe::SpecialSetFromText(f->disallowed_special, "disallowed_special");
    if (!disallowed.ok()) return ReportError(cmd, disallowed.status());
    req.specials = {*allowed, *disallowed};
    const std::vector<std::string> inputs = f->inputs.empty() ? std::vector<std::string>{"-"} : f->inputs;
    auto corpus = CorpusOptionsFrom(f->corpus, inputs);
    if (!corpus.ok()) return ReportError(cmd, corpus.status(), BpeFlagNames());
    req.corpus = std::move(*corpus);
    if (f->output == "-") f->output.clear();  // `-o -` is stdout, as for the inputs, not a file named "-"
    req.output = f->output;
    if (!f->format.empty()) {
      auto fmt = bpe::IdFormatFromName(f->format);
      if (!fmt.ok()) return ReportError(cmd, fmt.status());
      req.format = *fmt;
    }
    auto dtype = io::ParseTokenDtype(f->dtype);
    if (!dtype.ok()) return ReportError(cmd, dtype.status());
    req.dtype = *dtype;
    req.threads = g.ResolvedThreads();
    req.chunk_bytes = f->chunk_bytes;
    req.mpi = f->mpi;
    req.add_special_tokens = f->add_special_tokens;
    if (g.json && f->output.empty())
      return UsageError(cmd, "--json prints a summary on stdout, so the ids need -o FILE");
    if (f->output.empty() && req.format && (*req.format == bpe::IdFormat::kBin || *req.format == bpe::IdFormat::kNpy) &&
        ::isatty(1))
      return UsageError(cmd, "refusing to write binary ids to a terminal; use -o FILE or --format json");
    auto progress = MakeProgress(g);
    auto rep = bpe::EncodeFile(req, progress.get());
    if (!rep.ok()) return ReportError(cmd, rep.status(), BpeFlagNames());
    if (!rep->root) return kExitOk;         // MPI: rank 0 reports
    if (f->output.empty()) return kExitOk;  // the ids were the output
    const double secs = rep->encode_seconds;
    const double mbps = secs > 0 ? static_cast<double>(rep->bytes) / 1e6 / secs : 0.0;
    const double bpt = rep->tokens ? static_cast<double>(rep->bytes) / static_cast<double>(rep->tokens) : 0.0;
    const std::string dtype_name(io::TokenDtypeName(rep->dtype));
    if (g.json) {
      PrintJson(present::EncodeReportJson(*rep));
    } else {
      PrintText("encoded " + std::to_string(rep->bytes) + " bytes into " + std::to_string(rep->tokens) + " tokens (" +
                Fixed(bpt, 3) + " bytes/token) in " + Fixed(secs, 3) + " s (" + Fixed(mbps, 1) + " MB/s, " +
                std::to_string(rep->threads) + " threads, peak RSS " +
                FormatBytes(static_cast<double>(rep->peak_rss_bytes)) + ") -> " + rep->output + " (" +
                std::string(bpe::IdFormatName(rep->format)) + ", " + dtype_name + ")\n");
    }
    return kExitOk;
  };
}

RunFn SetupBpeDecode(CLI::App& sub, const GlobalOptions& g) {
  auto f = std::make_shared<EncodeFlags>();
  sub.add_option("--tokenizer,-t", f->tokenizer, "the tokenizer the ids came from (same forms as for encode)")
      ->required();
  sub.add_option("input", f->input, "id file (.bin, .npy, .json), or - for stdin (default)");
  sub.add_option("-o,--output", f->output, "write the bytes here (atomically); default (or -): stdout");
  sub.add_option("--format", f->format, "bin | npy | json (default: from the input's extension, else bin)");
  sub.add_option("--dtype", f->dtype,
                 NameList(bpe::kIdDtypeNames, &bpe::IdDtypeEntry::dtype, " | ", " | ") +
                     " for bin (auto: uint16 when the vocabulary fits)");
  sub.add_option("--pattern", f->pattern, "pattern of a rank file (decoding does not use it)")->group("");
  return [f, &g]() -> int {
    const std::string cmd = "bpe decode";
    bpe::DecodeRequest req;
    req.tokenizer = f->tokenizer;
    if (Status st = TokenizerOptionsFrom(f->pattern, {}, &req.tokenizer_options); !st.ok()) return ReportError(cmd, st);
    req.input = f->input;
    if (f->output == "-") f->output.clear();
    req.output = f->output;
    if (!f->format.empty()) {
      auto fmt = bpe::IdFormatFromName(f->format);
      if (!fmt.ok()) return ReportError(cmd, fmt.status());
      if (*fmt == bpe::IdFormat::kText) return UsageError(cmd, "--format for decode is bin, npy or json");
      req.format = *fmt;
    }
    auto dtype = io::ParseTokenDtype(f->dtype);
    if (!dtype.ok()) return ReportError(cmd, dtype.status());
    req.dtype = *dtype;
    // A .npy header carries its dtype and JSON ids are decimal: only raw .bin ids need --dtype.
    bpe::IdFormat in_format = req.format ? *req.format : bpe::IdFormat::kBin;
    if (!req.format && !f->input.empty() && f->input != "-") in_format = bpe::IdFormatFromPath(f->input);
    if (in_format == bpe::IdFormat::kText) in_format = bpe::IdFormat::kBin;  // decode reads only .npy/.json by name
    if (*dtype != io::TokenDtype::kAuto && in_format != bpe::IdFormat::kBin)
      return UsageError(cmd, "--dtype applies to bin input, not " + std::string(bpe::IdFormatName(in_format)) +
                                 " (its ids carry their own type)");
    if (g.json && f->output.empty())
      return UsageError(cmd, "--json prints a summary on stdout, so the bytes need -o FILE");
    std::vector<std::string> ins = TokenizerInputFiles(f->tokenizer);
    ins.push_back(f->input);
    if (Status st = CheckOutputIsNotAnInput(ins, f->output); !st.ok()) return ReportError(cmd, st);
    auto rep = bpe::DecodeFile(req);
    if (!rep.ok()) return ReportError(cmd, rep.status());
    if (f->output.empty()) return kExitOk;
    if (g.json) {
      PrintJson(present::DecodeReportJson(*rep));
    } else {
      PrintText("decoded " + std::to_string(rep->tokens) + " tokens into " + std::to_string(rep->bytes) + " bytes -> " +
                rep->output + "\n");
    }
    return kExitOk;
  };
}

}  // namespace lmkit::cli
