#include "lmkit/present/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "lmkit/common/utf8.h"

namespace lmkit::present {
namespace {

// Advance widths of ASCII 32..126 in 1/2048 em, read from the hmtx tables of DejaVuSans.ttf and DejaVuSans-Bold.ttf
// (fonts-dejavu-core 2.37).
constexpr uint16_t kRegularAdvance[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,  1303, 1303, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577, 1294,
    1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403,
    1251, 1403, 799,  690,  799,  1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186,
    569,  1995, 1298, 1253, 1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};
constexpr uint16_t kBoldAdvance[95] = {
    713,  934,  1067, 1716, 1425, 2052, 1786, 627,  936,  936,  1071, 1716, 778,  850,  778,  748,  1425, 1425, 1425,
    1425, 1425, 1425, 1425, 1425, 1425, 1425, 819,  819,  1716, 1716, 1716, 1188, 2048, 1585, 1561, 1503, 1700, 1399,
    1399, 1681, 1714, 762,  762,  1587, 1305, 2038, 1714, 1741, 1501, 1741, 1577, 1475, 1397, 1663, 1585, 2259, 1579,
    1483, 1485, 936,  748,  936,  1716, 1024, 1024, 1382, 1466, 1214, 1466, 1389, 891,  1466, 1458, 702,  702,  1362,
    702,  2134, 1458, 1407, 1466, 1466, 1010, 1219, 979,  1458, 1335, 1892, 1321, 1335, 1192, 1458, 748,  1458, 1716};
constexpr double kUnitsPerEm = 2048;
constexpr char32_t kReplacement = 0xFFFD;
constexpr const char* kEllipsis = "\xE2\x80\xA6";  // U+2026, 1 em

// The code point at s[i] (advancing i past it); U+FFFD for an ill-formed byte, which then consumes one byte.
char32_t NextCodePoint(std::string_view s, size_t& i) {
  const DecodedChar d = DecodeUtf8At(s, i);
  i += d.len;
  return d.cp == kInvalidCodePoint ? kReplacement : static_cast<char32_t>(d.cp);
}

double Advance(char32_t cp, FontWeight weight) {
  if (cp == '\t' || cp == '\n' || cp == '\r') cp = ' ';
  if (cp >= 32 && cp <= 126) return (weight == FontWeight::kBold ? kBoldAdvance : kRegularAdvance)[cp - 32];
  return kUnitsPerEm;
}

std::string TrimRight(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// ---- colour space (OKLab, Ottosson 2020: https://bottosson.github.io/posts/oklab/) ----

struct Lab {
  double L, a, b;
};

double Decode(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double Encode(double c) { return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055; }

std::array<double, 3> LabToLinearRgb(const Lab& c) {
  const double l_ = c.L + 0.3963377774 * c.a + 0.2158037573 * c.b;
  const double m_ = c.L - 0.1055613458 * c.a - 0.0638541728 * c.b;
  const double s_ = c.L - 0.0894841775 * c.a - 1.2914855480 * c.b;
  const double l = l_ * l_ * l_, m = m_ * m_ * m_, s = s_ * s_ * s_;
  return {4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
          -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
          -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s};
}

Lab HexToLab(std::string_view hex) {
  std::array<double, 3> rgb{0, 0, 0};
  if (hex.size() == 7 && hex[0] == '#')
    for (int k = 0; k < 3; ++k) {
      unsigned v = 0;
      for (size_t d = 1 + 2 * static_cast<size_t>(k); d < 3 + 2 * static_cast<size_t>(k); ++d) {
        const char c = hex[d];
        v = v * 16 + static_cast<unsigned>(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
      }
      rgb[static_cast<size_t>(k)] = Decode(v / 255.0);
    }
  const double l = std::cbrt(0.4122214708 * rgb[0] + 0.5363325363 * rgb[1] + 0.0514459929 * rgb[2]);
  const double m = std::cbrt(0.2119034982 * rgb[0] + 0.6806995451 * rgb[1] + 0.1073969566 * rgb[2]);
  const double s = std::cbrt(0.0883024619 * rgb[0] + 0.2817188376 * rgb[1] + 0.6299787005 * rgb[2]);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

// OKLCH (hue in degrees) to "#rrggbb", lowering the chroma until the colour lies inside sRGB.
std::string LchToHex(double L, double C, double hue_deg) {
  const double h = hue_deg * 3.14159265358979323846 / 180;
  std::array<double, 3> rgb{};
  for (;; C -= 0.002) {
    rgb = LabToLinearRgb({L, C * std::cos(h), C * std::sin(h)});
    if (C <= 0 || std::all_of(rgb.begin(), rgb.end(), [](double v) { return v >= 0 && v <= 1; })) break;
  }
  std::string out = "#";
  for (double v : rgb)
    out += fmt::format("{:02x}", static_cast<int>(std::lround(255 * Encode(std::clamp(v, 0.0, 1.0)))));
  return out;
}

// Okabe & Ito (2008), "Color Universal Design": blue, orange, bluish green, vermillion, reddish purple, sky blue,
// yellow (their black is left out: it reads as an axis or as the neutral roles).
constexpr const char* kOkabeIto[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442"};

// ---- SVG text ----

std::string Num(double v) {
  std::string s = fmt::format("{:.1f}", v);
  return s == "-0.0" ? "0.0" : s;
}

// A value for a tooltip or note: 4 significant digits, no exponent for everyday magnitudes.
std::string Value(double v) {
  if (!std::isfinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
  return fmt::format("{:.4g}", v);
}

struct TextStyle {
  double size = 12;
  FontWeight weight = FontWeight::kRegular;
  const char* anchor = "start";  // start | middle | end
  const char* fill = nullptr;    // default: the document's
};

class SvgWriter {
 public:
  SvgWriter(double width, double height, std::string_view title) {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
            "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\" font-family=\"" + kFontFamily +
            "\" font-size=\"12\" fill=\"#222222\">\n";
    out_ += "<title>" + XmlEscape(title) + "</title>\n";
    out_ += "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
            "\" fill=\"#ffffff\"/>\n";
  }
  void Raw(std::string_view s) { out_ += s; }
  void Text(double x, double y, std::string_view text, const TextStyle& st) {
    out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"";
    if (std::string_view(st.anchor) != "start") out_ += std::string(" text-anchor=\"") + st.anchor + "\"";
    if (st.size != 12) out_ += " font-size=\"" + Num(st.size) + "\"";
    if (st.weight == FontWeight::kBold) out_ += " font-weight=\"bold\"";
    if (st.fill) out_ += std::string(" fill=\"") + st.fill + "\"";
    out_ += ">" + XmlEscape(text) + "</text>\n";
  }
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view extra = "") {
    out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) +
            "\" stroke=\"" + std::string(stroke) + "\" stroke-width=\"" + Num(width) + "\"";
    out_ += extra.empty() ? "/>\n" : std::string(extra) + "\n";
  }
  std::string Finish() {
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  std::string out_;
};

constexpr double kPad = 16;
constexpr double kTitleSize = 15;
constexpr double kTitleLine = 19;
constexpr size_t kTitleLines = 3;
constexpr double kLabelSize = 12;
constexpr double kSmallSize = 11;
constexpr double kSwatch = 11;
constexpr double kLegendRow = 18;
constexpr double kLegendTextMax = 280;  // longer legend entries are shortened

// The title block: lines wrapped to `width`, drawn from y = kPad; returns the y below it.
double DrawTitle(SvgWriter& svg, const std::vector<std::string>& lines) {
  double y = kPad;
  for (const std::string& line : lines) {
    svg.Text(kPad, y + kAscent * kTitleSize, line, {kTitleSize, FontWeight::kBold});
    y += kTitleLine;
  }
  return y;
}

// The canvas width that lets the title take at most two lines (within `max_width`), but never below `width`.
double WidthForTitle(const std::string& title, double width, double max_width) {
  const double need = TextWidth(title, kTitleSize, FontWeight::kBold) + 2 * kPad;
  if (need <= width) return width;
  return std::min(std::max(width, need / 2 + kPad + 40), max_width);
}

// A legend entry: swatch and (shortened) name, with the full name as tooltip.
void LegendEntry(SvgWriter& svg, double x, double y, const std::string& colour, const std::string& name,
                 const std::string& shown) {
  svg.Raw("<g class=\"legend-entry\"><title>" + XmlEscape(name) + "</title>");
  svg.Raw("<rect class=\"swatch\" x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(kSwatch) + "\" height=\"" +
          Num(kSwatch) + "\" fill=\"" + colour + "\" stroke=\"#999999\" stroke-width=\"0.5\"/>\n");
  svg.Text(x + kSwatch + 6, y + kSwatch - 1.5, shown, {kLabelSize});
  svg.Raw("</g>\n");
}

// ---- axes ----

double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

std::string TickLabel(double v, double step, Scale scale) {
  if (scale == Scale::kLog) {
    const int e = static_cast<int>(std::lround(std::log10(v)));
    if (e >= -3 && e <= 5) return fmt::format("{:g}", std::pow(10.0, e));
    return fmt::format("1e{}", e);
  }
  if (std::fabs(v) < step * 1e-6) return "0";
  if (std::fabs(v) >= 1e9 || step < 1e-5) {
    // As many significant digits as the step needs, so neighbouring ticks never print the same.
    const int digits = static_cast<int>(std::floor(std::log10(std::fabs(v))) - std::floor(std::log10(step))) + 1;
    return fmt::format("{:.{}g}", v, std::clamp(digits, 1, 15));
  }
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, decimals);
}

struct AxisLayout {
  Scale scale = Scale::kLinear;
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  std::vector<std::string> labels;
  // Position of v in [0, 1] along the axis (outside for values out of range; log of v <= 0 is -inf).
  double Frac(double v) const {
    if (scale == Scale::kLog) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
};

// Ticks for [data_lo, data_hi] (explicit bounds win) over `pixels`; `spacing(label_width)` is the pixel distance two
// neighbouring labels need, so the step grows until the labels do not collide.
AxisLayout LayoutAxis(const Axis& axis, double data_lo, double data_hi, double pixels, bool horizontal) {
  AxisLayout a;
  a.scale = axis.scale;
  double lo = axis.min.value_or(data_lo), hi = axis.max.value_or(data_hi);
  if (a.scale == Scale::kLog) {
    if (!(lo > 0) || !std::isfinite(lo)) lo = hi > 0 && std::isfinite(hi) ? hi / 10 : 1;
    if (!(hi > 0) || !std::isfinite(hi)) hi = lo * 10;
    if (!axis.min) lo = std::pow(10.0, std::floor(std::log10(lo)));
    if (!axis.max) hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo) hi = lo * 10;
    const int e0 = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
    const int e1 = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    a.lo = lo;
    a.hi = hi;
    for (int stride = 1;; ++stride) {
      a.ticks.clear();
      a.labels.clear();
      double widest = 0;
      for (int e = e0; e <= e1; e += stride) {
        a.ticks.push_back(std::pow(10.0, e));
        a.labels.push_back(TickLabel(a.ticks.back(), 0, Scale::kLog));
        widest = std::max(widest, TextWidth(a.labels.back(), kSmallSize));
      }
      const double decades = std::log10(hi) - std::log10(lo);
      const double gap = pixels * stride / decades;
      if (gap >= (horizontal ? widest + 10 : 16) || a.ticks.size() <= 2) break;
    }
    return a;
  }
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi)) hi = lo + 1;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double d = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    if (!axis.min) lo -= d;
    if (!axis.max) hi += d;
    if (hi == lo) hi = lo + 1;
  }
  for (double target = std::max(2.0, std::floor(pixels / (horizontal ? 80 : 40)));; target = std::floor(target * 0.7)) {
    target = std::max(1.0, target);
    const double step = std::max(axis.integer ? 1.0 : 0.0, NiceStep((hi - lo) / target));
    a.lo = axis.min ? lo : std::floor(lo / step + 1e-9) * step;
    a.hi = axis.max ? hi : std::ceil(hi / step - 1e-9) * step;
    if (a.hi <= a.lo) a.hi = a.lo + step;
    a.ticks.clear();
    a.labels.clear();
    double widest = 0;
    for (double k = std::ceil(a.lo / step - 1e-9); k <= std::floor(a.hi / step + 1e-9); ++k) {
      a.ticks.push_back(k * step);
      a.labels.push_back(TickLabel(k * step, step, Scale::kLinear));
      widest = std::max(widest, TextWidth(a.labels.back(), kSmallSize));
    }
    const double gap = pixels * step / (a.hi - a.lo);
    if (gap >= (horizontal ? widest + 10 : 16) || target <= 1) break;
  }
  return a;
}

// The colour of each distinct series/marker name, in order of first appearance.
struct NamedColours {
  std::map<std::string, std::string> colour;
  std::map<std::string, size_t> marker_order;
};

}  // namespace

// ---- text --------------------------------------------------------------------------------------------------------

double TextWidth(std::string_view text, double size, FontWeight weight) {
  double units = 0;
  for (size_t i = 0; i < text.size();) units += Advance(NextCodePoint(text, i), weight);
  return units / kUnitsPerEm * size;
}

std::string ShortenText(std::string_view text, double max_width, double size, FontWeight weight) {
  if (TextWidth(text, size, weight) <= max_width) return std::string(text);
  const double budget = max_width / size * kUnitsPerEm - kUnitsPerEm;  // the ellipsis is 1 em
  double units = 0;
  size_t i = 0, fit = 0;
  while (i < text.size()) {
    units += Advance(NextCodePoint(text, i), weight);
    if (units > budget) break;
    fit = i;
  }
  return TrimRight(std::string(text.substr(0, fit))) + kEllipsis;
}

std::vector<std::string> WrapText(std::string_view text, double max_width, double size, FontWeight weight,
                                  size_t max_lines) {
  max_lines = std::max<size_t>(1, max_lines);
  std::vector<std::string> lines;
  std::vector<size_t> starts;  // byte offset in `text` where each line's content starts
  std::string line;
  size_t line_start = 0;
  size_t i = 0;
  auto flush = [&] {
    lines.push_back(TrimRight(line));
    starts.push_back(line_start);
    line.clear();
  };
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(i, end - i);
    const std::string candidate = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (TextWidth(candidate, size, weight) <= max_width) {
      if (line.empty()) line_start = i;
      line = candidate;
      i = end;
      continue;
    }
    if (!line.empty()) {
      flush();
      continue;  // the word starts the next line
    }
    // A word longer than a line: as many code points as fit (at least one).
    size_t j = i, fit = i;
    while (j < end) {
      NextCodePoint(text, j);
      if (TextWidth(text.substr(i, j - i), size, weight) > max_width && fit > i) break;
      fit = j;
    }
    line_start = i;
    line = std::string(text.substr(i, fit - i));
    i = fit;
    flush();
  }
  if (!line.empty()) flush();
  if (lines.size() > max_lines) {
    lines.resize(max_lines);
    lines.back() = ShortenText(text.substr(starts[max_lines - 1]), max_width, size, weight);
    // ShortenText may keep the whole remainder only if it fit, which it cannot here; make the cut visible anyway.
    if (lines.back().size() < 3 || lines.back().compare(lines.back().size() - 3, 3, kEllipsis) != 0)
      lines.back() = ShortenText(lines.back() + kEllipsis, max_width, size, weight);
  }
  return lines;
}

std::string XmlEscape(std::string_view text) {
  std::string o;
  o.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t at = i;
    char32_t cp = NextCodePoint(text, i);
    if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') cp = kReplacement;
    if (cp == 0xFFFE || cp == 0xFFFF) cp = kReplacement;
    switch (cp) {
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
      case kReplacement:
        o += "\xEF\xBF\xBD";
        break;
      default:
        o.append(text.substr(at, i - at));
    }
  }
  return o;
}

