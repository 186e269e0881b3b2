// `lmkit inspect FILE|DIR [--stats]`: tensor names, dtypes, shapes, bytes and the parameter total of a .safetensors
// file, a .npy file or a model directory; --stats adds min/max/mean/std/absmax per tensor.
#include "lmkit/io/inspect.h"

#include "command.h"
#include "lmkit/present/inspect_text.h"

namespace lmkit::cli {
namespace {

struct InspectFlags {
  std::string path;
  bool stats = false;
};

}  // namespace

RunFn SetupInspect(CLI::App& sub, const GlobalOptions& g) {
  auto flags = std::make_shared<InspectFlags>();
  sub.add_option("path", flags->path, "a .safetensors or .npy file, or a directory with model.safetensors")->required();
  sub.add_flag("--stats", flags->stats, "add min/max/mean/std/absmax per tensor (finite values; std with ddof=0)");
  return [flags, &g] {
    io::InspectRequest opt;
    opt.path = flags->path;
    opt.stats = flags->stats;
    opt.threads = g.ResolvedThreads();
    auto progress = MakeProgress(g);
    auto report = io::InspectTensors(opt, progress.get());
    if (!report.ok()) return ReportError("inspect", report.status());
    if (g.json) {
      PrintJson(present::InspectJson(*report));
    } else {
      PrintText(present::InspectText(*report));
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace lmkit::cli
