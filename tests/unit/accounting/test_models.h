// The models the accounting tests load: shipped presets and the real configs of tests/data/accounting.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/accounting/model.h"
#include "support/run_lmkit.h"

namespace lmkit::test {

// A preset from data/models/ (fails the test when it does not load).
inline accounting::ModelSpec Preset(const std::string& name) {
  auto m = accounting::LoadPreset(name);
  INFO(name << ": " << m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

// A config.json from tests/data/accounting/ (PROVENANCE.md there names its Hub repository).
inline accounting::ModelSpec RealConfig(const std::string& file) {
  auto m = accounting::LoadModelConfig(TestData("accounting/" + file));
  INFO(file << ": " << m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

}  // namespace lmkit::test
