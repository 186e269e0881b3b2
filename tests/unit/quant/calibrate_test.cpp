// The calibrate entry point: thread-count independence, the JSON table round trip, TensorRT hex, input errors, and
// the nvidia flavour's one-read counting against the two-pass histogram.
#include "lmkit/quant/calibrate.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lmkit/io/dtype.h"
#include "lmkit/io/npy.h"
#include "lmkit/io/safetensors.h"
#include "lmkit/quant/abs_histogram.h"
#include "lmkit/quant/calibrators.h"
#include "lmkit/quant/ort_histogram.h"
#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

TEST_CASE("calibrate: same table for any thread count - JSON amax round trip", "[quant][calib]") {
  CalibrateRequest o;
  o.inputs = {lmkit::test::TestData("quant/laplace_acts.npy")};
  for (CalibFlavor f : {CalibFlavor::kNvidia, CalibFlavor::kOrt}) {
    for (CalibMethod m : {CalibMethod::kEntropy, CalibMethod::kPercentile, CalibMethod::kMse, CalibMethod::kMinMax}) {
      if (f == CalibFlavor::kOrt && m == CalibMethod::kMse) continue;
      INFO("flavor " << CalibFlavorName(f) << ", method " << CalibMethodName(m));
      o.flavor = f;
      o.method = m;
      o.threads = 1;
      auto a = Calibrate(o, nullptr);
      o.threads = 3;
      auto b = Calibrate(o, nullptr);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      CHECK(DumpJson(CalibrationToJson(*a)) == DumpJson(CalibrationToJson(*b)));
      auto amax = ParseCalibrationAmax(DumpJson(CalibrationToJson(*a)), "calib.json");
      REQUIRE(amax.ok());
      CHECK(amax->at("laplace_acts") == a->tensors[0].amax);
    }
  }
}

