// `lmkit bpe encode` as one core call: a tokenizer, an input file (or stdin), an id file (or stdout).
//
// Contract: EncodeFile loads the tokenizer, resolves request.specials against it (special_policy.h), encodes `input`
// ("-" = stdin) with EncodeStream and writes the ids through OpenIdOutput. Errors: the loader's; the policy's
// (kInvalidArgument naming Field("allowed_special") / Field("disallowed_special")); the input's, named (a disallowed
// special in it: kInvalidInput with its byte offset, and no output is left); kInvalidArgument naming Field("format")
// for npy on a descriptor (its header needs the count, so it needs a file) or Field("dtype") for uint16 with a larger
// vocabulary. Thread-safe (no shared state); `progress` may be null.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lmkit/bpe/id_format.h"
#include "lmkit/bpe/special_policy.h"
#include "lmkit/bpe/tokenizer_files.h"
#include "lmkit/common/progress.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

struct EncodeRequest {
  std::string tokenizer;
  TokenizerOptions tokenizer_options;
  SpecialPolicy specials;  // default: every special of the tokenizer matched
  std::string input = "-";
  std::string output;  // empty: write to stdout_fd
  int stdout_fd = 1;
  std::optional<IdFormat> format;  // default: from the output's extension, json on stdout
  IdDtype dtype = IdDtype::kAuto;
  unsigned threads = 1;
  size_t chunk_bytes = 0;
};

struct EncodeReport {
  std::string tokenizer;  // description
  std::string input;
  std::string output;
  IdFormat format = IdFormat::kJson;
  IdDtype dtype = IdDtype::kU32;
  unsigned threads = 1;
  uint64_t bytes = 0;
  uint64_t tokens = 0;
  uint64_t chunks = 0;
  uint64_t largest_chunk = 0;
  double load_seconds = 0;        // reading the tokenizer
  double encode_seconds = 0;      // reading, encoding and writing the input (wall clock)
  double encode_cpu_seconds = 0;  // CPU time of all threads over the same phase
  uint64_t peak_rss_bytes = 0;
};

Result<EncodeReport> EncodeFile(const EncodeRequest& request, ProgressSink* progress);

}  // namespace lmkit::bpe
