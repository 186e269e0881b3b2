// `lmkit inspect`: placeholder until its issue lands; says so and fails.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupInspect(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("inspect", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
