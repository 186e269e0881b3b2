#include "lmkit/common/output_check.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/run_lmkit.h"

using lmkit::CheckDistinctOutputs;
using lmkit::CheckOutputIsNotAnInput;
using lmkit::ErrorCode;
using lmkit::TokenizerInputFiles;
using lmkit::WouldOverwriteInput;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;

TEST_CASE("output check: an output that is an input, seen through links and spellings", "[common][output_check]") {
  TempDir dir;
  const std::string in = dir.file("in.txt"), other = dir.file("other.txt"), link = dir.file("link.txt");
  WriteAll(in, "data");
  WriteAll(other, "data");
  REQUIRE(::symlink(in.c_str(), link.c_str()) == 0);
  CHECK(WouldOverwriteInput(link, in));
  CHECK(WouldOverwriteInput(dir.path() + "/./in.txt", in));
  CHECK_FALSE(WouldOverwriteInput(other, in));
  CHECK_FALSE(WouldOverwriteInput(dir.file("absent.txt"), in));
  CHECK(WouldOverwriteInput(in, dir.path()));  // a file of an input directory

  const lmkit::Status s = CheckOutputIsNotAnInput({other, in}, link, "svg");
  REQUIRE(s.code() == ErrorCode::kInvalidArgument);
  CHECK(s.ToString() == in + ": is also the output (svg " + link + "); writing it would destroy the input");
  CHECK(s.ToString([](std::string_view f) { return "--" + std::string(f); }) ==
        in + ": is also the output (--svg " + link + "); writing it would destroy the input");
  const lmkit::Status d = CheckOutputIsNotAnInput({dir.path()}, in, "output");
  CHECK(d.ToString() ==
        dir.path() + ": output " + in + " is a file of this input directory; writing it could destroy the input");
  CHECK(CheckOutputIsNotAnInput({"-", other}, in, "output").ok());            // stdin is never overwritten
  CHECK(CheckOutputIsNotAnInput({"/dev/zero"}, "/dev/null", "output").ok());  // not a regular file
  CHECK(CheckOutputIsNotAnInput({in}, "", "output").ok());
}

TEST_CASE("output check: two outputs naming one file, the first pair in order", "[common][output_check]") {
  TempDir dir;
  const std::string a = dir.file("a.json");
  CHECK(CheckDistinctOutputs({{"output", a}, {"report", dir.file("b.json")}, {"svg", ""}}).ok());
  const lmkit::Status s = CheckDistinctOutputs({{"output", a}, {"report", ""}, {"svg", dir.path() + "/./a.json"}});
  REQUIRE(s.code() == ErrorCode::kInvalidArgument);
  CHECK(s.ToString() == "output and svg name the same file");
}

TEST_CASE("output check: the files a tokenizer spec reads", "[common][output_check]") {
  TempDir dir;
  WriteAll(dir.file("tok.json"), "{}");
  CHECK(TokenizerInputFiles("gpt2").empty());
  CHECK(TokenizerInputFiles(dir.file("tok.json")) == std::vector<std::string>{dir.file("tok.json")});
  CHECK(TokenizerInputFiles(dir.path()).size() == 3);
}
