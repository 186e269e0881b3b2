// The bin rule of the |x| calibration histogram (torch.histc's), shared by the CPU histograms (quant/abs_histogram.h)
// and the CUDA histogram kernel (cuda/quant_kernels.h). Pure, host and device.
#pragma once

#include <cstdint>

#include "lmkit/formats/host_device.h"

namespace lmkit::formats {

// The bin of one value 0 <= v_abs <= amax, amax > 0, among `bins`: trunc((v_abs / amax) * bins) in fp32, the last bin
// closed.
LMKIT_HD uint32_t AbsBin(float v_abs, float amax, uint32_t bins) {
  float f = (v_abs / amax) * static_cast<float>(bins);
  uint32_t b = static_cast<uint32_t>(f);
  return b >= bins ? bins - 1 : b;
}

}  // namespace lmkit::formats
