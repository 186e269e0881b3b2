// The --json summaries of `lmkit bpe train`, `count`, `encode` and `decode`, generated from the field lists in
// bpe_json.cpp; Python's dicts come from the same functions.
#pragma once

#include "lmkit/bpe/encode/decoder.h"
#include "lmkit/bpe/encode/encode_file.h"
#include "lmkit/bpe/train/count_shard.h"
#include "lmkit/bpe/train/train_files.h"
#include "lmkit/common/json.h"

namespace lmkit::present {

// The trained vocabulary's sizes, times, longest token and the three files written into request.out_dir; threads
// from the request; peak RSS of this process now. Needs a root report (report.root).
Json TrainFilesJson(const bpe::TrainFilesRequest& request, const bpe::TrainFilesResult& report);
// The shard, its byte range, pre-token counts, times and the counts file; threads from the request.
Json CountShardJson(const bpe::CountShardRequest& request, const bpe::CountShardResult& report);
Json EncodeReportJson(const bpe::EncodeResult& report);  // with bytes per token and MB/s derived
Json DecodeReportJson(const bpe::DecodeResult& report);

}  // namespace lmkit::present
