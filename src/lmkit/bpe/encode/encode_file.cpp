#include "lmkit/bpe/encode/encode_file.h"

#include <algorithm>

#include "lmkit/bpe/encode/encode_stream.h"
#include "lmkit/bpe/encode/id_output.h"
#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/output_check.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/dist/bpe_encode.h"
#include "lmkit/dist/comm.h"

namespace lmkit::bpe {

IdFormat ResolvedFormat(const EncodeRequest& req) {
  return req.format.value_or(req.output.empty() ? IdFormat::kJson : IdFormatFromPath(req.output));
}

Result<EncodeSetup> PrepareEncode(const EncodeRequest& req) {
  EncodeSetup s;
  EncodeResult& rep = s.report;
  rep.format = ResolvedFormat(req);
  // The JSON and text formats write decimal ids: a dtype there would be accepted and change nothing.
  if (req.dtype != IdDtype::kAuto && (rep.format == IdFormat::kJson || rep.format == IdFormat::kText))
    return Status::InvalidArgument(Field("dtype") + " applies to the bin and npy formats, not " +
                                   std::string(IdFormatName(rep.format)));
  LMKIT_RETURN_IF_ERROR(CheckIdOutput(req, rep.format));
  const double t0 = MonotonicSeconds();
  LMKIT_ASSIGN_OR_RETURN(s.tokenizer, LoadTokenizer(req.tokenizer, req.tokenizer_options));
  rep.load_seconds = MonotonicSeconds() - t0;
  rep.tokenizer = s.tokenizer->description();
  for (const auto& in : req.corpus.inputs) rep.input += (rep.input.empty() ? "" : " ") + in;
  rep.output = req.output.empty() ? "-" : req.output;
  LMKIT_ASSIGN_OR_RETURN(s.specials, SpecialRules::Resolve(*s.tokenizer, req.specials));
  LMKIT_ASSIGN_OR_RETURN(rep.dtype, ResolveDtype(req.dtype, *s.tokenizer));
  rep.threads = std::max(1u, req.threads);
  return s;
}

Result<io::Corpus> OpenEncodeCorpus(const EncodeRequest& req) {
  return OpenBpeCorpus(req.corpus, req.tokenizer_options.specials);
}

Result<EncodeResult> EncodeFile(const EncodeRequest& req, ProgressSink* progress) {
  // The ids replace their destination: not the text they are made from, nor a file of the tokenizer.
  std::vector<std::string> ins = TokenizerInputFiles(req.tokenizer);
  ins.insert(ins.end(), req.corpus.inputs.begin(), req.corpus.inputs.end());
  LMKIT_RETURN_IF_ERROR(CheckOutputIsNotAnInput(ins, req.output, "output"));
  if (req.mpi) {
    if (!dist::Built())
      return Status::InvalidArgument(Field("mpi") +
                                     ": this lmkit was built without MPI (install libopenmpi-dev, configure with "
                                     "-DLMKIT_MPI=ON)");
    if (req.output.empty())
      return Status::InvalidArgument(Field("mpi") + " needs " + Field("output") +
                                     " FILE (rank 0 writes the one output)");
    // A disallowed special's offset is counted from the start of the input, which no rank's piece knows.
    if (req.specials.allowed.kind != SpecialSetKind::kAll || req.specials.disallowed.kind != SpecialSetKind::kAll)
      return Status::InvalidArgument(Field("allowed_special") + " and " + Field("disallowed_special") +
                                     " are not supported with " + Field("mpi"));
    if (req.add_special_tokens)
      return Status::InvalidArgument(Field("add_special_tokens") + " is not supported with " + Field("mpi"));
    return EncodeFileMpi(req, progress);
  }
  LMKIT_ASSIGN_OR_RETURN(EncodeSetup setup, PrepareEncode(req));
  EncodeResult& rep = setup.report;
  if (req.add_special_tokens && !setup.tokenizer->has_template())
    return Status::InvalidArgument(Field("add_special_tokens") + ": " + req.tokenizer +
                                   " has no post-processor lmkit implements (a tokenizer.json TemplateProcessing, "
                                   "RobertaProcessing or BertProcessing; a SentencePiece model's CONTROL bos_piece; "
                                   "tekken.json's <s>)");
  LMKIT_ASSIGN_OR_RETURN(io::Corpus corpus, OpenEncodeCorpus(req));
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<io::ByteSource> source, corpus.Open());
  StreamOptions opts;
  opts.threads = rep.threads;
  opts.chunk_bytes = req.chunk_bytes;
  opts.specials = &setup.specials;
  const double t1 = MonotonicSeconds();
  const double c1 = ProcessCpuSeconds();
  LMKIT_ASSIGN_OR_RETURN(std::unique_ptr<IdOutput> out, OpenIdOutput(req, *setup.tokenizer, rep.format, rep.dtype));
  const std::vector<uint32_t>& prefix = setup.tokenizer->template_prefix();
  const std::vector<uint32_t>& suffix = setup.tokenizer->template_suffix();
  if (req.add_special_tokens && !prefix.empty()) LMKIT_RETURN_IF_ERROR(out->Write(prefix.data(), prefix.size()));
  Result<StreamStats> streamed = EncodeStream(*setup.tokenizer, *source, *out, opts, progress);
  // Errors found in the text (a disallowed special) name no file: this is the input they are in.
  if (!streamed.ok()) return streamed.status().WithSubject(rep.input == "-" ? "<stdin>" : rep.input);
  if (req.add_special_tokens && !suffix.empty()) LMKIT_RETURN_IF_ERROR(out->Write(suffix.data(), suffix.size()));
  LMKIT_RETURN_IF_ERROR(out->Commit());
  const StreamStats& stats = *streamed;
  rep.encode_seconds = MonotonicSeconds() - t1;
  rep.encode_cpu_seconds = ProcessCpuSeconds() - c1;
  rep.bytes = stats.bytes;
  rep.tokens = stats.tokens + (req.add_special_tokens ? prefix.size() + suffix.size() : 0);
  rep.chunks = stats.chunks;
  rep.largest_chunk = stats.largest_chunk;
  rep.peak_rss_bytes = PeakRssBytes();
  return rep;
}

}  // namespace lmkit::bpe
