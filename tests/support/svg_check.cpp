#include "support/svg_check.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "lmkit/common/json.h"
#include "lmkit/present/chart.h"
#include "support/skip.h"

namespace lmkit::test {
namespace {

bool HaveCommand(const std::string& name) { return RunShell("command -v " + name + " >/dev/null").exit_code == 0; }

std::string Python() {
  static const std::string py = [] {
    const std::string configured = LMKIT_TEST_PYTHON;
    if (!configured.empty()) return configured;
    return HaveCommand("python3") ? std::string("python3") : std::string();
  }();
  return py;
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

}  // namespace

void CheckSvgFile(const std::string& path) {
  INFO("SVG " << path);
  const std::string py = Python();
  double w = 0, h = 0;  // the viewBox size, once parsed
  if (py.empty()) {
    LMKIT_SKIP_PART("python3 not found (scripts/setup.sh installs it): XML and layout checks of " << path);
  } else {
    const RunResult r = RunShell(py + " '" + RepoPath("tests/scripts/check_svg.py") + "' '" + path + "'");
    if (r.exit_code != 0) FAIL(r.out);
    auto parsed = ParseJson(r.out, "check_svg.py");
    REQUIRE(parsed.ok());
    const Json& j = *parsed;
    const auto& vb = j["viewBox"];
    REQUIRE(vb.size() == 4);
    w = vb[2].get<double>();
    h = vb[3].get<double>();
    CHECK(vb[0].get<double>() == 0);
    CHECK(vb[1].get<double>() == 0);
    CHECK(j["width"].get<double>() == w);
    CHECK(j["height"].get<double>() == h);
    CHECK(j["transforms"].get<int>() == 0);
    CHECK(j["texts"].size() > 0);
    for (const Json& t : j["texts"]) {
      const std::string text = t["text"].get<std::string>();
      const double size = t["size"].get<double>();
      const auto weight = t["weight"] == "bold" ? present::FontWeight::kBold : present::FontWeight::kRegular;
      const double tw = present::TextWidth(text, size, weight);
      const double x = t["x"].get<double>(), y = t["y"].get<double>();
      const std::string anchor = t["anchor"].get<std::string>();
      const double left = anchor == "middle" ? x - tw / 2 : anchor == "end" ? x - tw : x;
      INFO("text '" << text << "' at (" << x << ", " << y << "), " << anchor << ", size " << size << ", width " << tw
                    << "; viewBox " << w << " x " << h);
      CHECK(left >= 0);
      CHECK(left + tw <= w);
      CHECK(y - present::kAscent * size >= 0);
      CHECK(y + present::kDescent * size <= h);
    }
    for (const Json& legend : j["legends"]) {
      std::set<std::string> fills;
      for (const Json& f : legend) {
        INFO("legend fill " << f.dump());
        REQUIRE(f.is_string());
        CHECK(fills.insert(f.get<std::string>()).second);
      }
    }
  }
  if (!HaveCommand("rsvg-convert")) {
    LMKIT_SKIP_PART("rsvg-convert not found (scripts/setup.sh installs librsvg2-bin): rendering of " << path);
    return;
  }
  const std::string png = path + ".png";
  const RunResult r = RunShell("rsvg-convert -f png -o '" + png + "' '" + path + "'");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  const std::string bytes = ReadAll(png);
  REQUIRE(bytes.size() > 24);
  CHECK(bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  if (w > 0) {  // rsvg-convert renders at the root's width and height, rounded up to whole pixels
    CHECK(BigEndian32(bytes, 16) == static_cast<uint32_t>(std::ceil(w)));
    CHECK(BigEndian32(bytes, 20) == static_cast<uint32_t>(std::ceil(h)));
  }
}

void CheckSvgText(const std::string& svg, const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  WriteAll(path, svg);
  CheckSvgFile(path);
}

}  // namespace lmkit::test
