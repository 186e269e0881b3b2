// `lmkit memory`: placeholder until its issue lands; says so and fails.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupMemory(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("memory", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
