// The flags that say how a BPE command reads its corpus (bpe train, count and encode): --input-format, --text-field,
// --doc-separator, bound to io::CorpusOptions.
#pragma once

#include <string>
#include <vector>

#include "command.h"
#include "lmkit/io/corpus.h"

namespace lmkit::cli {

struct CorpusFlags {
  std::string input_format;
  std::string text_field = "text";
  std::string doc_separator;
};

// Adds the three flags to `sub`.
void AddCorpusFlags(CLI::App& sub, CorpusFlags* flags);
// io::CorpusOptions of `inputs` read as the flags say; kInvalidArgument for an unknown --input-format.
Result<io::CorpusOptions> CorpusOptionsFrom(const CorpusFlags& flags, std::vector<std::string> inputs);
// How the BPE commands spell the request fields that have no flag of their own name.
const FlagNames& BpeFlagNames();

}  // namespace lmkit::cli
