// The one tensor walk under every output format of `lmkit quantize` (checkpoint_writer.h has the writers).
#include "lmkit/quant/quantize.h"

#include <vector>

#include "lmkit/common/atomic_file.h"
#include "lmkit/common/file_reader.h"
#include "lmkit/common/sysinfo.h"
#include "lmkit/common/thread_pool.h"
#include "lmkit/quant/checkpoint_writer.h"
#include "lmkit/quant/quantize_plan.h"

namespace lmkit::quant {

Result<QuantizeReport> Quantize(const QuantizeOptions& o, ProgressSink* progress) {
  if (o.input.empty() || o.output.empty())
    return Status::InvalidArgument(Field("input") + " and " + Field("output") + " are required");
  const double t0 = MonotonicSeconds();
  std::unique_ptr<detail::CheckpointWriter> writer =
      o.format == QuantFormat::kGgufQ8_0 ? detail::MakeGgufWriter(o) : detail::MakeCompressedTensorsWriter(o);
  LMKIT_RETURN_IF_ERROR(writer->CheckRequest());
  LMKIT_ASSIGN_OR_RETURN(detail::Matchers matchers, detail::CompileMatchers(o));
  LMKIT_ASSIGN_OR_RETURN(detail::Plan plan, detail::MakePlan(o, writer->SingleOutputFile()));

  QuantizeReport rep;
  rep.input = o.input;
  rep.output = o.output;
  rep.scheme = std::string(InfoOf(o.scheme).name);
  rep.granularity = GranularityName(o.granularity);
  rep.format = std::string(InfoOf(o.format).name);
  // The extra outputs are opened before any output, so an unwritable one fails the run before anything is written.
  std::vector<AtomicFile> extra;
  for (const QuantizeOptions::ExtraOutput& e : o.extra_outputs) {
    LMKIT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::Create(e.path));
    extra.push_back(std::move(f));
  }
  LMKIT_RETURN_IF_ERROR(writer->Prepare(plan, matchers, &rep));

  uint64_t total_bytes = 0;
  for (const detail::Shard& s : plan.shards)
    for (const io::TensorInfo& t : s.file.tensors()) total_bytes += t.num_bytes();
  ThreadPool pool(std::max(1u, o.threads));
  uint64_t done_bytes = 0;
  if (progress) progress->Begin("quantizing", total_bytes, "B");
  for (size_t si = 0; si < plan.shards.size(); ++si) {
    const detail::Shard& s = plan.shards[si];
    // Tensor bytes are read with pread, not through the header's mapping (file_reader.h says why).
    LMKIT_ASSIGN_OR_RETURN(FileReader in, FileReader::Open(s.in_path));
    if (in.size() != s.file.file_bytes()) return Status::InvalidInput(s.in_path, "file changed while being read");
    for (size_t ti = 0; ti < s.file.tensors().size(); ++ti) {
      const io::TensorInfo& t = s.file.tensors()[ti];
      detail::TensorOutcome out;
      LMKIT_RETURN_IF_ERROR(writer->WriteTensor(si, ti, in, pool, &out));
      if (out.kind != detail::TensorOutcome::Kind::kDropped) {
        rep.bytes_before += t.num_bytes();
        rep.bytes_after += out.bytes_written;
      }
      if (out.kind == detail::TensorOutcome::Kind::kQuantized) {
        rep.params_quantized += t.num_elements();
        rep.total.Merge(out.report.stats);
        rep.tensors.push_back(std::move(out.report));
      } else if (out.kind == detail::TensorOutcome::Kind::kCopied) {
        ++rep.tensors_copied;
      }
      done_bytes += t.num_bytes();
      if (progress) progress->Update(done_bytes);
    }
  }
  if (progress) progress->Finish();
  rep.seconds = MonotonicSeconds() - t0;
  rep.peak_rss_bytes = PeakRssBytes();
  // Secondary outputs first: if one fails, the checkpoint has not been renamed into place either.
  for (size_t i = 0; i < extra.size(); ++i) {
    const auto& render = o.extra_outputs[i].render;
    LMKIT_RETURN_IF_ERROR(extra[i].Write(render ? render(rep) : std::string()));
    LMKIT_RETURN_IF_ERROR(extra[i].Commit());
  }
  LMKIT_RETURN_IF_ERROR(writer->Commit());
  return rep;
}

}  // namespace lmkit::quant
