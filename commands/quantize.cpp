// `lmkit quantize`: placeholder until its issue lands; says so and fails.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupQuantize(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("quantize", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
