// Built instead of src/lmkit/cuda/quant_kernels.cu when CUDA is off at configure time.
#include <utility>

#include "lmkit/cuda/quant_kernels.h"

namespace lmkit::cuda {
namespace {
Status NoCuda() { return Status::Unsupported("cuda", "this lmkit was built without CUDA"); }
}  // namespace

Result<OwnedStream> OwnedStream::Create() { return NoCuda(); }
OwnedStream& OwnedStream::operator=(OwnedStream&& o) noexcept {
  std::swap(s_, o.s_);
  return *this;
}
OwnedStream::~OwnedStream() = default;

Status QuantizePerChannelHost(const void*, ElemType, uint64_t, uint64_t, formats::Int8Convention, ElemType, int8_t*,
                              float*, Stream) {
  return NoCuda();
}
Status AbsHistogramHost(const float*, uint64_t, float, uint32_t, uint64_t*, HistogramKernel, Stream) {
  return NoCuda();
}
Result<KernelTiming> BenchQuantizePerChannel(uint64_t, uint64_t, int, bool) { return NoCuda(); }
Result<KernelTiming> BenchAbsHistogram(uint64_t, uint32_t, int, BenchData, HistogramKernel) { return NoCuda(); }

}  // namespace lmkit::cuda
