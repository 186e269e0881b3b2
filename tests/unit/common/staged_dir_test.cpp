#include "lmkit/common/staged_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "support/run_lmkit.h"

using lmkit::ErrorCode;
using lmkit::StagedDir;
using lmkit::test::ListDir;
using lmkit::test::ReadAll;
using lmkit::test::TempDir;
using lmkit::test::WriteAll;
namespace fs = std::filesystem;

namespace {

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("staged dir: a new directory gets every file at commit, nothing before", "[common][staged]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  {
    auto s = StagedDir::Create(out);
    REQUIRE(s.ok());
    REQUIRE(s->WriteFile("a.json", "A").ok());
    REQUIRE(s->WriteFile("b.txt", "B").ok());
    CHECK(ListDir(out).empty());
    REQUIRE(s->Commit().ok());
  }
  CHECK(ListDir(out) == std::vector<std::string>{"a.json", "b.txt"});
  CHECK(ReadAll(out + "/a.json") == "A");
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"tok"});  // no staging directory left
}

TEST_CASE("staged dir: a directory of the same files is swapped in with one rename", "[common][staged]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  fs::create_directory(out);
  ::chmod(out.c_str(), 0750);
  WriteAll(out + "/a.json", "old A");
  WriteAll(out + "/b.txt", "old B");
  const ino_t before = Inode(out);
  auto s = StagedDir::Create(out);
  REQUIRE(s.ok());
  REQUIRE(s->WriteFile("a.json", "new A").ok());
  REQUIRE(s->WriteFile("b.txt", "new B").ok());
  CHECK(ReadAll(out + "/a.json") == "old A");
  REQUIRE(s->Commit().ok());
  CHECK(Inode(out) != before);  // the directory itself was exchanged
  CHECK(ReadAll(out + "/a.json") == "new A");
  CHECK(ReadAll(out + "/b.txt") == "new B");
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"tok"});
}

TEST_CASE("staged dir: other files in the directory stay, the staged ones are replaced", "[common][staged]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  fs::create_directory(out);
  WriteAll(out + "/README", "mine");
  WriteAll(out + "/a.json", "old A");
  auto s = StagedDir::Create(out);
  REQUIRE(s.ok());
  REQUIRE(s->WriteFile("a.json", "new A").ok());
  REQUIRE(s->Commit().ok());
  CHECK(ListDir(out) == std::vector<std::string>{"README", "a.json"});
  CHECK(ReadAll(out + "/README") == "mine");
  CHECK(ReadAll(out + "/a.json") == "new A");
}

TEST_CASE("staged dir: a link to a directory is written through", "[common][staged]") {
  TempDir tmp;
  fs::create_directory(tmp.file("real"));
  fs::create_directory_symlink("real", tmp.file("link"));
  auto s = StagedDir::Create(tmp.file("link"));
  REQUIRE(s.ok());
  REQUIRE(s->WriteFile("a.json", "A").ok());
  REQUIRE(s->Commit().ok());
  CHECK(fs::is_symlink(tmp.file("link")));
  CHECK(ReadAll(tmp.file("real/a.json")) == "A");
}

TEST_CASE("staged dir: an abandoned output changes nothing and leaves nothing", "[common][staged]") {
  TempDir tmp;
  fs::create_directory(tmp.file("old"));
  WriteAll(tmp.file("old/a.json"), "old A");
  {
    auto s = StagedDir::Create(tmp.file("old"));
    REQUIRE(s.ok());
    REQUIRE(s->WriteFile("a.json", "new A").ok());
    auto fresh = StagedDir::Create(tmp.file("fresh"));
    REQUIRE(fresh.ok());
    REQUIRE(fresh->WriteFile("a.json", "A").ok());
  }
  CHECK(ReadAll(tmp.file("old/a.json")) == "old A");
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"old"});  // "fresh", made by the abandoned run, is gone
}

TEST_CASE("staged dir: a second writer of the same directory is refused at once", "[common][staged]") {
  TempDir tmp;
  auto first = StagedDir::Create(tmp.file("tok"));
  REQUIRE(first.ok());
  auto second = StagedDir::Create(tmp.file("tok/"));
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == ErrorCode::kInvalidInput);
  CHECK(second.status().ToString() ==
        tmp.file("tok/") + ": another process is writing this directory; try again when it is done");
  REQUIRE(first->WriteFile("a.json", "A").ok());
  REQUIRE(first->Commit().ok());
  auto third = StagedDir::Create(tmp.file("tok"));  // free again once the first is done
  CHECK(third.ok());
}

TEST_CASE("staged dir: a file in the way and the current directory", "[common][staged]") {
  TempDir tmp;
  WriteAll(tmp.file("file"), "x");
  auto s = StagedDir::Create(tmp.file("file"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().ToString() == tmp.file("file") + ": is not a directory");
  // "." cannot be swapped: the files are staged inside it and renamed one by one.
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  auto dot = StagedDir::Create(".");
  REQUIRE(dot.ok());
  REQUIRE(dot->WriteFile("a.json", "A").ok());
  REQUIRE(dot->Commit().ok());
  fs::current_path(cwd);
  CHECK(ListDir(tmp.path()) == std::vector<std::string>{"a.json", "file"});
}

TEST_CASE("staged dir: a directory where an output file goes is refused before anything changes", "[common][staged]") {
  TempDir tmp;
  const std::string out = tmp.file("tok");
  fs::create_directories(out + "/b.txt/keep");
  WriteAll(out + "/a.json", "old A");
  auto s = StagedDir::Create(out);
  REQUIRE(s.ok());
  REQUIRE(s->WriteFile("a.json", "new A").ok());
  CHECK(s->WriteFile("b.txt", "B").ToString() == out + "/b.txt: is a directory");
  CHECK(s->Commit().ok());  // what was written goes in; the directory in the way stays
  CHECK(ReadAll(out + "/a.json") == "new A");
  CHECK(fs::is_directory(out + "/b.txt/keep"));
}