TEST_CASE("calibrate: TensorRT scale hex and malformed tables", "[quant][calib]") {
  CHECK(TrtScaleHex(68.191483) == "3f0974f4");
  CHECK(TrtScaleHex(127.0) == "3f800000");
  CHECK(TrtScaleHex(0.0) == "00000000");
  CHECK_FALSE(ParseCalibrationAmax("[]", "c.json").ok());
  auto bad = ParseCalibrationAmax(R"({"tensors": {"x": {"amax": -1}}})", "c.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().ToString() == "c.json: tensor 'x' has an invalid amax");
  CHECK_FALSE(ParseCalibrationAmax(R"({"tensors": {"x": {}}})", "c.json").ok());
  CHECK_FALSE(ParseCalibrationAmax("{", "c.json").ok());
}

TEST_CASE("calibrate: option and input errors", "[quant][calib]") {
  CalibrateRequest o;
  o.inputs = {lmkit::test::TestData("quant/laplace_acts.npy")};
  o.method = CalibMethod::kMse;
  o.flavor = CalibFlavor::kOrt;
  CHECK(Calibrate(o, nullptr).status().code() == ErrorCode::kInvalidArgument);
  o.flavor = CalibFlavor::kNvidia;
  o.method = CalibMethod::kPercentile;
  o.percentile = 0.0;
  CHECK(Calibrate(o, nullptr).status().code() == ErrorCode::kInvalidArgument);
  o.percentile.reset();
  o.inputs = {lmkit::test::TestData("quant/PROVENANCE.md")};
  auto r = Calibrate(o, nullptr);
  CHECK(r.status().code() == ErrorCode::kInvalidInput);
  CHECK(r.status().message() == "activation files must be .npy or .safetensors");
}

TEST_CASE("calibrate: streaming calibration of in-memory batches equals file calibration, for any thread count",
          "[quant][calib]") {
  const std::string path = lmkit::test::TestData("quant/laplace_acts.npy");
  auto npy = io::NpyFile::Open(path);
  REQUIRE(npy.ok());
  REQUIRE(npy->shape().size() == 2);
  const uint64_t batches = npy->shape()[0], per = npy->shape()[1];
  std::vector<float> data(batches * per);
  io::ConvertToF32(npy->dtype(), npy->data().data(), data.data(), data.size());
  for (CalibFlavor f : {CalibFlavor::kNvidia, CalibFlavor::kOrt}) {
    for (CalibMethod m : {CalibMethod::kEntropy, CalibMethod::kPercentile, CalibMethod::kMse, CalibMethod::kMinMax}) {
      if (f == CalibFlavor::kOrt && m == CalibMethod::kMse) continue;
      CalibrateRequest o;
      o.inputs = {path};
      o.method = m;
      o.flavor = f;
      auto want = Calibrate(o, nullptr);
      REQUIRE(want.ok());
      // Two tensors fed the same batches, as q_proj and k_proj see the same input; with more than one thread each
      // batch (100,000 values: three chunks and a part) is split among the workers, which must not change a bit.
      for (unsigned threads : {1u, 2u, 3u}) {
        INFO("threads " << threads);
        CalibrateRequest ot = o;
        ot.threads = threads;
        auto sc = StreamingCalibrator::Create(ot, {"laplace_acts", "copy"}, "mem");
        REQUIRE(sc.ok());
        CHECK(sc->passes() == (f == CalibFlavor::kNvidia && m != CalibMethod::kMinMax ? 2 : 1));
        for (int p = 0; p < sc->passes(); ++p) {
          REQUIRE(sc->BeginPass(p).ok());
          for (uint64_t b = 0; b < batches; ++b) {
            REQUIRE(sc->Add(0, data.data() + b * per, per).ok());
            REQUIRE(sc->Add(1, data.data() + b * per, per).ok());
          }
        }
        auto got = sc->Finish();
        REQUIRE(got.ok());
        REQUIRE(got->tensors.size() == 2);
        Json gj = CalibrationToJson(*got), wj = CalibrationToJson(*want);
        CHECK(DumpJson(gj["tensors"]["laplace_acts"]) == DumpJson(wj["tensors"]["laplace_acts"]));
        CHECK(DumpJson(gj["tensors"]["copy"]) == DumpJson(wj["tensors"]["laplace_acts"]));
        gj.erase("tensors");
        wj.erase("tensors");
        CHECK(DumpJson(gj) == DumpJson(wj));
      }
    }
  }
  CalibrateRequest o;
  o.method = CalibMethod::kEntropy;
  auto sc = StreamingCalibrator::Create(o, {"x"}, "mem");
  REQUIRE(sc.ok());
  CHECK(sc->Add(0, data.data(), 1).code() == ErrorCode::kInvalidArgument);  // before BeginPass
  REQUIRE(sc->BeginPass(0).ok());
  CHECK(sc->Add(1, data.data(), 1).code() == ErrorCode::kInvalidArgument);
  CHECK(sc->Finish().status().code() == ErrorCode::kInvalidArgument);  // the second pass never ran
  const float bad[2] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  REQUIRE(sc->Add(0, bad, 2).ok());
  auto e = sc->BeginPass(1);
  CHECK(e.ToString() == "mem: tensor 'x' contains NaN or Inf");
  // The ort flavour checks each batch as it comes, also a later one that its one-pass path takes (within range).
  o.flavor = CalibFlavor::kOrt;
  for (CalibMethod m : {CalibMethod::kEntropy, CalibMethod::kPercentile}) {
    o.method = m;
    auto so = StreamingCalibrator::Create(o, {"x"}, "mem");
    REQUIRE(so.ok());
    REQUIRE(so->BeginPass(0).ok());
    REQUIRE(so->Add(0, data.data(), per).ok());
    std::vector<float> later(data.begin(), data.begin() + per);
    for (float& v : later) v *= 0.5f;
    later[per / 2] = std::numeric_limits<float>::infinity();
    CHECK(so->Add(0, later.data(), per).ToString() == "mem: tensor 'x' contains NaN or Inf");
  }
}

TEST_CASE("calibrate: BF16 safetensors and F32 .npy of the same values give the same table", "[quant][calib]") {
  // The read path differs by dtype (F32 is read straight into the float buffer, BF16 read then widened); chunks of
  // 32k elements with a partial last one, in both flavours.
  std::mt19937 rng(5);
  std::exponential_distribution<float> ed(1.0f);
  const uint64_t rows = 4, cols = 50001;
  std::vector<float> x(rows * cols);
  std::vector<uint16_t> bf(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    bf[i] = io::F32ToBf16((i % 2 ? 1.0f : -1.0f) * ed(rng));
    x[i] = io::Bf16ToF32(bf[i]);
  }
  lmkit::test::TempDir dir;
  const std::string npy = dir.file("acts.npy"), st = dir.file("acts.safetensors");
  REQUIRE(io::WriteNpy(npy, io::DType::kF32, {rows, cols}, {reinterpret_cast<const uint8_t*>(x.data()), x.size() * 4})
              .ok());
  {
    auto w = io::SafetensorsWriter::Create(st, {{"acts", io::DType::kBF16, {rows, cols}}});
    REQUIRE(w.ok());
    REQUIRE(w->Write(bf.data(), bf.size() * 2).ok());
    REQUIRE(w->Commit().ok());
  }
  for (CalibFlavor f : {CalibFlavor::kNvidia, CalibFlavor::kOrt}) {
    CalibrateRequest o;
    o.method = CalibMethod::kEntropy;
    o.flavor = f;
    o.threads = 2;
    o.inputs = {npy};
    auto a = Calibrate(o, nullptr);
    o.inputs = {st};
    auto b = Calibrate(o, nullptr);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(DumpJson(CalibrationToJson(*a)) == DumpJson(CalibrationToJson(*b)));
    CHECK(a->tensors[0].samples == rows * cols);
    CHECK(a->tensors[0].batches == rows);
  }
}

TEST_CASE("calibrate: the min/max scan finds extremes and NaN/Inf anywhere in a batch", "[quant][calib]") {
  // The scan runs 2 x 16 (or 2 x 8) lanes at a time and a scalar tail; the extreme value or the bad one is put in
  // each of those places: lane 0, the second accumulator set, the last full step, the tail.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> base(1037);
  for (float& v : base) v = std::clamp(nd(rng), -4.0f, 4.0f);
  for (const size_t p : {size_t{0}, size_t{5}, size_t{16}, size_t{31}, size_t{32}, size_t{33}, size_t{1023},
                         size_t{1024}, size_t{1036}}) {
    INFO("position " << p);
    auto run = [&](float value) {
      std::vector<float> x = base;
      x[p] = value;
      CalibrateRequest o;
      o.method = CalibMethod::kMinMax;
      auto sc = StreamingCalibrator::Create(o, {"x"}, "mem");
      REQUIRE(sc.ok());
      REQUIRE(sc->BeginPass(0).ok());
      REQUIRE(sc->Add(0, x.data(), x.size()).ok());
      return sc->Finish();
    };
    auto lo = run(-50.0f);
    REQUIRE(lo.ok());
    CHECK(lo->tensors[0].min == -50.0);
    CHECK(lo->tensors[0].amax == 50.0);
    auto hi = run(60.0f);
    REQUIRE(hi.ok());
    CHECK(hi->tensors[0].max == 60.0);
    CHECK(hi->tensors[0].amax == 60.0);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      auto e = run(bad);
      CHECK(e.status().ToString() == "mem: tensor 'x' contains NaN or Inf");
    }
  }
}

