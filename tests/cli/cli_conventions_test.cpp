// The CLI contract of docs/cli.md: help, version, unknown commands, exit codes, one-line errors.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lmkit/common/json.h"
#include "lmkit/version.h"
#include "support/run_lmkit.h"
#include "support/skip.h"

using lmkit::test::RunLmkit;

TEST_CASE("cli: --version prints the version and exits 0", "[cli]") {
  auto r = RunLmkit({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "lmkit " LMKIT_VERSION "\n");
}

TEST_CASE("cli: --help lists every subcommand", "[cli]") {
  auto r = RunLmkit({"--help"});
  CHECK(r.exit_code == 0);
  for (const char* name :
       {"bpe", "flops", "memory", "calibrate", "quantize", "eval", "generate", "dataload", "inspect", "env"})
    CHECK(r.out.find(name) != std::string::npos);
}

namespace {

// The descriptions of a CLI11 help text's entries (options, positionals, subcommands), each joined into one line.
// CLI11 prints an entry's name in a 30-column field and its description after it (on the next line when the name
// fills the field); continuation lines are indented by 30 spaces.
std::vector<std::string> HelpDescriptions(const std::string& help) {
  constexpr size_t kColumn = 30;
  std::vector<std::string> out;
  std::istringstream in(help);
  bool in_section = false, open = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      open = false;
      continue;
    }
    if (line[0] != ' ') {
      // "Options:", "Positionals:", "Subcommands:" or an option group ("explicit dimensions (instead of MODEL):");
      // any other line starts the footer's prose.
      in_section = line.back() == ':' && (line == "Options:" || line == "Positionals:" || line == "Subcommands:" ||
                                          std::islower(static_cast<unsigned char>(line[0])));
      open = false;
      continue;
    }
    if (!in_section || line.size() < 3 || line[0] != ' ') continue;
    const bool entry = line[1] == ' ' && line[2] != ' ';
    // A name that fills the field (it reaches column 29) puts the description on the next line.
    const std::string desc = line.size() > kColumn && line[kColumn - 1] == ' ' ? line.substr(kColumn) : "";
    if (entry) {
      out.push_back(desc);
      open = true;
    } else if (open && !out.empty()) {
      out.back() +=
          (out.back().empty() ? "" : " ") +
          desc.substr(desc.find_first_not_of(' ') == std::string::npos ? desc.size() : desc.find_first_not_of(' '));
    }
  }
  return out;
}

// One style for every help line: a lowercase phrase (a name with two capitals, such as CPU or ZeRO, may start it)
// with no final period, its default last as "(default: X)" (not "[X]"; an interval such as "in (0, 1]" is fine).
void CheckHelpStyle(const std::vector<std::string>& command) {
  std::vector<std::string> args = command;
  args.push_back("--help");
  auto r = RunLmkit(args);
  REQUIRE(r.exit_code == 0);
  const auto descs = HelpDescriptions(r.out);
  CHECK_FALSE(descs.empty());
  for (const std::string& d : descs) {
    INFO("lmkit " << (command.empty() ? "" : command[0] + " ") << "--help: '" << d << "'");
    REQUIRE_FALSE(d.empty());
    const std::string first = d.substr(0, d.find_first_of(" :'"));
    const bool capitalised = std::isupper(static_cast<unsigned char>(first[0])) &&
                             std::count_if(first.begin(), first.end(), [](char c) { return std::isupper(c); }) == 1;
    CHECK_FALSE(capitalised);
    CHECK((d.back() != '.' || (d.size() >= 3 && d.compare(d.size() - 3, 3, "...") == 0)));
    CHECK(d.find("(default ") == std::string::npos);
    CHECK_FALSE((d.back() == ']' && d.rfind(" [") != std::string::npos && d.find("T[,T...]") == std::string::npos));
  }
}

}  // namespace

TEST_CASE("cli: every help line follows one style", "[cli]") {
  CheckHelpStyle({});
  for (const char* name :
       {"bpe", "flops", "memory", "plan", "calibrate", "quantize", "eval", "generate", "dataload", "inspect", "env"})
    CheckHelpStyle({name});
  for (const char* name : {"train", "count", "encode", "decode"}) CheckHelpStyle({"bpe", name});
  // The summaries of `lmkit --help` and `lmkit bpe --help` are the tables', one line each.
  auto top = RunLmkit({"--help"});
  CHECK(top.out.find(" tensor names, dtypes, shapes and bytes, and the parameter total, of ") != std::string::npos);
  auto bpe = RunLmkit({"bpe", "--help"});
  CHECK(bpe.out.find(" turn token ids back into the exact bytes\n") != std::string::npos);
}

