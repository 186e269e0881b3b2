// The one SVG chart module: text measurement, colours, and the two chart kinds lmkit draws (stacked columns; x-y
// panels with lines, points, histograms and vertical markers). Every area that draws goes through it.
//
// Contract: every function is pure and deterministic (same input, same bytes) and thread-safe. Charts come back as the
// whole SVG document (UTF-8, well-formed XML 1.0: text is escaped, invalid UTF-8 and characters XML forbids become
// U+FFFD). Sizes are SVG user units (CSS px); the root's width/height equal its viewBox. Text is measured, never
// guessed: canvas, margins and legend are sized so that every text element's estimated extent lies inside the viewBox;
// titles wrap (then shorten with an ellipsis past their line limit), legend entries and axis labels shorten with an
// ellipsis (the full text stays in a <title> tooltip). No transforms: every text runs horizontally from its x/y.
//
// Font-metrics estimate: advance widths of DejaVu Sans (regular and bold; from the font's hmtx table, 2048 units per
// em) for ASCII, 1 em for any other code point (DejaVu's widest Latin glyphs are ~1 em; CJK is 1 em), no kerning.
// Charts name "DejaVu Sans" first (what fontconfig resolves "sans-serif" to on Debian, and what rsvg-convert renders
// with there); the usual fallbacks (Arial, Helvetica, Liberation Sans) set ASCII text about 10% narrower.
//
// Colours: SeriesColours(n) gives n distinct data colours for any n: the Okabe-Ito colour-blind-safe set (without
// black) up to 7, else colours spread in hue and lightness in OKLab (Ottosson 2020) and kept inside sRGB; never grey,
// never repeated. Memory maps use semantic colours (Role): reserved and margin are neutral greys, free is a light
// neutral — none of them a data colour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmkit::present {

// ---- text --------------------------------------------------------------------------------------------------------

enum class FontWeight : uint8_t { kRegular, kBold };
inline constexpr const char* kFontFamily = "DejaVu Sans,sans-serif";
// DejaVu Sans ascender and descender (1901 and 483 of 2048 units), as shares of the font size: a text at baseline y
// of size s covers [y - kAscent * s, y + kDescent * s] vertically.
inline constexpr double kAscent = 0.929;
inline constexpr double kDescent = 0.236;

// Estimated advance width of `text` (UTF-8) at font size `size`.
double TextWidth(std::string_view text, double size, FontWeight weight = FontWeight::kRegular);
// `text` when it fits `max_width`, else its longest prefix (whole code points) that fits with "…" appended ("…" alone
// when nothing else fits).
std::string ShortenText(std::string_view text, double max_width, double size, FontWeight weight = FontWeight::kRegular);
// `text` broken into lines of at most `max_width`, at spaces where it can be and inside a word longer than a line; at
// most `max_lines` (>= 1) lines, the last shortened with "…" when text remains. Runs of spaces become one; empty text
// gives no lines.
std::vector<std::string> WrapText(std::string_view text, double max_width, double size, FontWeight weight,
                                  size_t max_lines);
// `text` as XML character data or attribute value: & < > " escaped; invalid UTF-8 and C0 controls other than tab,
// newline and carriage return replaced by U+FFFD.
std::string XmlEscape(std::string_view text);

// ---- colours -----------------------------------------------------------------------------------------------------

// n distinct data colours as "#rrggbb" (see the header comment).
std::vector<std::string> SeriesColours(size_t n);

// What a stacked segment stands for. kData takes a SeriesColours colour; the others have fixed neutral colours.
enum class Role : uint8_t { kData, kReserved, kMargin, kFree };
// The fixed colour of a semantic role ("#rrggbb"); "" for kData.
std::string RoleColour(Role role);

// Perceptual distance of two "#rrggbb" colours: Euclidean distance in OKLab (about 0.02 is just noticeable).
double ColourDistance(std::string_view a, std::string_view b);
// OKLCH chroma of a "#rrggbb" colour (0 for greys).
double ColourChroma(std::string_view colour);

// ---- stacked columns ---------------------------------------------------------------------------------------------

struct StackSeries {
  std::string name;
  Role role = Role::kData;
};

// One column per label, segments stacked bottom-up in series order; the legend lists the series top-down (as the
// stacks read). `values[column][series]`: missing, negative or non-finite values count as 0.
struct StackedColumns {
  std::string title;
  std::vector<std::string> columns;
  std::vector<StackSeries> series;
  std::vector<std::vector<double>> values;
  bool shares = true;  // each column normalised to 100% (axis in %); else absolute values on a linear axis
  std::string unit;    // absolute charts: the values' unit, shown above the axis and in tooltips ("s", "GB")
};
// Segments are <rect data-point="COLUMN"> in one <g class="series" data-series="NAME"> per series, each with a
// "<title>NAME at COLUMN: VALUE</title>" tooltip (VALUE: "40.80%" for shares, else the value and unit).
std::string StackedColumnsSvg(const StackedColumns& chart);

// ---- x-y panels --------------------------------------------------------------------------------------------------

enum class Scale : uint8_t { kLinear, kLog };
struct Axis {
  std::string label;
  Scale scale = Scale::kLinear;
  std::optional<double> min, max;  // default: the data's range (linear axes rounded out to ticks; log to decades)
  bool integer = false;            // linear: ticks at whole numbers only (layers, positions)
};

enum class Mark : uint8_t { kLine, kPoints, kLinePoints, kHistogram };
// kHistogram: `x` holds the y.size() + 1 bin edges and the bins are drawn as a filled outline (a bin at or below the
// axis minimum has no height). Other marks: x[i], y[i] pairs; a non-finite value (or <= 0 on a log axis) breaks a
// line and is not drawn.
struct XYSeries {
  std::string name;
  Mark mark = Mark::kLine;
  std::vector<double> x, y;
};
// A vertical line across the panel at x (a threshold), coloured by name like a series, dashed by its name's order.
struct Marker {
  std::string name;
  double x = 0;
};
struct Panel {
  std::string title;
  std::string note;  // a line (wrapped) under the title, e.g. the markers' values
  Axis x, y;
  std::vector<XYSeries> series;
  std::vector<Marker> markers;
};
// Panels in a grid of `columns` (row by row) under the title and one legend (every distinct series and marker name,
// in order of first appearance; one colour per name across panels). Every panel's plot area is plot_width x
// plot_height.
struct Figure {
  std::string title;
  std::vector<Panel> panels;
  size_t columns = 1;
  double plot_width = 480;
  double plot_height = 200;
};
std::string FigureSvg(const Figure& figure);

}  // namespace lmkit::present
