// The report functions (lmkit.flops, memory, layouts, plan, calibrate, quantize): keyword arguments -> the core's
// request struct -> the same entry point the command calls -> present/'s JSON document as a dict (the document
// `lmkit --json <command>` prints), with the chart from present/'s SVG renderer under "svg" when svg=True.
// Keywords are the request fields' names; errors name them so (the core's Field() rendered bare).
#include <Python.h>
#include <nanobind/stl/optional.h>

#include <functional>
#include <map>

#include "ext.h"
#include "ext_kwargs.h"
#include "lmkit/accounting/plan.h"
#include "lmkit/accounting/plan_timeline.h"
#include "lmkit/accounting/run_flops.h"
#include "lmkit/accounting/run_memory.h"
#include "lmkit/accounting/run_training.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/common/json.h"
#include "lmkit/common/name_table.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/model/calibrate_model.h"
#include "lmkit/present/accounting.h"
#include "lmkit/present/accounting_svg.h"
#include "lmkit/present/quant.h"
#include "lmkit/present/quant_svg.h"
#include "lmkit/quant/calibrate.h"
#include "lmkit/quant/quantize.h"

namespace lmkit::py {

void Kwargs::Finish() const {
  for (auto [key, value] : kwargs_) {
    (void)value;
    const std::string name = nb::cast<std::string>(key);
    if (used_.count(name) == 0) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", function_.c_str(), name.c_str());
      throw nb::python_error();
    }
  }
}

void Kwargs::TypeMismatch(const char* name, nb::handle value) const {
  PyErr_Format(PyExc_TypeError, "%s() argument '%s' has the wrong type: %s", function_.c_str(), name,
               Py_TYPE(value.ptr())->tp_name);
  throw nb::python_error();
}

namespace {

using FieldNames = std::map<std::string, std::string, std::less<>>;

// Raises for a failed status, with the request fields a Python caller knows by another name renamed.
[[noreturn]] void RaiseAs(const Status& status, const FieldNames& names) {
  Raise(status, [&](std::string_view f) {
    auto it = names.find(f);
    return it != names.end() ? it->second : std::string(f);
  });
}
template <typename T>
T TakeAs(Result<T>&& r, const FieldNames& names) {
  if (!r.ok()) RaiseAs(r.status(), names);
  return std::move(r).value();
}

// Runs `work` with the GIL released (the core calls below never touch Python objects).
template <typename F>
auto Released(F&& work) -> decltype(work()) {
  nb::gil_scoped_release release;
  return work();
}

void Warn(const std::string& text) {
  if (PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) != 0) throw nb::python_error();
}

// svg=True: the chart comes back as text under "svg"; svg="path": it is written there, as the CLI's --svg does.
struct SvgWish {
  bool in_memory = false;
  std::string path;
  bool any() const { return in_memory || !path.empty(); }
};
SvgWish SvgOf(Kwargs& k) {
  nb::object v = k.Raw("svg");
  SvgWish w;
  if (v.is_none()) return w;
  if (PyBool_Check(v.ptr())) {
    w.in_memory = v.ptr() == Py_True;
    return w;
  }
  w.path = nb::cast<std::string>(nb::str(nb::module_::import_("os").attr("fspath")(v)));
  return w;
}
// What a request's svg_path holds when the chart stays in memory: the core only checks that a chart was asked for
// (and that it does not replace an input, which no file of this name can).
constexpr const char* kSvgInMemory = "<svg in memory>";

// Adds the chart to `doc` (svg=True) or writes it (a path).
void DeliverSvg(const SvgWish& w, const std::string& svg, nb::dict& doc) {
  if (w.in_memory) doc["svg"] = nb::str(svg.data(), svg.size());
  if (!w.path.empty()) Check(WriteFileAtomically(w.path, svg));
}

template <typename E>
std::optional<E> EnumKw(Kwargs& k, const char* name, std::span<const EnumName<E>> table) {
  std::optional<std::string> text = k.Opt<std::string>(name);
  if (!text) return std::nullopt;
  return Take(ParseEnum(table, *text, name));
}
std::optional<accounting::Dtype> DtypeKw(Kwargs& k, const char* name) {
  std::optional<std::string> text = k.Opt<std::string>(name);
  if (!text) return std::nullopt;
  return Take(accounting::ParseDtype(*text, name));
}

// ---- flops, memory, layouts ------------------------------------------------------------------------------------

