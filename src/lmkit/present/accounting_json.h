// JSON pieces the accounting documents share (flops, memory, plan).
#pragma once

#include "lmkit/accounting/gpu.h"
#include "lmkit/accounting/model.h"
#include "lmkit/accounting/params.h"
#include "lmkit/common/json.h"

namespace lmkit::present {

Json ModelJson(const accounting::ModelSpec& m);
Json ParamsJson(const accounting::ParameterCounts& p);
Json GpuJson(const accounting::GpuSpec& g);  // name, memory, bandwidth, interconnect, source

}  // namespace lmkit::present