TEST_CASE("cli: unknown subcommand suggests the nearest and exits 2", "[cli]") {
  auto r = RunLmkit({"inspcet", "x"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "lmkit: unknown command 'inspcet'; did you mean 'inspect'? (see 'lmkit --help')\n");
  auto far = RunLmkit({"zzzzzzzz"});
  CHECK(far.exit_code == 2);
  CHECK(far.err.find("did you mean") == std::string::npos);
}

TEST_CASE("cli: no subcommand and unknown flags are usage errors", "[cli]") {
  CHECK(RunLmkit({}).exit_code == 2);
  auto r = RunLmkit({"env", "--no-such-flag"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("lmkit env: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("cli: env --json is one JSON document", "[cli][env]") {
  auto r = RunLmkit({"env", "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = lmkit::ParseJson(r.out, "stdout");
  REQUIRE(j.ok());
  CHECK((*j)["cpu"]["cores"].get<int>() >= 1);
  CHECK((*j)["memory_bytes"].get<uint64_t>() > 0);
  CHECK((*j)["cuda"]["devices"].is_array());
  // Global flags may come before the subcommand too.
  auto r2 = RunLmkit({"--json", "env"});
  REQUIRE(r2.exit_code == 0);
  CHECK(lmkit::ParseJson(r2.out, "stdout").ok());
}

TEST_CASE("cli: unknown command inside a group suggests the nearest", "[cli]") {
  auto r = RunLmkit({"bpe", "trian"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe: unknown command 'trian'; did you mean 'train'? (see 'lmkit bpe --help')\n");
  auto missing = RunLmkit({"bpe"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.rfind("lmkit bpe: ", 0) == 0);
}

// ctest registers each TEST_CASE through CMake lists, where ';' separates items and an unbalanced '[' swallows the
// separators after it: a name with either merges several test cases into one ctest entry (seen: 66 became 1).
TEST_CASE("test names are safe for ctest discovery", "[meta]") {
  // Catch2 v2 exposes the registry; walk it and reject names CMake would mangle.
  const auto& all = Catch::getAllTestCasesSorted(*Catch::getCurrentContext().getConfig());
  REQUIRE(all.size() > 100);
  for (const auto& tc : all) {
    INFO(tc.name);
    CHECK(tc.name.find(';') == std::string::npos);
    CHECK(tc.name.find('[') == std::string::npos);
  }
}

// A report that could not be written is a failure: `lmkit flops ... > /dev/full` used to exit 0 with nothing written,
// and a script reading the exit code took the missing report for a success.
TEST_CASE("cli: a failed write of the report on stdout exits 1 with one line", "[cli]") {
  struct stat st {};
  if (::stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) {
    LMKIT_SKIP("no /dev/full here");
  }
  lmkit::test::TempDir dir;
  const std::string err = dir.file("err.txt");
  for (const std::string args : {"flops gpt2", "--json flops gpt2", "env --json"}) {
    const std::string cmd = std::string("'") + LMKIT_BINARY + "' " + args + " >/dev/full 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    const std::string text = lmkit::test::ReadAll(err);
    const std::string name = args.find("env") != std::string::npos ? "env" : "flops";
    CHECK(text == "lmkit " + name + ": stdout: write failed: No space left on device\n");
  }
}

TEST_CASE("cli: integer flags are decimal: leading zeros are not octal, base prefixes are usage errors", "[cli]") {
  // CLI11 2.1 reads "010" as octal 8 and "0x10" as 16 for every integer option; main() adds a decimal check to all
  // of them (signed and unsigned), so a sequence length typed with a leading zero means what it says.
  auto seq = [](const std::string& v) { return RunLmkit({"flops", "gpt2", "--seq-len", v, "--format", "json"}); };
  auto ten = seq("010");
  REQUIRE(ten.exit_code == 0);
  CHECK(lmkit::ParseJson(ten.out, "stdout")->at("seq_len").get<int64_t>() == 10);
  for (const char* bad : {"0x10", "0b11", "1e3", "12abc", ""}) {
    auto r = seq(bad);
    INFO("--seq-len '" << bad << "'");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--seq-len") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // A signed option with a range check, an unsigned global option, and a signed option of another command.
  CHECK(RunLmkit({"memory", "gpt2", "--zero", "0x1"}).exit_code == 2);
  CHECK(RunLmkit({"memory", "gpt2", "--zero", "03", "--format", "json"}).exit_code == 0);
  CHECK(RunLmkit({"--threads", "0x2", "env"}).exit_code == 2);
  CHECK(RunLmkit({"--threads", "02", "env"}).exit_code == 0);
  auto mem = RunLmkit({"memory", "gpt2", "--batch", "010", "--format", "json"});
  REQUIRE(mem.exit_code == 0);
  CHECK(mem.out.find("\"batch\": 10") != std::string::npos);
}