constexpr const char* kDimKeywords[] = {"layers",  "d_model",   "heads",       "kv_heads", "head_dim", "d_ff",
                                        "vocab",   "positions", "ffn",         "norm",     "tied",     "bias",
                                        "experts", "top_k",     "expert_d_ff", "window"};
constexpr const char* kLayoutKeywords[] = {"tp",
                                           "pp",
                                           "vpp",
                                           "cp",
                                           "ep",
                                           "etp",
                                           "dp",
                                           "sequence_parallel",
                                           "micro_batch",
                                           "global_batch",
                                           "distributed_optimizer",
                                           "per_stage",
                                           "convention",
                                           "search",
                                           "inter_node_gb_s",
                                           "no_overlap",
                                           "gpus_per_node",
                                           "top"};

// A keyword that switches a mode on: given, and not False (a bool keyword set to False is the default).
bool Selects(const Kwargs& k, nb::kwargs kw, const char* name) {
  return k.Given(name) && !(PyBool_Check(kw[name].ptr()) && kw[name].ptr() == Py_False);
}

accounting::ModelSource SourceOf(Kwargs& k, nb::kwargs kw, const std::vector<std::string>& model) {
  if (model.size() > 1)
    throw nb::type_error((k.function() + "() takes one model (a config, folder or preset)").c_str());
  accounting::ModelSource s;
  if (!model.empty()) s.model = model[0];
  for (const char* d : kDimKeywords) s.has_dims = s.has_dims || Selects(k, kw, d);
  auto& d = s.dims;
  k.Get("layers", &d.layers);
  k.Get("d_model", &d.d_model);
  k.Get("heads", &d.heads);
  k.Get("kv_heads", &d.kv_heads);
  k.Get("head_dim", &d.head_dim);
  k.Get("d_ff", &d.d_ff);
  k.Get("vocab", &d.vocab);
  k.Get("positions", &d.positions);
  d.ffn = EnumKw(k, "ffn", accounting::FfnNames()).value_or(accounting::FfnKind::kSwiGlu);
  d.norm = EnumKw(k, "norm", accounting::NormNames()).value_or(accounting::NormKind::kRmsNorm);
  k.Get("tied", &d.tied);
  k.Get("bias", &d.bias);
  k.Get("experts", &d.experts);
  k.Get("top_k", &d.top_k);
  k.Get("expert_d_ff", &d.expert_d_ff);
  k.Get("window", &d.window);
  return s;
}

accounting::Sweep SweepOf(Kwargs& k) {
  std::optional<std::string> text = k.Opt<std::string>("sweep");
  return text ? Take(accounting::ParseSweep(*text)) : accounting::Sweep{};
}

// The layout keywords into `t` (as the CLI's layout flags); `search` for memory/layouts.
void LayoutOf(Kwargs& k, accounting::TrainingRequest* t, bool search, std::optional<int> zero) {
  auto& l = t->layout;
  k.Get("tp", &l.tp);
  k.Get("pp", &l.pp);
  k.Get("vpp", &l.vpp);
  k.Get("cp", &l.cp);
  k.Get("ep", &l.ep);
  k.Get("etp", &l.etp);
  k.Get("dp", &l.dp);
  k.Get("sequence_parallel", &l.sequence_parallel);
  l.micro_batch = 0;  // the request's batch, unless given
  k.Get("micro_batch", &l.micro_batch);
  k.Get("global_batch", &l.global_batch);
  k.Get("gpus_per_node", &l.gpus_per_node);
  k.Get("per_stage", &t->per_stage);
  k.Get("inter_node_gb_s", &t->inter_node_gb_s);
  t->convention = EnumKw(k, "convention", accounting::MemoryConventionNames()).value_or(t->convention);
  bool no_overlap = false, distributed_optimizer = false;
  k.Get("no_overlap", &no_overlap);
  k.Get("distributed_optimizer", &distributed_optimizer);
  t->overlap = !no_overlap;
  if (search) {
    k.Get("search", &t->search);
    k.Get("top", &t->top);
  }
  if (distributed_optimizer && zero && *zero != 1)
    Raise(Status::InvalidArgument(Field("distributed_optimizer") + " is ZeRO-1; it contradicts " + Field("zero") + " " +
                                  std::to_string(*zero)));
  l.zero = distributed_optimizer ? 1 : zero.value_or(0);
}

