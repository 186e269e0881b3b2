// The calibrate entry point: thread-count independence, the JSON table round trip, TensorRT hex, input errors.
#include "lmkit/quant/calibrate.h"

#include <catch2/catch.hpp>

#include "support/run_lmkit.h"

using namespace lmkit;
using namespace lmkit::quant;

TEST_CASE("calibrate: same table for any thread count - JSON amax round trip", "[quant][calib]") {
  CalibrateOptions o;
  o.inputs = {lmkit::test::TestData("quant/laplace_acts.npy")};
  for (CalibMethod m : {CalibMethod::kEntropy, CalibMethod::kPercentile, CalibMethod::kMse, CalibMethod::kMinMax}) {
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
  CalibrateOptions o;
  o.inputs = {lmkit::test::TestData("quant/laplace_acts.npy")};
  o.method = CalibMethod::kMse;
  o.flavor = CalibFlavor::kOrt;
  CHECK(Calibrate(o, nullptr).status().code() == ErrorCode::kUsage);
  o.flavor = CalibFlavor::kNvidia;
  o.method = CalibMethod::kPercentile;
  o.percentile = 0.0;
  CHECK(Calibrate(o, nullptr).status().code() == ErrorCode::kUsage);
  o.percentile.reset();
  o.inputs = {lmkit::test::TestData("quant/PROVENANCE.md")};
  auto r = Calibrate(o, nullptr);
  CHECK(r.status().code() == ErrorCode::kInvalidInput);
  CHECK(r.status().message() == "activation files must be .npy or .safetensors");
}
