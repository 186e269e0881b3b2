// The setup function of every subcommand; each is defined in commands/<name>.cpp.
#pragma once

#include "command.h"

namespace lmkit::cli {

RunFn SetupInspect(CLI::App& sub, const GlobalOptions& g);
RunFn SetupEnv(CLI::App& sub, const GlobalOptions& g);
RunFn SetupBpe(CLI::App& sub, const GlobalOptions& g);
RunFn SetupFlops(CLI::App& sub, const GlobalOptions& g);
RunFn SetupMemory(CLI::App& sub, const GlobalOptions& g);
RunFn SetupPlan(CLI::App& sub, const GlobalOptions& g);
RunFn SetupCalibrate(CLI::App& sub, const GlobalOptions& g);
RunFn SetupQuantize(CLI::App& sub, const GlobalOptions& g);
RunFn SetupDataload(CLI::App& sub, const GlobalOptions& g);
RunFn SetupEval(CLI::App& sub, const GlobalOptions& g);
RunFn SetupGenerate(CLI::App& sub, const GlobalOptions& g);

}  // namespace lmkit::cli
