// `lmkit calibrate`: placeholder until its issue lands; says so and fails.
#include "commands.h"

namespace lmkit::cli {

RunFn SetupCalibrate(CLI::App& sub, const GlobalOptions& g) {
  (void)sub;
  (void)g;
  return [] { return ReportError("calibrate", Status::Unsupported("", "not implemented yet")); };
}

}  // namespace lmkit::cli
