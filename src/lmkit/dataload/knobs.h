// The loader's knobs: one point of the knob space (LoaderConfig), the name of every enum value — one table per enum,
// used to parse options and sweep values, to list them in help text and to print them — and sweep axes over them.
//
// Contract: pure functions over fixed tables, thread-safe. Errors are kInvalidArgument naming the request field with
// Field("sweep"), never a front end's spelling of it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lmkit/common/name_table.h"
#include "lmkit/common/status.h"
#include "lmkit/dataload/convert.h"
#include "lmkit/dataload/token_reader.h"

namespace lmkit::dataload {

enum class CacheMode { kAsIs, kWarm, kCold, kColdEach };

std::span<const EnumName<Access>> AccessValues();        // mmap, pread, direct
std::span<const EnumName<Advice>> AdviceValues();        // normal, random
std::span<const EnumName<CacheMode>> CacheModeValues();  // as-is, warm, cold, cold-each
std::span<const EnumName<OutDtype>> OutDtypeValues();    // int64, int32, uint16

const char* AccessName(Access a);
const char* AdviceName(Advice a);
const char* CacheModeName(CacheMode c);
const char* OutDtypeName(OutDtype d);

// One point of the knob space.
struct LoaderConfig {
  uint64_t batch_size = 12;  // nanoGPT's GPT-2 defaults
  uint64_t context_length = 1024;
  Access access = Access::kMmap;
  Advice advice = Advice::kNormal;
  CacheMode cache = CacheMode::kAsIs;
  unsigned threads = 1;
  unsigned prefetch = 2;  // batches produced ahead of the consumer (in flight or ready)
  OutDtype out = OutDtype::kInt64;
  bool pinned = true;
};

// The knobs a sweep varies, in the order help lists them: threads, prefetch, access, advice, cache, batch-size,
// context-length, out-dtype, memory (pinned or pageable staging).
std::span<const char* const> SweepKnobs();

struct SweepAxis {
  std::string name;                 // one of SweepKnobs()
  std::vector<std::string> values;  // as typed
};

// Parses "name=v1,v2,..." (name also accepts b/batch for batch-size and t/context for context-length).
// Errors: kInvalidArgument naming the axis or value.
Result<SweepAxis> ParseSweepAxis(const std::string& text);
// "threads=2" etc.: the value of one knob in a config, as a sweep axis writes it.
std::string ConfigValue(const LoaderConfig& config, const std::string& knob);
// Applies one axis value to a config. Errors: kInvalidArgument.
Status ApplyAxisValue(const std::string& name, const std::string& value, LoaderConfig* config);

}  // namespace lmkit::dataload