// ---- colours -----------------------------------------------------------------------------------------------------

std::vector<std::string> SeriesColours(size_t n) {
  std::vector<std::string> out;
  const size_t fixed = std::min(n, std::size(kOkabeIto));
  out.assign(kOkabeIto, kOkabeIto + fixed);
  if (n == fixed) return out;
  // Past Okabe-Ito: farthest-point picks from a grid of chromatic sRGB colours, each new colour the candidate farthest
  // (in OKLab) from every colour taken so far and from the neutral role colours and white. Adding a series keeps the
  // earlier colours; 40 colours stay >= 0.098 apart, 64 >= 0.073 (a hue wheel at three lightness levels gave 0.024 for
  // 40: sRGB's chroma limit at high lightness crowds its blues).
  static const std::vector<std::pair<std::string, Lab>> candidates = [] {
    std::vector<std::pair<std::string, Lab>> c;
    for (int l = 0; l < 10; ++l)
      for (int h = 0; h < 72; ++h)
        for (double chroma : {0.08, 0.12, 0.16, 0.20}) {
          const double L = 0.42 + 0.045 * l, hue = h * 5.0 * 3.14159265358979323846 / 180;
          const auto rgb = LabToLinearRgb({L, chroma * std::cos(hue), chroma * std::sin(hue)});
          if (!std::all_of(rgb.begin(), rgb.end(), [](double v) { return v >= 0 && v <= 1; })) continue;
          std::string hex = LchToHex(L, chroma, h * 5.0);
          c.emplace_back(hex, HexToLab(hex));
        }
    return c;
  }();
  auto dist = [](const Lab& x, const Lab& y) {
    return std::sqrt((x.L - y.L) * (x.L - y.L) + (x.a - y.a) * (x.a - y.a) + (x.b - y.b) * (x.b - y.b));
  };
  std::vector<Lab> taken;
  for (const std::string& c : out) taken.push_back(HexToLab(c));
  for (Role r : {Role::kReserved, Role::kMargin, Role::kFree}) taken.push_back(HexToLab(RoleColour(r)));
  taken.push_back(HexToLab("#ffffff"));
  std::vector<double> nearest(candidates.size(), std::numeric_limits<double>::infinity());
  for (size_t j = 0; j < candidates.size(); ++j)
    for (const Lab& t : taken) nearest[j] = std::min(nearest[j], dist(candidates[j].second, t));
  std::set<std::string> seen(out.begin(), out.end());
  while (out.size() < n) {
    size_t best = 0;
    for (size_t j = 1; j < candidates.size(); ++j)
      if (nearest[j] > nearest[best]) best = j;
    if (!(nearest[best] > 0)) break;  // what is left repeats a colour already taken
    out.push_back(candidates[best].first);
    seen.insert(out.back());
    for (size_t j = 0; j < candidates.size(); ++j)
      nearest[j] = std::min(nearest[j], dist(candidates[j].second, candidates[best].second));
  }
  // Beyond the grid (over 1,700 series) no colour is perceptibly distinct any more; these stay unique and chromatic:
  // hues evenly spaced, lightness cycling through three levels.
  constexpr double kLevels[] = {0.52, 0.68, 0.82};
  for (size_t i = out.size(); i < n; ++i) {
    const double hue = 25 + 360.0 * static_cast<double>(i) / static_cast<double>(n);
    double L = kLevels[i % 3];
    std::string c = LchToHex(L, 0.15, hue);
    // Neighbouring hues round to the same 8-bit colour (or one taken above): nudge the lightness.
    for (int k = 1; seen.count(c); ++k) c = LchToHex(L + (k % 2 ? 1 : -1) * 0.002 * ((k + 1) / 2), 0.15, hue);
    seen.insert(c);
    out.push_back(std::move(c));
  }
  return out;
}

