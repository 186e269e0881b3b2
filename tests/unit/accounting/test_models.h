// The models and plans the accounting tests load: shipped presets, the real configs of tests/data/accounting, and
// plan files given as text.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "lmkit/accounting/model.h"
#include "lmkit/accounting/plan.h"
#include "lmkit/common/json.h"
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

// A plan file's text, parsed as t.json (fails the test when it does not parse).
inline accounting::Plan PlanOf(const std::string& text) {
  auto j = ParseJson(text, "t.json");
  REQUIRE(j.ok());
  auto p = accounting::ParsePlan(*j, "t.json", "");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *p;
}

// PlanOf(text) evaluated (fails the test when the evaluation is refused).
inline accounting::PlanResult PlanResultOf(const std::string& text, const std::string& gpu = "", int64_t gpus = 0,
                                           bool what_if = false) {
  auto r = accounting::EvaluatePlan(PlanOf(text), gpu, gpus, what_if);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace lmkit::test
