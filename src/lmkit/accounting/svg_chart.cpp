// The sweep chart: 100%-stacked columns, one per sweep point, one colour per component. Hand-written SVG (no library):
// every element is closed and every text is XML-escaped, so the file is well-formed XML.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lmkit/accounting/report.h"
#include "lmkit/accounting/table.h"

namespace lmkit::accounting {
namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string Num(double v) { return Fixed(v, 1); }

// Colour-blind-safe palette (Okabe & Ito 2008).
const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

}  // namespace

std::string ShareChartSvg(const std::string& title, const std::vector<std::string>& labels,
                          const std::vector<std::string>& series, const std::vector<std::vector<double>>& values) {
  const double bar_w = 60, gap = 30, left = 60, top = 50, plot_h = 300, legend_w = 200;
  const double plot_w = static_cast<double>(labels.size()) * (bar_w + gap) + gap;
  const double width = left + plot_w + legend_w, height = top + plot_h + 60;
  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
       "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<title>" + Esc(title) + "</title>\n";
  s += "<text x=\"" + Num(left) + "\" y=\"24\" font-size=\"15\">" + Esc(title) + "</text>\n";
  // Axis with 0/25/50/75/100% ticks.
  for (int i = 0; i <= 4; ++i) {
    double y = top + plot_h - plot_h * i / 4.0;
    s += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(left + plot_w) + "\" y2=\"" + Num(y) +
         "\" stroke=\"#dddddd\"/>\n";
    s += "<text x=\"" + Num(left - 6) + "\" y=\"" + Num(y + 4) + "\" text-anchor=\"end\">" + std::to_string(25 * i) +
         "%</text>\n";
  }
  std::vector<double> sums(labels.size(), 0.0);
  for (size_t p = 0; p < labels.size(); ++p)
    for (size_t k = 0; k < series.size() && p < values.size() && k < values[p].size(); ++k)
      sums[p] += std::max(0.0, values[p][k]);
  std::vector<double> base(labels.size(), 0.0);
  for (size_t k = 0; k < series.size(); ++k) {
    s += "<g class=\"series\" data-series=\"" + Esc(series[k]) + "\" fill=\"" + kColours[k % 8] + "\">\n";
    for (size_t p = 0; p < labels.size(); ++p) {
      double v = p < values.size() && k < values[p].size() ? std::max(0.0, values[p][k]) : 0.0;
      double frac = sums[p] > 0 ? v / sums[p] : 0.0;
      double x = left + gap + static_cast<double>(p) * (bar_w + gap);
      double h = plot_h * frac;
      double y = top + plot_h - plot_h * base[p] - h;
      base[p] += frac;
      s += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(bar_w) + "\" height=\"" + Num(h) +
           "\" data-point=\"" + Esc(labels[p]) + "\"><title>" +
           Esc(series[k] + " at " + labels[p] + ": " + Percent(frac)) + "</title></rect>\n";
    }
    s += "</g>\n";
  }
  for (size_t p = 0; p < labels.size(); ++p) {
    double x = left + gap + static_cast<double>(p) * (bar_w + gap) + bar_w / 2;
    s += "<text x=\"" + Num(x) + "\" y=\"" + Num(top + plot_h + 18) + "\" text-anchor=\"middle\">" + Esc(labels[p]) +
         "</text>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    double y = top + 16.0 * static_cast<double>(k);
    double x = left + plot_w + 16;
    s += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"10\" height=\"10\" fill=\"" + kColours[k % 8] +
         "\"/>\n";
    s += "<text x=\"" + Num(x + 16) + "\" y=\"" + Num(y + 9) + "\">" + Esc(series[k]) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace lmkit::accounting
