// `lmkit bpe encode` and `lmkit bpe decode`: placeholders until their issue lands.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupBpeEncode(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("bpe encode", Status::Unsupported("", "not implemented yet")); };
}

RunFn SetupBpeDecode(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("bpe decode", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
