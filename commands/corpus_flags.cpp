#include "corpus_flags.h"

namespace lmkit::cli {

void AddCorpusFlags(CLI::App& sub, CorpusFlags* flags) {
  sub.add_option("--input-format", flags->input_format,
                 "text | jsonl | parquet for every input (default: from each name: .jsonl/.json/.ndjson, .parquet, "
                 "else text; .gz/.zst are decompressed whatever the name)");
  sub.add_option("--text-field", flags->text_field, "the JSONL key / Parquet column holding each document's text")
      ->capture_default_str();
  sub.add_option("--doc-separator", flags->doc_separator,
                 "the text between JSONL/Parquet documents (default: the first --special-token)");
}

Result<io::CorpusOptions> CorpusOptionsFrom(const CorpusFlags& flags, std::vector<std::string> inputs) {
  io::CorpusOptions o;
  o.inputs = std::move(inputs);
  if (!flags.input_format.empty()) {
    LMKIT_ASSIGN_OR_RETURN(o.format, io::CorpusFormatFromName(flags.input_format));
  }
  o.text_field = flags.text_field;
  o.doc_separator = flags.doc_separator;
  return o;
}

const FlagNames& BpeFlagNames() {
  static const FlagNames names = {
      {"inputs", "INPUT"}, {"special_tokens", "--special-token"}, {"output", "-o"}, {"out_dir", "-o"}};
  return names;
}

}  // namespace lmkit::cli