nb::dict Flops(const std::vector<std::string>& model, nb::kwargs kw) {
  Kwargs k("flops", kw);
  bool layout = Selects(k, kw, "gpus") || Selects(k, kw, "zero");
  for (const char* f : kLayoutKeywords)
    layout = layout || (Selects(k, kw, f) && std::string_view(f) != "search" && std::string_view(f) != "top");
  const SvgWish svg = SvgOf(k);
  accounting::FlopsRequest req;
  req.source = SourceOf(k, kw, model);
  k.Get("seq_len", &req.options.seq_len);
  k.Get("batch", &req.options.batch);
  k.Get("training", &req.training);
  k.Get("causal_half", &req.options.causal_half);
  k.Get("gpu", &req.gpu);
  k.Get("gpu_spec", &req.gpu_spec);
  req.mfu = k.Opt<double>("mfu");
  req.options.recompute = EnumKw(k, "recompute", accounting::RecomputeNames()).value_or(accounting::Recompute::kNone);
  bool no_lm_head = false;
  k.Get("no_lm_head", &no_lm_head);
  req.options.lm_head = !no_lm_head;
  k.Get("softmax", &req.options.softmax_flops);
  k.Get("macs", &req.options.macs);
  req.dtype = DtypeKw(k, "dtype");
  req.kv_dtype = DtypeKw(k, "kv_dtype");
  req.quant_scope = EnumKw(k, "quant_scope", accounting::QuantScopeNames());
  req.attention = EnumKw(k, "attention", accounting::AttentionNames());
  req.steps = k.Opt<int64_t>("steps");
  req.sweep = SweepOf(k);
  if (layout) {
    accounting::TrainingRequest t;
    LayoutOf(k, &t, false, k.Opt<int>("zero"));
    k.Get("gpus", &t.layout.gpus);
    req.layout = std::move(t);
  }
  if (svg.any()) req.svg_path = svg.in_memory ? kSvgInMemory : svg.path;
  k.Finish();
  accounting::FlopsResult res = Take(Released([&] { return accounting::RunFlops(req); }));
  nb::dict doc = ToDict(present::FlopsJson(res));
  if (svg.any()) DeliverSvg(svg, present::FlopsSvg(res), doc);
  return doc;
}

nb::dict Memory(const std::vector<std::string>& model, nb::kwargs kw, bool search) {
  Kwargs k(search ? "layouts" : "memory", kw);
  bool layout = search;
  for (const char* f : kLayoutKeywords) layout = layout || Selects(k, kw, f);
  const SvgWish svg = SvgOf(k);
  accounting::MemoryRequest req;
  req.source = SourceOf(k, kw, model);
  req.mode = EnumKw(k, "mode", accounting::ModeNames()).value_or(accounting::Mode::kTraining);
  req.dtype = DtypeKw(k, "dtype").value_or(accounting::Dtype::kBf16);
  req.gpus = k.Opt<int64_t>("gpus");
  k.Get("batch", &req.batch);
  k.Get("seq_len", &req.seq_len);
  k.Get("gpu", &req.gpu);
  k.Get("gpu_spec", &req.gpu_spec);
  k.Get("capacity_gb", &req.capacity_gb);
  k.Get("overhead_gib", &req.overhead_gib);
  req.optimizer = EnumKw(k, "optimizer", accounting::OptimizerNames());
  req.recompute = EnumKw(k, "recompute", accounting::RecomputeNames());
  req.zero = k.Opt<int>("zero");
  if (req.zero && (*req.zero < 0 || *req.zero > 3))
    Raise(Status::InvalidArgument(Field("zero") + " must be 0, 1, 2 or 3"));
  req.activations = EnumKw(k, "activations", accounting::ActivationModelNames());
  req.kv_dtype = DtypeKw(k, "kv_dtype");
  req.quant_scope = EnumKw(k, "quant_scope", accounting::QuantScopeNames());
  req.sweep = SweepOf(k);
  if (layout) {
    accounting::TrainingRequest t;
    LayoutOf(k, &t, true, req.zero);
    if (search) t.search = true;
    req.layout = std::move(t);
  }
  if (svg.any()) req.svg_path = svg.in_memory ? kSvgInMemory : svg.path;
  k.Finish();
  accounting::MemoryResult res = Take(Released([&] { return accounting::RunMemory(req); }));
  if (std::string note = present::MemoryIgnoredNote(res); !note.empty())
    Warn(RenderFields(note, [](auto f) { return std::string(f); }));
  nb::dict doc = ToDict(present::MemoryJson(res));
  if (svg.any()) DeliverSvg(svg, present::MemorySvg(res), doc);
  return doc;
}

