// The checks every SVG that lmkit writes must pass, shared by the chart tests (unit and CLI).
#pragma once

#include <string>

#include "support/run_lmkit.h"

namespace lmkit::test {

// Catch checks on the SVG file at `path`: it parses as XML (tests/scripts/check_svg.py: Python's xml.etree); the
// root's viewBox starts at 0 0 and equals its width and height; no element has a transform; every text element's
// estimated extent (present::TextWidth with kAscent/kDescent) lies inside the viewBox; no two swatches of one legend
// share a fill; and rsvg-convert renders it to a PNG of the SVG's size (the PNG is left next to the SVG as
// <path>.png). A check whose tool is missing (python3, rsvg-convert: scripts/setup.sh installs both) is reported as
// skipped (support/skip.h).
void CheckSvgFile(const std::string& path);
// Writes `svg` to dir/name, then CheckSvgFile.
void CheckSvgText(const std::string& svg, const TempDir& dir, const std::string& name);

}  // namespace lmkit::test
