// Field lists of `lmkit eval` and `lmkit generate` (json_fields.h).
#include "lmkit/present/json_fields.h"
#include "lmkit/present/model.h"

namespace lmkit::present {
namespace {

// generate's document names the options it ran with beside the result.
struct GenerateView {
  const model::GenerateRequest& options;
  const model::GenerateResult& result;
  bool with_logits;
};

}  // namespace

LMKIT_JSON_FIELDS(model::EvalComparison,  //
                  Field("model", &T::model), Field("mode", &T::mode), Field("mean_nll", &T::mean_nll),
                  Field("perplexity", &T::perplexity), Field("ppl_delta", &T::ppl_delta), Field("mean_kl", &T::mean_kl),
                  Field("p99_kl", &T::p99_kl), Field("max_kl", &T::max_kl),
                  Field("top1_agreement", &T::top1_agreement));

LMKIT_JSON_FIELDS(model::EvalResult,  //
                  Field("model", &T::model), Field("mode", &T::mode), Field("seq_len", &T::seq_len),
                  Field("sequences", &T::sequences), Field("tokens_scored", &T::tokens_scored),
                  Field("mean_nll", &T::mean_nll), Field("perplexity", &T::perplexity),
                  Optional("compare", &T::compare), Field("seconds", &T::seconds));

LMKIT_JSON_FIELDS(GenerateView,  //
                  Computed("model", [](const T& v) { return v.options.model; }),
                  Computed("temperature", [](const T& v) { return v.options.temperature; }),
                  Computed("seed", [](const T& v) { return v.options.seed; }),
                  Computed("sequences", [](const T& v) { return v.result.sequences; }),
                  ComputedIf("final_logits",
                             [](const T& v) -> std::optional<std::vector<float>> {
                               if (!v.with_logits) return std::nullopt;
                               return v.result.final_logits;
                             }),
                  Computed("seconds", [](const T& v) { return v.result.seconds; }));

Json EvalResultToJson(const model::EvalResult& r) { return ToJson(r); }

Json GenerateResultToJson(const model::GenerateRequest& options, const model::GenerateResult& r, bool with_logits) {
  return ToJson(GenerateView{options, r, with_logits});
}

}  // namespace lmkit::present
