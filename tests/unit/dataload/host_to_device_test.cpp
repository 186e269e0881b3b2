#include <catch2/catch.hpp>
#include <vector>

#include "lmkit/cuda/dataload_h2d.h"
#include "lmkit/cuda/device.h"
#include "support/skip.h"

using lmkit::cuda::HostToDevice;

TEST_CASE("host to device: batches arrive unchanged, pinned and pageable", "[dataload][cuda]") {
  if (lmkit::cuda::ListCudaDevices().devices.empty()) {
    auto h = HostToDevice::Create(0, 1024, true);
    CHECK_FALSE(h.ok());
    CHECK(h.status().code() == lmkit::ErrorCode::kUnsupported);
    LMKIT_SKIP("no CUDA device (" << lmkit::cuda::ListCudaDevices().why_none << "): host-to-device copies");
  }
  std::vector<int64_t> batch(2 * 12 * 1024);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<int64_t>(i * 7919 % 50257);
  for (bool pinned : {true, false}) {
    auto h = HostToDevice::Create(0, batch.size() * 8, pinned);
    REQUIRE(h.ok());
    lmkit::cuda::HostToDeviceTiming t;
    REQUIRE((*h)->Copy(batch.data(), batch.size() * 8, &t).ok());
    CHECK(t.copy_s > 0);
    CHECK((pinned ? t.stage_s > 0 : t.stage_s == 0));
    std::vector<int64_t> back(batch.size());
    REQUIRE((*h)->Readback(back.data(), back.size() * 8).ok());
    CHECK(back == batch);
  }
}