TEST_CASE("calibrate: a tensor spread over files gets the two-pass histogram wherever its maximum is",
          "[quant][calib]") {
  // The nvidia flavour counts in its first read under the running max|x| and reads again only what that got wrong.
  // A tensor split over three safetensors files, with its maximum in the first, the second or the last file: the
  // thresholds must be those of one |x| histogram over [0, max|x|] of all samples (AbsHistogram fed in two passes).
  std::mt19937 rng(9);
  std::exponential_distribution<float> ed(1.0f);
  const uint64_t per = 70001;  // two full 32k chunks and a partial one per file
  std::vector<float> x(3 * per);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? 1.0f : -1.0f) * ed(rng);
  lmkit::test::TempDir dir;
  for (const size_t at : {size_t{5}, per + per / 2, x.size() - 1}) {
    std::vector<float> y = x;
    y[at] = 40.0f;
    std::vector<std::string> files;
    for (int f = 0; f < 3; ++f) {
      files.push_back(dir.file("part" + std::to_string(f) + ".safetensors"));
      auto w = io::SafetensorsWriter::Create(files.back(), {{"t", io::DType::kF32, {per}}});
      REQUIRE(w.ok());
      REQUIRE(w->Write(y.data() + f * per, per * 4).ok());
      REQUIRE(w->Commit().ok());
    }
    AbsHistogram h(2048, 40.0f);
    h.Add(y.data(), y.size());
    for (unsigned threads : {1u, 2u}) {
      INFO("max at " << at << ", threads " << threads);
      CalibrateRequest o;
      o.inputs = files;
      o.threads = threads;
      o.method = CalibMethod::kEntropy;
      auto e = Calibrate(o, nullptr);
      REQUIRE(e.ok());
      CHECK(e->tensors[0].amax == NvidiaEntropyAmax(h));
      CHECK(e->tensors[0].samples == y.size());
      o.method = CalibMethod::kPercentile;
      o.percentile = 99.9;
      auto p = Calibrate(o, nullptr);
      REQUIRE(p.ok());
      CHECK(p->tensors[0].amax == NvidiaPercentileAmax(h, 99.9));
    }
  }
}
