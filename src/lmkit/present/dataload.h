// How dataload results read: the text report of `lmkit dataload`, its JSON document (schema lmkit.dataload/2), the
// advice lines (the "why" and the knob) and the same for `lmkit dataload trace` (schema lmkit.dataload.trace/1).
//
// Contract: pure functions of the report, thread-safe. Request fields named inside results (Field(), see
// common/status.h) are spelled by `field`: the CLI passes its flag spelling ("--threads"), other front ends their own;
// BareField keeps the bare name. Documented in docs/dataload.md.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "lmkit/common/json.h"
#include "lmkit/dataload/profile.h"
#include "lmkit/dataload/trace.h"

namespace lmkit::present {

using FieldNamer = std::function<std::string(std::string_view)>;
std::string BareField(std::string_view field);

inline constexpr const char* kDataloadSchema = "lmkit.dataload/2";
inline constexpr const char* kDataloadTraceSchema = "lmkit.dataload.trace/1";

std::string DataloadText(const dataload::DataloadResult& report, const FieldNamer& field);
Json DataloadJson(const dataload::DataloadResult& report, const FieldNamer& field);

// The advice of one run with a verdict: why it waits (or not) and the knob to turn.
std::string DataloadReason(const dataload::RunResult& run);
std::string DataloadKnob(const dataload::RunResult& run, const FieldNamer& field);
// The recommended point of a sweep in one line ("threads=1 prefetch=1: NOT input-bound (waits ...)"); "" for none.
std::string DataloadRecommendation(const dataload::DataloadResult& report);

std::string TraceText(const dataload::TraceResult& report);
Json TraceJson(const dataload::TraceResult& report);
// The per-step chart: stacked data wait, host-to-device copy (with GPU events) and rest, in ms (an SVG document).
std::string TraceSvg(const dataload::TraceResult& report);
// The advice of a trace: why the step waits (or not) and the DataLoader knob to turn, with its evidence.
std::string TraceReason(const dataload::TraceResult& report);
std::string TraceKnob(const dataload::TraceResult& report);

// "uint16" / "uint32": the dtype of a token shard whose tokens take `token_bytes` bytes.
std::string TokenDtypeOf(unsigned token_bytes);

}  // namespace lmkit::present
