#!/usr/bin/env python3
"""Reads an SVG file with a real XML parser (Python's xml.etree) and prints, as one JSON document, what lmkit's chart
tests check (tests/support/svg_check.cpp measures the texts with lmkit's own font-metrics estimate):

  {"width", "height": the root's size attributes as numbers,
   "viewBox": [min-x, min-y, width, height],
   "texts": [{"x", "y", "size", "anchor", "weight", "text"}] with inherited font-size/text-anchor/font-weight resolved,
   "legends": [[fill of each swatch rect] per <g class="legend">],
   "transforms": number of elements with a transform attribute (the charts use none)}

Exit 1 with a one-line message when the file is not well-formed XML or its root is not an SVG <svg> with a viewBox.
Standard library only.
"""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def classes(el):
    return (el.get("class") or "").split()


def main(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        print(f"{path}: not well-formed XML: {e}")
        return 1
    if root.tag != SVG + "svg" or root.get("viewBox") is None:
        print(f"{path}: the root is not an SVG <svg> element with a viewBox")
        return 1
    out = {
        "width": float(root.get("width", "nan")),
        "height": float(root.get("height", "nan")),
        "viewBox": [float(v) for v in root.get("viewBox").replace(",", " ").split()],
        "texts": [],
        "legends": [],
        "transforms": 0,
    }

    def walk(el, inherited):
        attrs = dict(inherited)
        for key in ("font-size", "text-anchor", "font-weight"):
            if el.get(key) is not None:
                attrs[key] = el.get(key)
        if el.get("transform") is not None:
            out["transforms"] += 1
        if el.tag == SVG + "text":
            out["texts"].append({
                "x": float(el.get("x", "0")),
                "y": float(el.get("y", "0")),
                "size": float(attrs.get("font-size", "16")),
                "anchor": attrs.get("text-anchor", "start"),
                "weight": attrs.get("font-weight", "normal"),
                "text": "".join(el.itertext()),
            })
        if el.tag == SVG + "g" and "legend" in classes(el):
            out["legends"].append([r.get("fill") for r in el.iter(SVG + "rect") if "swatch" in classes(r)])
        for child in el:
            walk(child, attrs)

    walk(root, {})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
