// The chart module: font-metrics estimate against DejaVu Sans advance widths, shortening and wrapping, XML escaping,
// palette distinctness for any count, and the charts' layout on hostile inputs (long names, many series, many
// columns, odd characters, empty and non-finite data), each checked by a real XML parser and rsvg-convert.
#include "lmkit/present/chart.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <set>

#include "support/svg_check.h"

using namespace lmkit;
using namespace lmkit::present;
using lmkit::test::CheckSvgText;
using lmkit::test::CountOf;
using lmkit::test::TempDir;

namespace {

bool EndsWithEllipsis(const std::string& s) { return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xE2\x80\xA6") == 0; }

}  // namespace

TEST_CASE("chart: text widths are DejaVu Sans advance widths", "[present][chart]") {
  // hmtx of DejaVuSans.ttf: H 1540, e 1260, l 569, o 1253 (2048 units per em); bold: H 1714, i 702.
  CHECK(TextWidth("Hello", 12) == Approx((1540 + 1260 + 569 + 569 + 1253) / 2048.0 * 12));
  CHECK(TextWidth("Hi", 10, FontWeight::kBold) == Approx((1714 + 702) / 2048.0 * 10));
  CHECK(TextWidth("", 12) == 0);
  // Any other code point is 1 em: "é" (2 bytes) and "…" (3 bytes) alike; an invalid byte is one U+FFFD.
  CHECK(TextWidth("\xC3\xA9", 12) == Approx(12));
  CHECK(TextWidth("\xE2\x80\xA6", 10) == Approx(10));
  CHECK(TextWidth("\xFF", 10) == Approx(10));
  CHECK(TextWidth("a\xC3", 10) == Approx(1255 / 2048.0 * 10 + 10));  // truncated sequence
  // Widths add up and scale with the size.
  CHECK(TextWidth("GPU memory", 15) == Approx(TextWidth("GPU ", 15) + TextWidth("memory", 15)));
  CHECK(TextWidth("GPU memory", 30) == Approx(2 * TextWidth("GPU memory", 15)));
}

TEST_CASE("chart: ShortenText keeps what fits and marks the cut", "[present][chart]") {
  CHECK(ShortenText("free", 100, 12) == "free");
  const std::string name = "reserved (context, workspaces)";
  for (double max : {20.0, 60.0, 100.0, 150.0}) {
    const std::string s = ShortenText(name, max, 12);
    INFO(max << " -> " << s);
    CHECK(EndsWithEllipsis(s));
    CHECK(TextWidth(s, 12) <= max);
    CHECK(name.compare(0, s.size() - 3, s.substr(0, s.size() - 3)) == 0);  // a prefix of the original
  }
  CHECK(ShortenText(name, 1, 12) == "\xE2\x80\xA6");
  // Multi-byte characters are never split.
  const std::string s = ShortenText("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 30, 10);
  CHECK(s == "\xC3\xA9\xC3\xA9\xE2\x80\xA6");
}

TEST_CASE("chart: WrapText breaks at spaces, splits long words and limits lines", "[present][chart]") {
  const std::string title = "GPU memory map: 2 x H100-SXM5-80GB (80.00 GB each; share of capacity)";
  const auto lines = WrapText(title, 200, 15, FontWeight::kBold, 5);
  REQUIRE(lines.size() >= 2);
  std::string joined;
  for (const auto& l : lines) {
    CHECK(TextWidth(l, 15, FontWeight::kBold) <= 200);
    joined += (joined.empty() ? "" : " ") + l;
  }
  CHECK(joined == title);
  // One line too few: the last line says that text is missing.
  const auto cut = WrapText(title, 200, 15, FontWeight::kBold, lines.size() - 1);
  REQUIRE(cut.size() == lines.size() - 1);
  CHECK(EndsWithEllipsis(cut.back()));
  CHECK(TextWidth(cut.back(), 15, FontWeight::kBold) <= 200);
  // A word longer than a line is split inside.
  const std::string word(60, 'x');
  const auto parts = WrapText(word, 100, 12, FontWeight::kRegular, 10);
  CHECK(parts.size() > 1);
  std::string rejoined;
  for (const auto& p : parts) {
    CHECK(TextWidth(p, 12) <= 100);
    rejoined += p;
  }
  CHECK(rejoined == word);
  CHECK(WrapText("", 100, 12, FontWeight::kRegular, 3).empty());
  CHECK(WrapText("   ", 100, 12, FontWeight::kRegular, 3).empty());
  CHECK(WrapText(" a  b ", 100, 12, FontWeight::kRegular, 3) == std::vector<std::string>{"a b"});
}

TEST_CASE("chart: XmlEscape escapes markup and replaces what XML forbids", "[present][chart]") {
  CHECK(XmlEscape("a<b>&\"c\"") == "a&lt;b&gt;&amp;&quot;c&quot;");
  CHECK(XmlEscape("tab\tok") == "tab\tok");
  CHECK(XmlEscape("x\x01y") == "x\xEF\xBF\xBDy");
  CHECK(XmlEscape("\xC3\xA9") == "\xC3\xA9");                                  // valid UTF-8 kept
  CHECK(XmlEscape("\xC3") == "\xEF\xBF\xBD");                                  // truncated
  CHECK(XmlEscape("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/', one U+FFFD per byte
  CHECK(XmlEscape("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  CHECK(XmlEscape("\xEF\xBF\xBF") == "\xEF\xBF\xBD");                          // U+FFFF is not an XML character
  // A lead byte above 0xF4 starts no sequence (the chart's own decoder once read F8 80 80 as U+8000).
  CHECK(XmlEscape("\xF8\x80\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("chart: series colours are distinct, chromatic and never a role colour, for any count", "[present][chart]") {
  CHECK(SeriesColours(0).empty());
  CHECK(SeriesColours(3) == std::vector<std::string>{"#0072b2", "#e69f00", "#009e73"});  // Okabe-Ito
  // More series keep the earlier colours.
  const auto nine = SeriesColours(9), forty = SeriesColours(40);
  CHECK(std::vector<std::string>(forty.begin(), forty.begin() + 9) == nine);
  const std::vector<std::string> roles = {RoleColour(Role::kReserved), RoleColour(Role::kMargin),
                                          RoleColour(Role::kFree)};
  CHECK(RoleColour(Role::kData).empty());
  CHECK(ColourChroma(RoleColour(Role::kFree)) < 0.001);              // neutral
  CHECK(ColourDistance(RoleColour(Role::kFree), "#ffffff") > 0.05);  // but visible on white
  for (size_t n : {1, 2, 7, 8, 9, 12, 16, 24, 40, 64, 100, 300}) {
    const auto c = SeriesColours(n);
    REQUIRE(c.size() == n);
    std::set<std::string> unique(c.begin(), c.end());
    CHECK(unique.size() == n);
    double closest = 1e9, least_chroma = 1e9, nearest_role = 1e9, neighbours = 1e9;
    for (size_t i = 0; i < n; ++i) {
      least_chroma = std::min(least_chroma, ColourChroma(c[i]));
      for (const auto& r : roles) nearest_role = std::min(nearest_role, ColourDistance(c[i], r));
      if (i + 1 < n) neighbours = std::min(neighbours, ColourDistance(c[i], c[i + 1]));
      for (size_t j = i + 1; j < n; ++j) closest = std::min(closest, ColourDistance(c[i], c[j]));
    }
    INFO(n << " colours: closest pair " << closest << ", least chroma " << least_chroma << ", nearest role colour "
           << nearest_role << ", closest neighbours " << neighbours);
    CHECK(least_chroma > 0.05);
    CHECK(nearest_role > 0.05);
    // Any two colours are clearly apart up to several dozen series, and neighbours in a stack further (0.02 is a
    // just-noticeable difference in OKLab).
    if (n <= 40) CHECK(closest > 0.09);
    if (n <= 64) CHECK(closest > 0.07);
    if (n <= 64) CHECK(neighbours > 0.1);
  }
  const auto many = SeriesColours(3000);
  CHECK(std::set<std::string>(many.begin(), many.end()).size() == 3000);
}

TEST_CASE("chart: stacked columns fit their text for long, many and odd inputs", "[present][chart]") {
  TempDir dir;
  StackedColumns c;
  c.title = "GPU memory map: 2 x H100-SXM5-80GB (80.00 GB each; share of capacity)";
  c.columns = {"GPU 0", "GPU 1"};
  c.series = {{"reserved (context, workspaces)", Role::kReserved},
              {"chat"},
              {"support#1"},
              {"ranker"},
              {"embed"},
              {"code"},
              {"support#2"},
              {"fragmentation margin", Role::kMargin},
              {"free", Role::kFree}};
  c.values = {{1, 40, 20, 3, 2, 0, 0, 5, 29}, {1, 0, 0, 0, 0, 45, 28, 5, 21}};
  const std::string svg = StackedColumnsSvg(c);
  CHECK(svg == StackedColumnsSvg(c));  // deterministic
  CheckSvgText(svg, dir, "map.svg");
  CHECK(CountOf(svg, "fill=\"" + RoleColour(Role::kFree) + "\"") == 2);  // the series group and its legend swatch
  CHECK(CountOf(svg, "fill=\"" + RoleColour(Role::kReserved) + "\"") == 2);
  CHECK(svg.find("<title>chat at GPU 0: 40.00%</title>") != std::string::npos);
  CHECK(svg.find("<title>" + c.title + "</title>") != std::string::npos);

  // Many series with long names, many columns with long labels, a huge title, markup and bad bytes in names.
  StackedColumns big;
  big.title = std::string(40, 'T') + " " + std::string(300, 'x') + " <&> \xFF end";
  for (int i = 0; i < 60; ++i) big.columns.push_back("column with a long label number " + std::to_string(i));
  for (int i = 0; i < 45; ++i)
    big.series.push_back({"series \"" + std::to_string(i) + "\" with a rather long name that goes on & on & on"});
  for (int i = 0; i < 60; ++i) {
    std::vector<double> row;
    for (int s = 0; s < 45; ++s) row.push_back((i * 7 + s * 3) % 11);
    big.values.push_back(row);
  }
  big.values[3][4] = std::numeric_limits<double>::quiet_NaN();
  big.values[5][0] = -4;
  CheckSvgText(StackedColumnsSvg(big), dir, "big.svg");

  // Absolute values with a unit; a column of zeros; no columns; no series.
  StackedColumns abs;
  abs.title = "Per-step time";
  abs.shares = false;
  abs.unit = "seconds";
  abs.columns = {"1", "2", "3"};
  abs.series = {{"wait"}, {"compute"}};
  abs.values = {{0.2, 1.1}, {0, 0}, {1.5, 0.9}};
  const std::string a = StackedColumnsSvg(abs);
  CheckSvgText(a, dir, "abs.svg");
  CHECK(a.find("<title>wait at 3: 1.5 seconds</title>") != std::string::npos);
  CheckSvgText(StackedColumnsSvg(StackedColumns{"empty", {}, {}, {}, true, ""}), dir, "empty.svg");
  CheckSvgText(StackedColumnsSvg(StackedColumns{"no series", {"a"}, {}, {}, true, ""}), dir, "noseries.svg");
}

TEST_CASE("chart: figures fit their text for histograms, markers, log axes and bad values", "[present][chart]") {
  TempDir dir;
  Figure f;
  f.title = "Activation |x| histograms and the thresholds of four calibration methods";
  f.columns = 2;
  for (int p = 0; p < 3; ++p) {
    Panel panel;
    panel.title = "model.layers." + std::to_string(p) + ".self_attn.q_proj with a long name to wrap over lines";
    panel.note = "minmax 61.2 · percentile 99.99: 11.6 · entropy 9.87 · mse 10.1";
    panel.x = {"|x|", Scale::kLinear, 0.0, std::nullopt};
    panel.y = {"count", Scale::kLog, 0.5, std::nullopt};
    XYSeries h{"|x| histogram", Mark::kHistogram, {}, {}};
    for (int i = 0; i <= 256; ++i) h.x.push_back(61.2 * i / 256);
    for (int i = 0; i < 256; ++i) h.y.push_back(i < 60 ? std::floor(1e5 * std::exp(-i / 6.0)) : (i % 50 == 0 ? 1 : 0));
    panel.series.push_back(h);
    panel.markers = {{"minmax", 61.2}, {"percentile", 11.6}, {"entropy", 9.87}, {"mse", 10.1}};
    f.panels.push_back(panel);
  }
  const std::string svg = FigureSvg(f);
  CHECK(svg == FigureSvg(f));
  CheckSvgText(svg, dir, "hist.svg");
  CHECK(CountOf(svg, "class=\"legend-entry\"") == 5);  // one entry per name, not per panel
  CHECK(CountOf(svg, "<line ") >= 12);
  CHECK(svg.find("<title>entropy: 9.87</title>") != std::string::npos);

  // Lines and points with NaN, inf, zeros on a log axis, a single point, markers outside the data, empty panels.
  Figure g;
  g.title = "Lines";
  Panel lines;
  lines.title = "KL by position";
  lines.x = {"position", Scale::kLinear, std::nullopt, std::nullopt};
  lines.y = {"KL (nats)", Scale::kLog, std::nullopt, std::nullopt};
  lines.series.push_back({"mean", Mark::kLine, {1, 2, 3, 4, 5}, {1e-5, 0, 3e-3, std::nan(""), 2e-1}});
  lines.series.push_back({"max", Mark::kLinePoints, {1, 2, 3, 4, 5}, {1e-4, 1, INFINITY, 5e-3, 1e-2}});
  lines.markers = {{"far", 1e9}};
  g.panels.push_back(lines);
  Panel one;
  one.series.push_back({"single", Mark::kPoints, {7}, {7}});
  g.panels.push_back(one);
  g.panels.push_back(Panel{});
  Panel neg;
  neg.x = {"", Scale::kLog, std::nullopt, std::nullopt};
  neg.series.push_back({"negative", Mark::kLine, {-1, 0, 1e-12, 1e12}, {-5e6, 3e6, 0, 1}});
  g.panels.push_back(neg);
  CheckSvgText(FigureSvg(g), dir, "lines.svg");
  // X tick labels far wider than the y ones: the first, centred on the plot's left edge, needs the margin.
  Figure wide;
  wide.title = "Wide x labels";
  wide.panels.push_back(Panel{});
  wide.panels[0].series.push_back({"wide", Mark::kLine, {123456789012.0, 123456789013.0}, {0, 1}});
  const std::string w = FigureSvg(wide);
  CheckSvgText(w, dir, "wide.svg");
  CHECK(w.find(">123456789012.5</text>") != std::string::npos);  // enough digits to tell the ticks apart
  Figure nothing;
  nothing.title = "nothing";
  CheckSvgText(FigureSvg(nothing), dir, "nothing.svg");
}
