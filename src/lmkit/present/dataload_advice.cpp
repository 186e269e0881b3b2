// The advice lines of a dataload run: the "why" and the knob, worded from the judge's diagnosis (dataload/judge.h).
#include <cstdio>

#include "lmkit/common/units.h"
#include "lmkit/present/dataload.h"

namespace lmkit::present {
namespace {

using dataload::BatchPart;
using dataload::Fix;
using dataload::Why;

const char* PartName(BatchPart p) {
  switch (p) {
    case BatchPart::kSample:
      return "sample";
    case BatchPart::kGather:
      return "gather";
    case BatchPart::kConvert:
      return "convert";
    case BatchPart::kStage:
      return "stage";
    case BatchPart::kH2d:
      return "h2d";
    case BatchPart::kHandoff:
      return "the hand-off to the consumer";
  }
  return "?";
}

// More threads only help while there are CPUs left for them.
std::string NextThreads(const dataload::Diagnosis& d, const FieldNamer& field) {
  if (d.threads < d.cpus) return field("threads") + " " + std::to_string(d.threads + 1);
  return "more CPUs (the " + std::to_string(d.threads) + " loader threads already match the " + std::to_string(d.cpus) +
         " CPUs) or less work per batch (" + field("out_dtype") + " uint16)";
}

std::string PreadRandom(const FieldNamer& field) { return field("access") + " pread " + field("advice") + " random"; }

}  // namespace

std::string BareField(std::string_view field) { return std::string(field); }

std::string DataloadReason(const dataload::RunResult& r) {
  const dataload::Diagnosis& d = r.diagnosis;
  switch (d.why) {
    case Why::kNone:
      return "";
    case Why::kKeepsUp:
      return "the loader makes " + Ratio(r.capacity_ratio) + " the tokens the step eats and the consumer waits " +
             Percent(r.sim.wait_share, 1) + " of step time";
    case Why::kSlowerThanStep:
      return "the loader is slower than the step (" + Ratio(r.capacity_ratio) + " of demand); " + PartName(d.top) +
             " takes " + Percent(d.top_share, 1) + " of the " + ShortTime(d.batch_s) + " a batch takes";
    case Why::kSlowBatches:
      return "the loader keeps up on average (" + Ratio(r.capacity_ratio) + " of demand) but slow batches (p99 " +
             ShortTime(r.produce.p99_s) + ", max " + ShortTime(r.produce.max_s) + ") outlast the " +
             ShortTime(r.demand.step_time_s) + " step";
  }
  return "";
}

std::string DataloadKnob(const dataload::RunResult& r, const FieldNamer& field) {
  const dataload::Diagnosis& d = r.diagnosis;
  switch (d.fix) {
    case Fix::kNone:
      return d.why == Why::kNone ? "" : "none needed";
    case Fix::kColdPreadRandom:
    case Fix::kColdThreads:
      return std::string("none on a warm cache; if the data outgrows RAM it projects to ") +
             dataload::InputBoundPhrase(r.cold_level) + " (" + Ratio(r.cold.read_amplification) +
             " read amplification)" +
             (d.fix == Fix::kColdPreadRandom ? ": use " + PreadRandom(field)
                                             : ": add " + field("threads") + " or faster storage");
    case Fix::kDeeperPrefetch:
      return field("prefetch") + " " + std::to_string(d.next_prefetch) + " to absorb the slow batches" +
             (r.config.threads < r.config.prefetch ? "" : ", with " + NextThreads(d, field));
    case Fix::kPreadRandomReadAround:
      return PreadRandom(field) + ": the storage reads " + Ratio(r.read_amplification) +
             " the useful bytes (mmap read-around); pread reads only the pages a window spans, a batch's windows in "
             "parallel";
    case Fix::kPreadRandomFaults:
      return PreadRandom(field) +
             ": page faults fetch one window at a time; pread with random advice requests a batch's windows together";
    case Fix::kThreadsOrStorage:
      return NextThreads(d, field) + " (more reads in flight), or keep the dataset in RAM / on faster storage";
    case Fix::kThreads:
      return NextThreads(d, field);
    case Fix::kNarrowOutConvert:
      return field("out_dtype") + " uint16 (widen on the GPU), or " + NextThreads(d, field);
    case Fix::kNarrowOutStage:
      return field("out_dtype") + " uint16: 4x fewer bytes to stage and copy";
    case Fix::kPinned:
      return field("pinned") + ": copies from pageable memory go through a driver bounce buffer";
    case Fix::kNarrowOutH2d:
      return field("out_dtype") + " uint16: 4x fewer bytes over PCIe";
  }
  return "";
}

std::string DataloadRecommendation(const dataload::DataloadResult& rep) {
  if (rep.recommended < 0) return "";
  const dataload::RunResult& r = rep.runs[static_cast<size_t>(rep.recommended)];
  std::string knobs;
  for (const auto& axis : rep.sweep_axes) {
    if (!knobs.empty()) knobs += ' ';
    knobs += dataload::ConfigValue(r.config, axis);
  }
  char buf[160];
  if (r.demand.given) {
    std::snprintf(buf, sizeof buf, ": %s (waits %.1f%% of step time, %.1f M tokens/s, %.2fx demand)",
                  dataload::InputBoundPhrase(r.level), r.sim.wait_share * 100, r.tokens_per_s / 1e6, r.capacity_ratio);
  } else {
    std::snprintf(buf, sizeof buf, ": %.1f M tokens/s (no demand given, so the fastest with the fewest threads)",
                  r.tokens_per_s / 1e6);
  }
  return knobs + buf;
}

}  // namespace lmkit::present
