// `lmkit bpe train`: placeholder until its issue lands.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupBpeTrain(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("bpe train", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
