// Where encoded ids go: a file renamed into place on Commit, or a descriptor, in each id format.
#include "lmkit/bpe/encode/id_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_lmkit.h"

using namespace lmkit::bpe;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;

namespace {

const Tokenizer& IdOutputTokenizer() {
  static const Tokenizer t = [] {
    Tokenizer x;
    for (int b = 0; b < 256; ++b) (void)x.AddToken(std::string(1, static_cast<char>(b)), static_cast<uint32_t>(b));
    (void)x.AddToken("hi\n", 300);
    (void)x.Finish();
    return x;
  }();
  return t;
}

// Writes `ids` in two pieces to request.output (or its descriptor) and commits.
void WriteIds(const EncodeRequest& req, IdFormat format, IdDtype dtype, const std::vector<uint32_t>& ids) {
  auto out = OpenIdOutput(req, IdOutputTokenizer(), format, dtype);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  REQUIRE((*out)->Write(ids.data(), ids.size() / 2).ok());
  REQUIRE((*out)->Write(ids.data() + ids.size() / 2, ids.size() - ids.size() / 2).ok());
  REQUIRE((*out)->Commit().ok());
}

}  // namespace

TEST_CASE("id output: bin is little-endian at the dtype's width, json one array, text id TAB quoted bytes",
          "[bpe][id_output]") {
  TempDir dir;
  EncodeRequest req;
  req.output = dir.file("ids.bin");
  WriteIds(req, IdFormat::kBin, IdDtype::kU16, {1, 258, 65535});
  CHECK(ReadAll(req.output) == std::string("\x01\x00\x02\x01\xff\xff", 6));
  WriteIds(req, IdFormat::kBin, IdDtype::kU32, {65536, 7});
  CHECK(ReadAll(req.output) == std::string("\x00\x00\x01\x00\x07\x00\x00\x00", 8));

  req.output = dir.file("ids.json");
  WriteIds(req, IdFormat::kJson, IdDtype::kU32, {104, 105, 300});
  CHECK(ReadAll(req.output) == "[104,105,300]\n");
  WriteIds(req, IdFormat::kJson, IdDtype::kU32, {});
  CHECK(ReadAll(req.output) == "[]\n");

  req.output = dir.file("ids.txt");
  WriteIds(req, IdFormat::kText, IdDtype::kU32, {104, 300, 9});
  CHECK(ReadAll(req.output) == "104\t\"h\"\n300\t\"hi\\n\"\n9\t\"\\t\"\n");
}

TEST_CASE("id output: npy needs a file, a descriptor gets the bytes on Commit", "[bpe][id_output]") {
  EncodeRequest req;
  CHECK(CheckIdOutput(req, IdFormat::kNpy).code() == lmkit::ErrorCode::kInvalidArgument);
  CHECK(OpenIdOutput(req, IdOutputTokenizer(), IdFormat::kNpy, IdDtype::kU16).status().code() ==
        lmkit::ErrorCode::kInvalidArgument);
  CHECK(CheckIdOutput(req, IdFormat::kJson).ok());

  TempDir dir;
  const std::string path = dir.file("stdout");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  req.stdout_fd = fd;
  WriteIds(req, IdFormat::kJson, IdDtype::kU16, {5, 6});
  ::close(fd);
  CHECK(ReadAll(path) == "[5,6]\n");
}

TEST_CASE("id output: a file appears only when committed", "[bpe][id_output]") {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  auto out = ByteOutput::ToFile(path);
  REQUIRE(out.ok());
  CHECK(out->name() == path);
  REQUIRE(out->Write("abc").ok());
  CHECK_FALSE(std::filesystem::exists(path));
  REQUIRE(out->Commit().ok());
  CHECK(ReadAll(path) == "abc");
  CHECK(ByteOutput::ToFile(dir.file("no/such/dir/x")).status().code() == lmkit::ErrorCode::kNotFound);
}
