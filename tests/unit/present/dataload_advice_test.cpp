// The advice lines: every fix the judge can choose is worded, with the request fields spelled by the front end.
#include <catch2/catch.hpp>

#include "lmkit/present/dataload.h"

using namespace lmkit::dataload;
using lmkit::present::DataloadKnob;
using lmkit::present::DataloadReason;

namespace {
std::string Flag(std::string_view f) {
  std::string s = "--";
  for (char c : f) s.push_back(c == '_' ? '-' : c);
  return s;
}
}  // namespace

TEST_CASE("dataload advice: each fix names its knob in the front end's spelling", "[present][dataload]") {
  RunResult r;
  r.demand.given = true;
  r.capacity_ratio = 0.5;
  r.read_amplification = 4092;
  Diagnosis& d = r.diagnosis;
  d.why = Why::kSlowerThanStep;
  d.threads = 1;
  d.cpus = 2;
  d.top = BatchPart::kGather;
  d.top_share = 0.9;
  d.batch_s = 2e-3;
  CHECK(DataloadReason(r) ==
        "the loader is slower than the step (0.50x of demand); gather takes 90.0% of the 2.00 ms "
        "a batch takes");
  d.fix = Fix::kPreadRandomReadAround;
  CHECK(DataloadKnob(r, Flag).find("--access pread --advice random: the storage reads 4092x the useful bytes") == 0);
  CHECK(DataloadKnob(r, lmkit::present::BareField).find("access pread advice random") == 0);
  d.fix = Fix::kThreads;
  CHECK(DataloadKnob(r, Flag) == "--threads 2");
  d.threads = 2;
  CHECK(DataloadKnob(r, Flag) ==
        "more CPUs (the 2 loader threads already match the 2 CPUs) or less work per batch (--out-dtype uint16)");
  d.fix = Fix::kPinned;
  CHECK(DataloadKnob(r, Flag).find("--pinned: ") == 0);
  d.fix = Fix::kNarrowOutH2d;
  CHECK(DataloadKnob(r, Flag) == "--out-dtype uint16: 4x fewer bytes over PCIe");
  d.why = Why::kNone;
  d.fix = Fix::kNone;
  CHECK(DataloadReason(r).empty());
  CHECK(DataloadKnob(r, Flag).empty());
}
