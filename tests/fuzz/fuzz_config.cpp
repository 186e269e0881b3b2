// libFuzzer target: the JSON documents lmkit reads from users -- a model's config.json (the accounting reader and the
// Llama runtime's), a memory plan, a calibration table and a GPU table -- on arbitrary bytes must never crash, throw,
// hang, overflow or allocate without bound, and must explain every rejection in one line. The first input byte picks
// the reader. Every document ParseJson accepts must survive DumpJson and parse back equal. An accepted model config is
// run through the parameter, FLOP and memory accounting, whose arithmetic must stay defined (UBSan).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lmkit/accounting/flops.h"
#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/memory.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"
#include "lmkit/accounting/plan.h"
#include "lmkit/common/json.h"
#include "lmkit/model/config.h"
#include "lmkit/quant/calibrate.h"
#include "scratch_dir.h"

using namespace lmkit;

namespace {

template <typename T>
void Check(const Result<T>& r) {
  if (!r.ok()) CheckError(r.status());
}

void Account(const accounting::ModelSpec& m) {
  (void)accounting::CountParameters(m);
  accounting::FlopsOptions fo;
  Check(accounting::ComputeFlops(m, fo));
  fo.seq_len = 8192;
  fo.batch = 64;
  fo.recompute = accounting::Recompute::kFull;
  Check(accounting::ComputeFlops(m, fo));
  Check(accounting::TrainingFlopsPerTokenExact(m, 2048));
  (void)accounting::TrainingFlopsPerTokenPalm(m, 2048);
  Check(accounting::BuildDecodeMatmuls(m, 4, 4096));
  accounting::MemoryOptions mo;
  Check(accounting::EstimateMemory(m, mo));
  mo.mode = accounting::Mode::kInference;
  mo.gpus = 8;
  Check(accounting::EstimateMemory(m, mo));
  (void)accounting::KvCacheBytes(m, 1 << 20, 2.0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto j = ParseJson(text, "fuzz.json");
  if (j.ok()) {
    auto again = ParseJson(DumpJson(*j), "dumped");
    if (!again.ok() || *again != *j) std::abort();
    again = ParseJson(DumpJson(*j, -1), "dumped compact");
    if (!again.ok() || *again != *j) std::abort();
  } else {
    CheckError(j.status());
  }
  switch (data[0] % 5) {
    case 0:
      if (j.ok()) {
        auto m = accounting::ParseModelConfig(*j, "config.json");
        Check(m);
        if (m.ok()) Account(*m);
      }
      break;
    case 1:
      if (j.ok()) Check(model::ParseLlamaConfig(*j, "config.json"));
      break;
    case 2:
      if (j.ok()) Check(accounting::ParsePlan(*j, "plan.json", FuzzScratchDir()));
      break;
    case 3:
      Check(quant::ParseCalibrationAmax(text, "calib.json"));
      break;
    default: {
      const std::string path = FuzzScratchDir() + "/gpus.json";
      WriteScratchFile(path, data + 1, size - 1);
      Check(accounting::LoadGpuTable(path));
      break;
    }
  }
  return 0;
}