std::string RoleColour(Role role) {
  switch (role) {
    case Role::kReserved:
      return "#6e6e6e";
    case Role::kMargin:
      return "#b4b4b4";
    case Role::kFree:
      return "#ececec";
    case Role::kData:
      break;
  }
  return "";
}

double ColourDistance(std::string_view a, std::string_view b) {
  const Lab x = HexToLab(a), y = HexToLab(b);
  return std::sqrt((x.L - y.L) * (x.L - y.L) + (x.a - y.a) * (x.a - y.a) + (x.b - y.b) * (x.b - y.b));
}

double ColourChroma(std::string_view colour) {
  const Lab c = HexToLab(colour);
  return std::sqrt(c.a * c.a + c.b * c.b);
}

// ---- stacked columns ---------------------------------------------------------------------------------------------

std::string StackedColumnsSvg(const StackedColumns& c) {
  const size_t n = c.columns.size(), k = c.series.size();
  auto value = [&](size_t col, size_t s) {
    const double v = col < c.values.size() && s < c.values[col].size() ? c.values[col][s] : 0.0;
    return std::isfinite(v) && v > 0 ? v : 0.0;
  };
  std::vector<double> sums(n, 0.0);
  double top = 0;
  for (size_t col = 0; col < n; ++col) {
    for (size_t s = 0; s < k; ++s) sums[col] += value(col, s);
    top = std::max(top, sums[col]);
  }
  // Colours: data series take SeriesColours in order, the semantic roles their own.
  size_t data_count = 0;
  for (const StackSeries& s : c.series) data_count += s.role == Role::kData;
  const std::vector<std::string> palette = SeriesColours(data_count);
  std::vector<std::string> colours;
  for (size_t s = 0, d = 0; s < k; ++s)
    colours.push_back(c.series[s].role == Role::kData ? palette[d++] : RoleColour(c.series[s].role));

  // Vertical axis.
  const double plot_h = 300;
  AxisLayout y;
  if (c.shares) {
    for (int i = 0; i <= 4; ++i) {
      y.ticks.push_back(25.0 * i);
      y.labels.push_back(std::to_string(25 * i) + "%");
    }
    y.lo = 0;
    y.hi = 100;
  } else {
    y = LayoutAxis(Axis{"", Scale::kLinear, 0.0, std::nullopt}, 0, top > 0 ? top : 1, plot_h, false);
  }
  double tick_w = 0;
  for (const std::string& l : y.labels) tick_w = std::max(tick_w, TextWidth(l, kLabelSize));
  const std::string unit_label = c.shares ? "" : ShortenText(c.unit, 300, kSmallSize);

  // Columns: a few wide ones with whole labels, or many narrow ones with every stride-th label.
  double label_w = 0;
  for (const std::string& l : c.columns) label_w = std::max(label_w, TextWidth(l, kLabelSize));
  label_w = std::min(label_w, 160.0);
  double pitch, bar_w;
  size_t stride = 1;
  if (n <= 24) {
    pitch = std::max(84.0, label_w + 12);
    bar_w = std::min(60.0, pitch - 24);
  } else {
    pitch = std::clamp(720.0 / static_cast<double>(n), 3.0, 24.0);
    bar_w = std::max(2.0, pitch * 0.75);
    stride = static_cast<size_t>(std::ceil((label_w + 10) / pitch));
  }
  const double label_room = static_cast<double>(stride) * pitch - 8;
  const double plot_w = std::max(1.0, static_cast<double>(n)) * pitch;
  // The labels drawn (every stride-th), shortened to their room and centred on their columns: the first and last may
  // reach past the plot's edges, and the margins take that up.
  std::vector<std::string> drawn(n);
  double reach_left = 0, reach_right = 0;
  for (size_t col = 0; col < n; col += stride) {
    drawn[col] = ShortenText(c.columns[col], label_room, kLabelSize);
    const double half = TextWidth(drawn[col], kLabelSize) / 2, centre = pitch * (static_cast<double>(col) + 0.5);
    reach_left = std::max(reach_left, half - centre);
    reach_right = std::max(reach_right, centre + half - plot_w);
  }
  const double plot_left = kPad + std::max({tick_w + 8, TextWidth(unit_label, kSmallSize) / 2, reach_left});

  // Legend on the right, listed top-down as the stacks read.
  std::vector<std::string> shown(k);
  double legend_text_w = 0;
  for (size_t s = 0; s < k; ++s) {
    shown[s] = ShortenText(c.series[s].name, kLegendTextMax, kLabelSize);
    legend_text_w = std::max(legend_text_w, TextWidth(shown[s], kLabelSize));
  }
  const double legend_x = plot_left + plot_w + 24;
  double width = k ? legend_x + kSwatch + 6 + legend_text_w + kPad : plot_left + plot_w + kPad;
  width = std::max(width, plot_left + plot_w + reach_right + kPad);
  width = std::max(width, 360.0);
  width = WidthForTitle(c.title, width, std::max(width, 720.0));
  const auto title = WrapText(c.title, width - 2 * kPad, kTitleSize, FontWeight::kBold, kTitleLines);

  const double header = kPad + kTitleLine * static_cast<double>(title.size()) + (unit_label.empty() ? 14 : 32);
  const double plot_top = header;
  const double plot_bottom = plot_top + plot_h;
  const double legend_bottom = plot_top + kLegendRow * static_cast<double>(k);
  const double height = std::max(plot_bottom + 26, legend_bottom) + kPad;

  SvgWriter svg(width, height, c.title);
  DrawTitle(svg, title);
  if (!unit_label.empty())
    svg.Text(plot_left, plot_top - 12, unit_label, {kSmallSize, FontWeight::kRegular, "middle", "#555555"});
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = plot_bottom - plot_h * y.Frac(y.ticks[i]);
    svg.Line(plot_left, py, plot_left + plot_w, py, "#dddddd");
    svg.Text(plot_left - 6, py + 4, y.labels[i], {kLabelSize, FontWeight::kRegular, "end"});
  }
  std::vector<double> base(n, 0.0);
  for (size_t s = 0; s < k; ++s) {
    svg.Raw("<g class=\"series\" data-series=\"" + XmlEscape(c.series[s].name) + "\" fill=\"" + colours[s] +
            "\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n");
    for (size_t col = 0; col < n; ++col) {
      const double v = value(col, s);
      const double shown_v = c.shares ? (sums[col] > 0 ? 100 * v / sums[col] : 0) : v;
      const double x = plot_left + pitch * static_cast<double>(col) + (pitch - bar_w) / 2;
      const double h = plot_h * (y.Frac(base[col] + shown_v) - y.Frac(base[col]));
      const double py = plot_bottom - plot_h * y.Frac(base[col] + shown_v);
      base[col] += shown_v;
      const std::string what =
          c.shares ? fmt::format("{:.2f}%", shown_v) : Value(v) + (c.unit.empty() ? "" : " " + c.unit);
      svg.Raw("<rect x=\"" + Num(x) + "\" y=\"" + Num(py) + "\" width=\"" + Num(bar_w) + "\" height=\"" + Num(h) +
              "\" data-point=\"" + XmlEscape(c.columns[col]) + "\"><title>" +
              XmlEscape(c.series[s].name + " at " + c.columns[col] + ": " + what) + "</title></rect>\n");
    }
    svg.Raw("</g>\n");
  }
  svg.Line(plot_left, plot_bottom, plot_left + plot_w, plot_bottom, "#888888");
  for (size_t col = 0; col < n; col += stride)
    svg.Text(plot_left + pitch * (static_cast<double>(col) + 0.5), plot_bottom + 18, drawn[col],
             {kLabelSize, FontWeight::kRegular, "middle"});
  svg.Raw("<g class=\"legend\">\n");
  for (size_t r = 0; r < k; ++r) {
    const size_t s = k - 1 - r;
    LegendEntry(svg, legend_x, plot_top + kLegendRow * static_cast<double>(r), colours[s], c.series[s].name, shown[s]);
  }
  svg.Raw("</g>\n");
  return svg.Finish();
}

