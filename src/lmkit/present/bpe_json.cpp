// Field lists of the bpe commands' results (json_fields.h).
#include "lmkit/present/bpe_json.h"

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/present/json_fields.h"

namespace lmkit::present {
namespace {

// bpe train's document reads the request (threads, output directory) beside the report.
struct TrainFilesView {
  const bpe::TrainFilesRequest& request;
  const bpe::TrainFilesResult& report;
  uint64_t peak_rss_bytes;
  const std::string& Longest() const { return report.train.model.vocab[report.train.stats.longest_token_id]; }
};

struct CountShardView {
  const bpe::CountShardRequest& request;
  const bpe::CountShardResult& report;
  uint64_t peak_rss_bytes;
};

double PerUnit(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

LMKIT_JSON_ENUM(bpe::IdFormat, bpe::IdFormatName(v));
LMKIT_JSON_ENUM(io::TokenDtype, io::TokenDtypeName(v));

LMKIT_JSON_FIELDS(TrainFilesView,  //
                  Computed("input_bytes", [](const T& v) { return v.report.train.stats.input_bytes; }),
                  Computed("pretokens_total", [](const T& v) { return v.report.train.stats.pretokens_total; }),
                  Computed("pretokens_unique", [](const T& v) { return v.report.train.stats.pretokens_unique; }),
                  Computed("merges", [](const T& v) { return v.report.train.model.merges.size(); }),
                  Computed("vocab_size", [](const T& v) { return v.report.train.model.vocab.size(); }),
                  Computed("special_tokens", [](const T& v) { return v.report.train.model.num_specials; }),
                  Computed("threads", [](const T& v) { return v.request.threads; }),
                  Object("seconds",  //
                         Computed("read", [](const T& v) { return v.report.train.stats.read_seconds; }),
                         Computed("pretokenize_count", [](const T& v) { return v.report.train.stats.count_seconds; }),
                         Computed("merge", [](const T& v) { return v.report.train.stats.merge_seconds; }),
                         Computed("write", [](const T& v) { return v.report.write_seconds; }),
                         ComputedIf("reduce", [](const T& v) { return v.report.reduce_seconds; })),
                  Field("peak_rss_bytes", &T::peak_rss_bytes),
                  Object("longest_token",  //
                         Computed("id", [](const T& v) { return v.report.train.stats.longest_token_id; }),
                         Computed("bytes", [](const T& v) { return v.Longest().size(); }),
                         Computed("printable", [](const T& v) { return bpe::BytesToPrintable(v.Longest()); })),
                  Computed("output", [](const T& v) {
                    const std::string& d = v.request.out_dir;
                    return std::vector<std::string>{d + "/vocab.json", d + "/merges.txt", d + "/tokenizer.json"};
                  }));

LMKIT_JSON_FIELDS(CountShardView,  //
                  Object("shard",  //
                         Computed("k", [](const T& v) { return v.report.header.shard_k; }),
                         Computed("n", [](const T& v) { return v.report.header.shard_n; })),
                  Computed("corpus_bytes", [](const T& v) { return v.report.header.corpus_bytes; }),
                  Computed("range",
                           [](const T& v) {
                             return std::vector<uint64_t>{v.report.header.range_begin, v.report.header.range_end};
                           }),
                  Computed("pretokens_total", [](const T& v) { return v.report.header.total; }),
                  Computed("pretokens_unique", [](const T& v) { return v.report.header.entries; }),
                  Computed("threads", [](const T& v) { return v.request.threads; }),
                  Object("seconds",  //
                         Computed("read", [](const T& v) { return v.report.stats.read_seconds; }),
                         Computed("pretokenize_count", [](const T& v) { return v.report.stats.count_seconds; }),
                         Computed("write", [](const T& v) { return v.report.write_seconds; })),
                  Field("peak_rss_bytes", &T::peak_rss_bytes),
                  Computed("output", [](const T& v) { return v.request.output; }));

LMKIT_JSON_FIELDS(
    bpe::EncodeResult,  //
    Field("tokenizer", &T::tokenizer), Field("input", &T::input), Field("output", &T::output),
    Field("format", &T::format), Field("dtype", &T::dtype), Field("threads", &T::threads), Field("bytes", &T::bytes),
    Field("tokens", &T::tokens),
    Computed("bytes_per_token",
             [](const T& r) { return PerUnit(static_cast<double>(r.bytes), static_cast<double>(r.tokens)); }),
    Field("seconds", &T::encode_seconds), Field("cpu_seconds", &T::encode_cpu_seconds),
    Field("load_seconds", &T::load_seconds),
    Computed("mb_per_s", [](const T& r) { return PerUnit(static_cast<double>(r.bytes) / 1e6, r.encode_seconds); }),
    Field("peak_rss_bytes", &T::peak_rss_bytes), Field("chunks", &T::chunks),
    Field("largest_chunk_bytes", &T::largest_chunk));

LMKIT_JSON_FIELDS(bpe::DecodeResult,  //
                  Field("tokenizer", &T::tokenizer), Field("input", &T::input), Field("output", &T::output),
                  Field("format", &T::format), Field("tokens", &T::tokens), Field("bytes", &T::bytes),
                  Field("seconds", &T::seconds), Field("peak_rss_bytes", &T::peak_rss_bytes));

Json TrainFilesJson(const bpe::TrainFilesRequest& request, const bpe::TrainFilesResult& report) {
  return ToJson(TrainFilesView{request, report, PeakRssBytes()});
}

Json CountShardJson(const bpe::CountShardRequest& request, const bpe::CountShardResult& report) {
  return ToJson(CountShardView{request, report, PeakRssBytes()});
}

Json EncodeReportJson(const bpe::EncodeResult& report) { return ToJson(report); }
Json DecodeReportJson(const bpe::DecodeResult& report) { return ToJson(report); }

}  // namespace lmkit::present
