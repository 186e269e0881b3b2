// StringSource and FdSource: every byte once, in order, however the reads are cut; an unreadable descriptor is an
// error naming the input.
#include "lmkit/io/byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

namespace {

std::string Drain(lmkit::io::ByteSource& s, size_t step) {
  std::string out, buf(step, '\0');
  for (;;) {
    auto n = s.Read(buf.data(), buf.size());
    REQUIRE(n.ok());
    if (*n == 0) return out;
    out.append(buf.data(), *n);
  }
}

}  // namespace

TEST_CASE("byte source: a string in reads of any size, capped by max_read", "[io]") {
  const std::string text = "hello, byte sources\n";
  for (size_t step : {size_t{1}, size_t{3}, size_t{100}}) {
    lmkit::io::StringSource s(text, 4);
    CHECK(s.SizeHint() == text.size());
    char buf[100];
    auto n = s.Read(buf, step);
    REQUIRE(n.ok());
    CHECK(*n == std::min<size_t>(step, 4));
    lmkit::io::StringSource whole(text);
    CHECK(Drain(whole, step) == text);
  }
}

TEST_CASE("byte source: a pipe read to its end fills each read, and a bad descriptor names the input", "[io]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text(100000, 'x');
  std::thread writer([&] {
    for (size_t done = 0; done < text.size();) {  // in small writes: reads must gather them
      const ssize_t w = ::write(fds[1], text.data() + done, std::min<size_t>(777, text.size() - done));
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ::close(fds[1]);
  });
  lmkit::io::FdSource src(fds[0], "<pipe>");
  char buf[4096];
  auto n = src.Read(buf, sizeof buf);
  REQUIRE(n.ok());
  CHECK(*n == sizeof buf);  // filled, not one pipe write's worth
  const std::string rest = Drain(src, 10000);
  writer.join();
  ::close(fds[0]);
  CHECK(sizeof buf + rest.size() == text.size());
  lmkit::io::FdSource bad(-1, "nowhere");
  auto e = bad.Read(buf, sizeof buf);
  REQUIRE(!e.ok());
  CHECK(e.status().subject() == "nowhere");
  CHECK(e.status().message().rfind("cannot read: ", 0) == 0);
}
