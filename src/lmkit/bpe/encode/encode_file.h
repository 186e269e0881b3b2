// `lmkit bpe encode` as one core call: a tokenizer, a corpus in (io/corpus.h: text, or JSONL/Parquet documents joined
// by a separator), an id file (or stdout) out, in one process or by the ranks of an MPI job.
//
// Contract: EncodeFile loads the tokenizer, resolves request.specials against it (special_policy.h), reads the corpus
// with EncodeStream (encode_stream.h) and writes the ids through OpenIdOutput (id_output.h); with `mpi` the same ids
// come from all ranks of an MPI job (dist/bpe_encode.h; only rank 0's report is meaningful, other ranks get
// root = false). Documents are joined by corpus.doc_separator, else by the first of tokenizer_options.specials. The
// output is the same for every thread count, chunk size and rank count.
// Errors: kInvalidArgument naming fields (a dtype for the json or text format, or uint16 for a larger vocabulary;
// npy without an output file; mpi without MPI, without an output file or with a special-token policy other than the
// default); the policy's (Field("allowed_special") / Field("disallowed_special") for a text that is not a special of
// the tokenizer); the tokenizer loader's; the corpus' (named by file and line or row group); a disallowed special in
// the text: kInvalidInput naming the input (the inputs, space-separated, when there are several) with the byte offset
// of the special in the joined text; the output's. Nothing is left at `output` on failure. Thread-safe (no shared
// state); `progress` may be null.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lmkit/bpe/encode/special_policy.h"
#include "lmkit/bpe/files/id_format.h"
#include "lmkit/bpe/files/tokenizer_files.h"
#include "lmkit/bpe/tokenizer.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"
#include "lmkit/io/corpus.h"

namespace lmkit::bpe {

struct EncodeRequest {
  std::string tokenizer;
  TokenizerOptions tokenizer_options;
  SpecialPolicy specials;    // default: every special of the tokenizer matched
  io::CorpusOptions corpus;  // inputs: "-" = stdin
  std::string output;        // empty: write to stdout_fd
  int stdout_fd = 1;
  std::optional<IdFormat> format;  // default: from the output's extension, json on stdout
  IdDtype dtype = IdDtype::kAuto;
  unsigned threads = 1;
  size_t chunk_bytes = 0;
  bool mpi = false;
  // Adds the ids of the tokenizer's post-processor (tokenizer.json TemplateProcessing "single", e.g. BOS) around the
  // whole input, which is one sequence. Errors: kInvalidArgument when the tokenizer has none, or with mpi.
  bool add_special_tokens = false;
};

struct EncodeResult {
  bool root = true;       // false on MPI ranks other than 0, which report nothing else
  std::string tokenizer;  // description
  std::string input;      // the inputs, space-separated
  std::string output;
  IdFormat format = IdFormat::kJson;
  IdDtype dtype = IdDtype::kU32;
  unsigned threads = 1;
  uint64_t bytes = 0;  // of text encoded (documents joined)
  uint64_t tokens = 0;
  uint64_t chunks = 0;
  uint64_t largest_chunk = 0;
  double load_seconds = 0;        // reading the tokenizer
  double encode_seconds = 0;      // reading, encoding and writing the input (wall clock)
  double encode_cpu_seconds = 0;  // CPU time of all threads (all ranks) over the same phase
  uint64_t peak_rss_bytes = 0;    // of this process (rank 0)
};

Result<EncodeResult> EncodeFile(const EncodeRequest& request, ProgressSink* progress);

// ---- the steps EncodeFile shares with the MPI driver ----

// The format the ids are written in: request.format, else from the output's extension, json on stdout.
IdFormat ResolvedFormat(const EncodeRequest& request);

// Checks the request, loads the tokenizer, resolves the special-token policy against it and fills the report's fixed
// fields (tokenizer, input, output, format, dtype, threads, load_seconds).
struct EncodeSetup {
  std::unique_ptr<Tokenizer> tokenizer;
  SpecialRules specials;
  EncodeResult report;
};
Result<EncodeSetup> PrepareEncode(const EncodeRequest& request);

// The corpus to encode, documents joined as the contract above says.
Result<io::Corpus> OpenEncodeCorpus(const EncodeRequest& request);

}  // namespace lmkit::bpe