// ---- plan ------------------------------------------------------------------------------------------------------

const FieldNames kPlanNames = {{"plan_path", "plan"}, {"timeline_path", "timeline"}, {"trace_path", "trace"}};

nb::dict Plan(const std::string& plan, nb::kwargs kw) {
  Kwargs k("plan", kw);
  const SvgWish svg = SvgOf(k);
  accounting::PlanRequest req;
  req.plan_path = plan;
  k.Get("gpu", &req.gpu);
  k.Get("gpu_spec", &req.gpu_spec);
  k.Get("gpus", &req.gpus);
  k.Get("what_if", &req.what_if);
  k.Get("timeline", &req.timeline_path);
  k.Get("generate_events", &req.generate_events);
  k.Get("seed", &req.seed);
  k.Get("trace", &req.trace_path);
  if (svg.any()) req.svg_path = svg.in_memory ? kSvgInMemory : svg.path;
  k.Finish();
  accounting::PlanResult res = TakeAs(Released([&] { return accounting::RunPlanWithTimeline(req); }), kPlanNames);
  nb::dict doc = ToDict(present::PlanJson(res));
  if (svg.any()) DeliverSvg(svg, res.timeline ? present::PlanTimelineSvg(res) : present::PlanMemoryMapSvg(res), doc);
  if (!res.trace_path.empty())
    Check(WriteFileAtomically(res.trace_path, DumpJson(present::PlanTimelineTraceJson(res), -1) + "\n"));
  return doc;
}

// ---- calibrate, quantize ---------------------------------------------------------------------------------------

unsigned ThreadsOf(Kwargs& k) {
  std::optional<unsigned> t = k.Opt<unsigned>("threads");
  return t && *t > 0 ? *t : DefaultThreadCount();
}

nb::dict Calibrate(const std::vector<std::string>& inputs, nb::kwargs kw) {
  Kwargs k("calibrate", kw);
  const SvgWish svg = SvgOf(k);
  quant::CalibrateRequest o;
  model::CalibrateModelRequest m;
  o.inputs = inputs;
  const bool from_model = k.Get("model", &m.model);
  const bool with_tokens = k.Get("tokens", &m.tokens);
  k.Get("seq_len", &m.seq_len);
  k.Get("max_tokens", &m.max_tokens);
  k.Get("all_experts", &m.all_experts);
  std::string method, flavor = "nvidia";
  if (!k.Get("method", &method)) throw nb::type_error("calibrate() needs method= (minmax, percentile, entropy or mse)");
  k.Get("flavor", &flavor);
  o.percentile = k.Opt<double>("percentile");
  const bool bins = k.Get("bins", &o.bins);
  if (!k.Get("output", &o.output)) throw nb::type_error("calibrate() needs output= (the CALIB.json to write)");
  k.Get("trt_cache", &o.trt_cache);
  o.threads = ThreadsOf(k);
  k.Finish();
  if (from_model == !inputs.empty())
    Raise(Status::InvalidArgument("give either activation files or " + Field("model") + " with " + Field("tokens")));
  if (from_model != with_tokens)
    Raise(Status::InvalidArgument(Field("model") + " and " + Field("tokens") + " go together"));
  o.method = Take(quant::ParseCalibMethod(method));
  o.flavor = Take(quant::ParseCalibFlavor(flavor));
  if (bins && o.method == quant::CalibMethod::kMinMax && !svg.any())
    Raise(Status::InvalidArgument(Field("bins") +
                                  " applies to the histogram methods (percentile, entropy, mse), not minmax"));
  o.survey = svg.any();
  const quant::RenderCalibrationOutput chart = present::AddCalibrationOutputs(&o, svg.path);
  m.calib = o;
  const FieldNames names = {{"survey", "svg"}};
  quant::CalibrationTable table =
      TakeAs(Released([&] {
               return from_model ? model::CalibrateModel(m, nullptr, chart) : quant::Calibrate(o, nullptr, chart);
             }),
             names);
  for (const std::string& w : table.warnings) Warn(w);
  nb::dict doc = ToDict(present::CalibrationReportJson(table));
  if (svg.in_memory) DeliverSvg(svg, present::CalibrationSvg(table), doc);
  return doc;
}

