// A training or encoding corpus as it is published: text files, JSONL (plain, .gz, .zst) or Parquet, read as one
// stream of text: text files concatenated byte for byte, JSONL/Parquet documents (the string field `text_field` of
// each line or row) joined by `doc_separator`, so that reading a JSONL corpus gives exactly the bytes of the text
// file that joins its documents with that separator (docs/corpora.md).
//
// Contract:
// - Create checks the options (kInvalidArgument naming fields: no inputs, text mixed with JSONL/Parquet, no separator
//   (doc_separator, else `default_separator`) or an empty field for documents, a separator for text, Parquet from
//   stdin) and opens nothing; inputs are opened as they are read, so
//   a missing file is kNotFound when reading starts. The format of each input is `format`, else its name's:
//   .jsonl/.ndjson/.json → JSONL, .parquet → Parquet, anything else text (a .gz/.zst/.zstd suffix is looked past);
//   compression is always detected from the magic bytes (decompressing_reader.h).
// - Positions are "units": bytes for text and JSONL (of the decompressed files, concatenated), the footer's
//   uncompressed column bytes of each row group for Parquet (at least 1 per group). Documents can only be split at a
//   line (JSONL) or row group (Parquet) boundary; Open(begin, end) gives the joined text of the documents that start
//   in [begin, end), followed by the separator when another document follows in the corpus, so the texts of the
//   ranges between consecutive cuts concatenate to the text of the whole corpus. For text, any byte offset is a
//   boundary and Open gives exactly the bytes [begin, end).
// - FirstCut(target, rule) is the first boundary u >= target (0 for target 0, Total() when there is none) whose
//   position in the joined text passes rule.is_cut, judged on a window with at least rule.before bytes before it and
//   rule.after after it (fewer only at the ends of the text). Documents: a boundary is judged only with the window
//   read from at most 64 KiB (JSONL) or one row group (Parquet) before the target; one with less text before it is
//   passed over. The answer depends on the files and the target only, so independent jobs agree on it.
// - Total, FirstCut and ranged Open need regular files (kInvalidArgument for stdin or a pipe); Total reads each
//   compressed input once (the result is kept). Readers' errors name the file (and line or row group).
// Not thread-safe; the ByteSource of Open does not depend on the Corpus after it is made.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/status.h"
#include "lmkit/io/byte_source.h"

namespace lmkit::io {

enum class CorpusFormat { kText, kJsonl, kParquet };

// text | jsonl | parquet; kInvalidArgument naming Field("input_format") otherwise.
Result<CorpusFormat> CorpusFormatFromName(std::string_view name);
std::string_view CorpusFormatName(CorpusFormat f);
CorpusFormat CorpusFormatFromPath(std::string_view path);

struct CorpusOptions {
  std::vector<std::string> inputs;     // paths, read in order; "-" = stdin
  std::optional<CorpusFormat> format;  // of every input; default: from each name
  std::string text_field = "text";     // JSONL key / Parquet column
  std::string doc_separator;           // between JSONL/Parquet documents (empty: Create's default)
};

// Whether any input is JSONL or Parquet (by `format`, else by its name).
bool HasDocuments(const CorpusOptions& options);

struct CutRule {
  std::function<bool(std::string_view text, size_t c)> is_cut;
  size_t before = 0;
  size_t after = 0;
};

class Corpus {
 public:
  static Result<Corpus> Create(CorpusOptions options, std::string_view default_separator = {});
  Corpus(Corpus&&) noexcept;
  Corpus& operator=(Corpus&&) noexcept;
  ~Corpus();

  const CorpusOptions& options() const { return options_; }
  // Whether the inputs are JSONL/Parquet documents (else text).
  bool documents() const { return documents_; }

  Result<uint64_t> Total();
  Result<uint64_t> FirstCut(uint64_t target, const CutRule& rule);
  // end = UINT64_MAX: to the end. A ranged Open (begin > 0 or end < UINT64_MAX) needs Total's regular files.
  Result<std::unique_ptr<ByteSource>> Open(uint64_t begin = 0, uint64_t end = UINT64_MAX);

 private:
  Corpus() = default;
  Status ComputeSizes();
  Result<uint64_t> FirstTextCut(uint64_t target, const CutRule& rule);
  Result<uint64_t> FirstDocumentCut(uint64_t target, const CutRule& rule);

  struct Sizes;
  CorpusOptions options_;
  std::vector<CorpusFormat> formats_;  // per input
  bool documents_ = false;
  std::unique_ptr<Sizes> sizes_;  // filled by ComputeSizes
};

}  // namespace lmkit::io