// ---- x-y panels --------------------------------------------------------------------------------------------------

std::string FigureSvg(const Figure& f) {
  // One colour per distinct name, series first-seen order across panels; markers get a dash pattern each.
  NamedColours nc;
  std::vector<std::string> names;
  for (const Panel& p : f.panels) {
    for (const XYSeries& s : p.series)
      if (!nc.colour.count(s.name)) {
        nc.colour[s.name];
        names.push_back(s.name);
      }
    for (const Marker& m : p.markers)
      if (!nc.colour.count(m.name)) {
        nc.colour[m.name];
        nc.marker_order[m.name] = nc.marker_order.size();
        names.push_back(m.name);
      }
  }
  const std::vector<std::string> palette = SeriesColours(names.size());
  for (size_t i = 0; i < names.size(); ++i) nc.colour[names[i]] = palette[i];
  static const char* kDashes[] = {"", "7 3", "2 2", "9 3 2 3", "4 4"};

  const double pw = std::max(60.0, f.plot_width), ph = std::max(40.0, f.plot_height);
  const size_t cols = std::max<size_t>(1, std::min(f.columns, std::max<size_t>(1, f.panels.size())));
  const size_t rows = (f.panels.size() + cols - 1) / cols;

  // Per panel: the axes (their tick labels decide the left margin) and the header lines.
  struct Laid {
    AxisLayout x, y;
    std::vector<std::string> title, note;
    std::string y_label, x_label;
  };
  std::vector<Laid> laid(f.panels.size());
  double margin_left = 0, margin_right = 8, header_h = 0;
  for (size_t p = 0; p < f.panels.size(); ++p) {
    const Panel& panel = f.panels[p];
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
    auto take_y = [&](double v) {
      if (!std::isfinite(v) || (panel.y.scale == Scale::kLog && v <= 0)) return;
      ylo = std::min(ylo, v);
      yhi = std::max(yhi, v);
    };
    auto take_x = [&](double v) {
      if (!std::isfinite(v) || (panel.x.scale == Scale::kLog && v <= 0)) return;
      xlo = std::min(xlo, v);
      xhi = std::max(xhi, v);
    };
    for (const XYSeries& s : panel.series) {
      for (double v : s.x) take_x(v);
      for (double v : s.y) take_y(v);
      if (s.mark == Mark::kHistogram && panel.y.scale == Scale::kLinear) take_y(0);
    }
    for (const Marker& m : panel.markers) take_x(m.x);
    if (xlo > xhi) xlo = xhi = 0;
    if (ylo > yhi) ylo = yhi = 0;
    Laid& l = laid[p];
    l.x = LayoutAxis(panel.x, xlo, xhi, pw, true);
    l.y = LayoutAxis(panel.y, ylo, yhi, ph, false);
    for (const std::string& s : l.y.labels) margin_left = std::max(margin_left, TextWidth(s, kSmallSize) + 8);
    // The end ticks' labels are centred on the plot's edges.
    if (!l.x.labels.empty()) {
      margin_left = std::max(margin_left, TextWidth(l.x.labels.front(), kSmallSize) / 2 + 4);
      margin_right = std::max(margin_right, TextWidth(l.x.labels.back(), kSmallSize) / 2 + 4);
    }
    l.title = WrapText(panel.title, pw, 13, FontWeight::kBold, 2);
    l.note = WrapText(panel.note, pw, kSmallSize, FontWeight::kRegular, 3);
    l.y_label = ShortenText(panel.y.label, pw, kSmallSize);
    l.x_label = ShortenText(panel.x.label, pw, kSmallSize);
    const double h = 16.0 * static_cast<double>(l.title.size()) + 14.0 * static_cast<double>(l.note.size()) +
                     (l.y_label.empty() ? 0 : 16) + 10;
    header_h = std::max(header_h, h);
  }
  margin_left = std::max(margin_left, 24.0);
  const double cell_w = margin_left + pw + margin_right, gap = 28;
  const double footer_h = 36;
  const double cell_h = header_h + ph + footer_h;
  double width = 2 * kPad + static_cast<double>(cols) * cell_w + static_cast<double>(cols - 1) * gap;
  width = std::max(width, 360.0);
  width = WidthForTitle(f.title, width, std::max(width, 720.0));
  const auto title = WrapText(f.title, width - 2 * kPad, kTitleSize, FontWeight::kBold, kTitleLines);

  // Legend: entries flow left to right, wrapping at the canvas width.
  struct Entry {
    std::string name, shown;
    double x, y;
  };
  std::vector<Entry> entries;
  double ly = kPad + kTitleLine * static_cast<double>(title.size()) + 6, lx = kPad;
  const double legend_max = std::min(kLegendTextMax, width - 2 * kPad - kSwatch - 6);
  for (const std::string& name : names) {
    if (name.empty()) continue;
    const std::string shown = ShortenText(name, legend_max, kLabelSize);
    const double w = kSwatch + 6 + TextWidth(shown, kLabelSize);
    if (lx > kPad && lx + w > width - kPad) {
      lx = kPad;
      ly += kLegendRow;
    }
    entries.push_back({name, shown, lx, ly});
    lx += w + 20;
  }
  const double grid_top = ly + (entries.empty() ? 0 : kLegendRow) + 6;
  const double height =
      grid_top + static_cast<double>(rows) * cell_h + static_cast<double>(rows ? rows - 1 : 0) * 12 + kPad;

  SvgWriter svg(width, height, f.title);
  DrawTitle(svg, title);
  svg.Raw("<g class=\"legend\">\n");
  for (const Entry& e : entries) LegendEntry(svg, e.x, e.y, nc.colour[e.name], e.name, e.shown);
  svg.Raw("</g>\n");

  for (size_t p = 0; p < f.panels.size(); ++p) {
    const Panel& panel = f.panels[p];
    const Laid& l = laid[p];
    const double cx = kPad + static_cast<double>(p % cols) * (cell_w + gap);
    const double cy = grid_top + static_cast<double>(p / cols) * (cell_h + 12);
    const double left = cx + margin_left, top = cy + header_h, bottom = top + ph, right = left + pw;
    svg.Raw("<g class=\"panel\">\n");
    double ty = cy;
    for (const std::string& line : l.title) {
      svg.Text(left, ty + kAscent * 13, line, {13, FontWeight::kBold});
      ty += 16;
    }
    for (const std::string& line : l.note) {
      svg.Text(left, ty + kAscent * kSmallSize, line, {kSmallSize, FontWeight::kRegular, "start", "#444444"});
      ty += 14;
    }
    if (!l.y_label.empty()) svg.Text(left, top - 6, l.y_label, {kSmallSize, FontWeight::kRegular, "start", "#555555"});
    auto X = [&](double v) { return left + pw * std::clamp(l.x.Frac(v), 0.0, 1.0); };
    auto Y = [&](double v) { return bottom - ph * std::clamp(l.y.Frac(v), 0.0, 1.0); };
    auto drawable_y = [&](double v) { return std::isfinite(v) && (l.y.scale == Scale::kLinear || v > 0); };
    auto drawable_x = [&](double v) { return std::isfinite(v) && (l.x.scale == Scale::kLinear || v > 0); };
    for (size_t i = 0; i < l.y.ticks.size(); ++i) {
      const double py = Y(l.y.ticks[i]);
      svg.Line(left, py, right, py, "#e4e4e4");
      svg.Text(left - 5, py + 4, l.y.labels[i], {kSmallSize, FontWeight::kRegular, "end"});
    }
    for (size_t i = 0; i < l.x.ticks.size(); ++i) {
      const double px = X(l.x.ticks[i]);
      svg.Line(px, bottom, px, bottom + 4, "#888888");
      svg.Text(px, bottom + 16, l.x.labels[i], {kSmallSize, FontWeight::kRegular, "middle"});
    }
    if (!l.x_label.empty())
      svg.Text(left + pw / 2, bottom + 31, l.x_label, {kSmallSize, FontWeight::kRegular, "middle", "#555555"});
    for (const XYSeries& s : panel.series) {
      const std::string& colour = nc.colour[s.name];
      svg.Raw("<g class=\"series\" data-series=\"" + XmlEscape(s.name) + "\">\n");
      if (s.mark == Mark::kHistogram) {
        // The outline of the bars, left to right along the baseline; runs of equal height become one segment.
        std::vector<std::pair<double, double>> pts;
        for (size_t i = 0; i + 1 < s.x.size() && i < s.y.size(); ++i) {
          if (!drawable_x(s.x[i]) || !drawable_x(s.x[i + 1])) continue;
          const double py = drawable_y(s.y[i]) && l.y.Frac(s.y[i]) > 0 ? Y(s.y[i]) : bottom;
          if (pts.empty()) pts.emplace_back(X(s.x[i]), bottom);
          pts.emplace_back(X(s.x[i]), py);
          pts.emplace_back(X(s.x[i + 1]), py);
        }
        if (!pts.empty()) pts.emplace_back(pts.back().first, bottom);
        std::string d;
        for (size_t i = 0; i < pts.size(); ++i) {
          if (i > 0 && i + 1 < pts.size() && pts[i - 1].second == pts[i].second && pts[i + 1].second == pts[i].second)
            continue;
          d += (d.empty() ? "M" : " L") + Num(pts[i].first) + " " + Num(pts[i].second);
        }
        if (!d.empty()) d += " Z";
        if (!d.empty())
          svg.Raw("<path d=\"" + d + "\" fill=\"" + colour + "\" fill-opacity=\"0.55\" stroke=\"" + colour +
                  "\" stroke-width=\"0.8\"/>\n");
      } else {
        if (s.mark != Mark::kPoints) {
          std::string d;
          bool open = false;
          for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            if (!drawable_x(s.x[i]) || !drawable_y(s.y[i])) {
              open = false;
              continue;
            }
            d += (open ? " L" : (d.empty() ? "M" : " M")) + Num(X(s.x[i])) + " " + Num(Y(s.y[i]));
            open = true;
          }
          if (!d.empty())
            svg.Raw("<path d=\"" + d + "\" fill=\"none\" stroke=\"" + colour +
                    "\" stroke-width=\"1.6\" stroke-linejoin=\"round\"/>\n");
        }
        if (s.mark != Mark::kLine)
          for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
            if (drawable_x(s.x[i]) && drawable_y(s.y[i]))
              svg.Raw("<circle cx=\"" + Num(X(s.x[i])) + "\" cy=\"" + Num(Y(s.y[i])) + "\" r=\"2.6\" fill=\"" + colour +
                      "\"><title>" + XmlEscape(s.name + ": " + Value(s.x[i]) + ", " + Value(s.y[i])) +
                      "</title></circle>\n");
      }
      svg.Raw("</g>\n");
    }
    for (const Marker& m : panel.markers) {
      if (!drawable_x(m.x)) continue;
      const double px = X(m.x);
      const char* dash = kDashes[nc.marker_order[m.name] % std::size(kDashes)];
      svg.Line(px, top, px, bottom, nc.colour[m.name], 1.8,
               std::string(*dash ? " stroke-dasharray=\"" + std::string(dash) + "\"" : "") + "><title>" +
                   XmlEscape(m.name + ": " + Value(m.x)) + "</title></line>");
    }
    svg.Line(left, bottom, right, bottom, "#888888");
    svg.Line(left, top, left, bottom, "#888888");
    svg.Raw("</g>\n");
  }
  return svg.Finish();
}

}  // namespace lmkit::present
