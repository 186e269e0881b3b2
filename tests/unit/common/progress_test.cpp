// Progress for long work: silence off a terminal, and one drawn line on a terminal.
#include "lmkit/common/progress.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "support/run_lmkit.h"

using namespace lmkit;

TEST_CASE("progress: nothing is written off a terminal or when disabled", "[common][progress]") {
  test::TempDir dir;
  const std::string path = dir.file("err");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  {
    TerminalProgress p(fd, true);
    CHECK_FALSE(p.active());
    p.Begin("counting", 100, "B");
    p.Update(50);
    p.Finish();
    NullProgress n;
    n.Begin("x", 1, "B");
    n.Update(1);
    n.Finish();
  }
  ::close(fd);
  CHECK(test::ReadAll(path).empty());
}

TEST_CASE("progress: on a terminal the first update draws a line and Finish erases it", "[common][progress]") {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(tty >= 0);
  {
    TerminalProgress disabled(tty, false);
    CHECK_FALSE(disabled.active());
    TerminalProgress p(tty, true);
    REQUIRE(p.active());
    p.Begin("counting", 200, "docs");
    p.Update(100);  // the first update after Begin always draws
    p.Finish();
  }
  ::close(tty);
  std::string out;
  char buf[512];
  ssize_t n;
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  while ((n = ::read(master, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(master);
  CHECK(out.rfind("\r\033[Kcounting  50.0% 100 docs  ", 0) == 0);
  CHECK(out.find("ETA ") != std::string::npos);
  REQUIRE(out.size() >= 4);
  CHECK(out.substr(out.size() - 4) == "\r\033[K");  // erased: nothing left on the line
}