nb::dict Quantize(const std::string& input, const std::string& output, nb::kwargs kw) {
  Kwargs k("quantize", kw);
  const SvgWish svg = SvgOf(k);
  quant::QuantizeRequest o;
  o.input = input;
  o.output = output;
  std::string scheme = "w8a16", granularity, format = "compressed-tensors", method = "rtn", tokens_dtype = "u16";
  std::string report;
  k.Get("scheme", &scheme);
  k.Get("granularity", &granularity);
  k.Get("format", &format);
  k.Get("method", &method);
  k.Get("calibration", &o.calibration);
  k.Get("include", &o.include);
  k.Get("exclude", &o.exclude);
  k.Get("split_fused", &o.split_fused);
  nb::object sq = k.Raw("smoothquant");
  k.Get("calibration_tokens", &o.calibration_tokens);
  k.Get("tokens_dtype", &tokens_dtype);
  k.Get("samples", &o.samples);
  k.Get("seq_len", &o.seq_len);
  k.Get("dampening", &o.dampening);
  k.Get("act_order", &o.act_order);
  k.Get("report", &report);
  o.threads = ThreadsOf(k);
  k.Finish();
  o.scheme = Take(quant::ParseQuantScheme(scheme));
  o.format = Take(quant::ParseQuantFormat(format));
  if (granularity.empty())
    granularity = o.format == quant::QuantFormat::kGgufQ8_0 ? std::string("group:32")
                                                            : std::string(quant::InfoOf(o.scheme).default_granularity);
  o.granularity = Take(quant::ParseGranularity(granularity));
  o.method = Take(quant::ParseQuantMethod(method));
  if (!sq.is_none()) {
    double alpha = 0;
    if (nb::isinstance<nb::str>(sq) && nb::cast<std::string>(sq) == "auto") {
      o.smoothquant_auto = true;
    } else if (!PyBool_Check(sq.ptr()) && nb::try_cast(sq, alpha) && alpha >= 0 && alpha <= 1) {
      o.smoothquant_alpha = alpha;
    } else {
      Raise(Status::InvalidArgument(Field("smoothquant") + " must be a number in [0, 1] or \"auto\""));
    }
  }
  if (tokens_dtype != "u16" && tokens_dtype != "u32")
    Raise(Status::InvalidArgument(Field("tokens_dtype") + " must be u16 or u32"));
  o.tokens_dtype = tokens_dtype == "u16" ? io::TokenDtype::kU16 : io::TokenDtype::kU32;
  const quant::RenderQuantizeOutput render = present::AddQuantizeOutputs(&o, report, svg.path);
  quant::QuantizeResult rep = Take(Released([&] { return quant::Quantize(o, nullptr, render); }));
  for (const std::string& w : rep.warnings) Warn(RenderFields(w, [](auto f) { return std::string(f); }));
  nb::dict doc = ToDict(present::QuantizeReportJson(rep));
  if (svg.in_memory) DeliverSvg(svg, present::QuantizeSvg(rep), doc);
  return doc;
}

}  // namespace

void RegisterReports(nb::module_& m) {
  m.def(
      "flops", [](std::vector<std::string> model, nb::kwargs kw) { return Flops(model, kw); }, nb::arg("model"),
      nb::arg("kwargs"),
      "lmkit flops: FlopsRequest's fields as keywords -> FlopsJson (or TrainingJson with a layout).");
  m.def(
      "memory", [](std::vector<std::string> model, nb::kwargs kw) { return Memory(model, kw, false); },
      nb::arg("model"), nb::arg("kwargs"), "lmkit memory: MemoryRequest's fields -> MemoryJson (or TrainingJson).");
  m.def(
      "layouts", [](std::vector<std::string> model, nb::kwargs kw) { return Memory(model, kw, true); },
      nb::arg("model"), nb::arg("kwargs"), "lmkit memory --search: TrainingRequest's fields -> TrainingJson.");
  m.def("plan", &Plan, nb::arg("plan"), nb::arg("kwargs"), "lmkit plan: PlanRequest's fields -> PlanJson.");
  m.def("calibrate", &Calibrate, nb::arg("inputs"), nb::arg("kwargs"),
        "lmkit calibrate: CalibrateRequest' fields -> CalibrationReportJson.");
  m.def("quantize", &Quantize, nb::arg("model"), nb::arg("output"), nb::arg("kwargs"),
        "lmkit quantize: QuantizeRequest' fields -> QuantizeReportJson.");
}

}  // namespace lmkit::py
