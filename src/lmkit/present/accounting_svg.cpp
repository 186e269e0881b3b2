#include "lmkit/present/accounting_svg.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lmkit/common/units.h"
#include "lmkit/present/accounting_training.h"
#include "lmkit/present/chart.h"

namespace lmkit::present {
namespace {

// Keeps only the series with a positive value at some column.
void DropEmptySeries(StackedColumns& c) {
  std::vector<size_t> keep;
  for (size_t s = 0; s < c.series.size(); ++s)
    for (const auto& row : c.values)
      if (s < row.size() && row[s] > 0) {
        keep.push_back(s);
        break;
      }
  std::vector<StackSeries> series;
  for (size_t s : keep) series.push_back(c.series[s]);
  for (auto& row : c.values) {
    std::vector<double> kept;
    for (size_t s : keep) kept.push_back(s < row.size() ? row[s] : 0.0);
    row = std::move(kept);
  }
  c.series = std::move(series);
}

}  // namespace

std::string FlopsSvg(const accounting::FlopsResult& r) {
  return r.layout ? TrainingStepSvg(*r.layout) : FlopsSweepSvg(r);
}

std::string MemorySvg(const accounting::MemoryResult& r) {
  return r.layout ? TrainingMemorySvg(*r.layout) : MemorySweepSvg(r);
}

std::string FlopsSweepSvg(const accounting::FlopsResult& r) {
  StackedColumns c;
  c.title = r.sweep_variable == "model"
                ? "Forward FLOP shares by component (model sweep)"
                : "Forward FLOP shares by component: " + r.model.name + " (" + r.sweep_variable + " sweep)";
  for (int k = 0; k < accounting::kComponentCount; ++k)
    c.series.push_back({accounting::ComponentName(static_cast<accounting::Component>(k))});
  for (const auto& p : r.sweep) {
    c.columns.push_back(r.sweep_variable + " " + p.label);
    std::vector<double> row;
    for (int k = 0; k < accounting::kComponentCount; ++k) row.push_back(static_cast<double>(p.report.component[k]));
    c.values.push_back(std::move(row));
  }
  DropEmptySeries(c);
  return StackedColumnsSvg(c);
}

std::string MemorySweepSvg(const accounting::MemoryResult& r) {
  StackedColumns c;
  c.title = "Memory per GPU by component: " + r.model.name + " (" + r.sweep_variable + " sweep)";
  if (r.sweep_variable == "model") c.title = "Memory per GPU by component (model sweep)";
  for (const char* name : {"weights", "gradients", "optimizer state", "activations", "KV cache", "overhead"})
    c.series.push_back({name});
  for (const auto& p : r.sweep) {
    c.columns.push_back(r.sweep_variable + " " + p.label);
    const accounting::MemoryReport& x = p.report;
    c.values.push_back({static_cast<double>(x.weights), static_cast<double>(x.gradients),
                        static_cast<double>(x.optimizer), static_cast<double>(x.activations),
                        static_cast<double>(x.kv_cache), static_cast<double>(x.overhead)});
  }
  DropEmptySeries(c);
  return StackedColumnsSvg(c);
}

std::string PlanMemoryMapSvg(const accounting::PlanResult& r) {
  // One series per placed model plus reserved, margin and free: every column then sums to the GPU's capacity, so
  // the shares chart is the memory map.
  StackedColumns c;
  c.title = "GPU memory map: " + std::to_string(r.gpus) + " x " + r.gpu.name + " (" +
            HumanBytes(static_cast<double>(r.gpu.memory_bytes)) + " each; share of capacity)";
  c.series.resize(1);
  c.series[0].name = "reserved (context, workspaces)";
  c.series[0].role = Role::kReserved;
  std::vector<int> placed;  // each model once, though a tensor-parallel one is on several GPUs
  for (const auto& g : r.gpu_use)
    for (int i : g.models)
      if (std::find(placed.begin(), placed.end(), i) == placed.end()) placed.push_back(i);
  for (int i : placed) c.series.push_back({r.models[static_cast<size_t>(i)].entry.name});
  c.series.push_back({"fragmentation margin", Role::kMargin});
  c.series.push_back({"free", Role::kFree});
  for (size_t g = 0; g < r.gpu_use.size(); ++g) {
    const accounting::GpuUse& u = r.gpu_use[g];
    c.columns.push_back("GPU " + std::to_string(g));
    std::vector<double> row(c.series.size(), 0.0);
    row[0] = u.reserved;
    for (size_t k = 0; k < placed.size(); ++k) {
      const accounting::ModelEstimate& m = r.models[static_cast<size_t>(placed[k])];
      if (std::find(m.gpus.begin(), m.gpus.end(), static_cast<int>(g)) != m.gpus.end())
        row[k + 1] = static_cast<double>(m.footprint);
    }
    row[c.series.size() - 2] = u.margin;
    row[c.series.size() - 1] = u.free;
    c.values.push_back(std::move(row));
  }
  return StackedColumnsSvg(c);
}

}  // namespace lmkit::present
