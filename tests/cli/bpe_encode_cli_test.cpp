// `lmkit bpe encode` / `lmkit bpe decode` as scripts use them: formats, round trips through files, summaries, errors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "lmkit/common/json.h"
#include "support/run_lmkit.h"

using lmkit::test::ReadAll;
using lmkit::test::RunLmkit;
using lmkit::test::TempDir;
using lmkit::test::TestData;
using lmkit::test::WriteAll;

TEST_CASE("cli bpe encode: json ids on stdout", "[cli][bpe][encode]") {
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "-"}, "Hello world<|endoftext|>");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[15496,995,50256]\n");
  CHECK(r.err.empty());
  auto empty = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2"}, "");
  CHECK(empty.out == "[]\n");
}

TEST_CASE("cli bpe encode: text format shows each token", "[cli][bpe][encode]") {
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--format", "text"}, "Hi \"you\"\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "17250\t\"Hi\"\n366\t\" \\\"\"\n5832\t\"you\"\n1\t\"\\\"\"\n198\t\"\\n\"\n");
}

TEST_CASE("cli bpe encode/decode: bin and npy round trip through files with a summary", "[cli][bpe][encode]") {
  TempDir dir;
  const std::string text = ReadAll(TestData("bpe-encode/tinystories_sample.txt"));
  const std::string in = TestData("bpe-encode/tinystories_sample.txt");
  for (std::string ext : {".bin", ".npy"}) {
    INFO(ext);
    std::string ids = dir.file("ids" + ext);
    auto r = RunLmkit({"--json", "bpe", "encode", "--tokenizer", "gpt2", in, "-o", ids, "--threads", "2"});
    REQUIRE(r.exit_code == 0);
    auto j = lmkit::ParseJson(r.out, "summary");
    REQUIRE(j.ok());
    CHECK((*j)["tokens"] == 923);
    CHECK((*j)["bytes"] == text.size());
    CHECK((*j)["dtype"] == "uint16");
    for (const char* key : {"bytes_per_token", "seconds", "mb_per_s", "peak_rss_bytes"}) CHECK(j->contains(key));
    if (ext == ".bin") CHECK(ReadAll(ids).size() == 923 * 2);
    std::string back = dir.file("back" + ext + ".txt");
    auto d = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", ids, "-o", back});
    REQUIRE(d.exit_code == 0);
    CHECK(ReadAll(back) == text);
  }
  // uint32 bin decoded from stdin.
  std::string ids32 = dir.file("ids32.bin");
  REQUIRE(RunLmkit({"bpe", "encode", "-t", "gpt2", in, "-o", ids32, "--dtype", "uint32"}).exit_code == 0);
  CHECK(ReadAll(ids32).size() == 923 * 4);
  auto d = RunLmkit({"bpe", "decode", "-t", "gpt2", "--dtype", "uint32", "-"}, ReadAll(ids32));
  CHECK(d.exit_code == 0);
  CHECK(d.out == text);
}

TEST_CASE("cli bpe decode: json input and output on stdout", "[cli][bpe][decode]") {
  auto d = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", "--format", "json"}, "[15496, 995,50256]");
  CHECK(d.exit_code == 0);
  CHECK(d.out == "Hello world<|endoftext|>");
}

TEST_CASE("cli bpe decode: unknown ids and bad values name the file", "[cli][bpe][decode]") {
  TempDir dir;
  std::string f = dir.file("bad.json");
  WriteAll(f, "[15496, 70000]");
  auto r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", f});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit bpe decode: " + f + ": token id 70000 at index 1 is not in the tokenizer (ids 0..50256)\n");
  WriteAll(f, "[1, -2]");
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", f});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(f + ": value 1 is not a non-negative integer token id") != std::string::npos);
  // A .bin of uint16 values past the vocabulary, and one with an odd size.
  std::string b = dir.file("bad.bin");
  const unsigned char big[] = {0x10, 0x00, 0xFF, 0xFF};
  WriteAll(b, std::string(reinterpret_cast<const char*>(big), 4));
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", b, "-o", dir.file("out.txt")});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(b + ": token id 65535 at index 1") != std::string::npos);
  CHECK(ReadAll(dir.file("out.txt")).empty());  // nothing written on error
  WriteAll(b, "abc");
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", b});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(b) != std::string::npos);
}

TEST_CASE("cli bpe encode: usage errors and missing inputs", "[cli][bpe][encode]") {
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt3", "-"}, "x");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("gpt3") != std::string::npos);
  r = RunLmkit({"bpe", "encode", "--tokenizer", "cl100k", "-"}, "x");
  CHECK(r.err.find("did you mean 'cl100k_base'") != std::string::npos);
  r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "/no/such/file.txt"});
  CHECK(r.exit_code == 1);
  CHECK(r.err == "lmkit bpe encode: /no/such/file.txt: no such file\n");
  r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--format", "xml", "-"}, "x");
  CHECK(r.exit_code == 2);
  r = RunLmkit({"bpe", "encode", "--tokenizer", "o200k_base", "--dtype", "uint16", "--format", "bin", "-"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("uint16") != std::string::npos);
  // JSON and text ids are decimal: a --dtype there changed nothing and said nothing.
  r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--dtype", "uint32", "-"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe encode: --dtype applies to the bin and npy formats, not json\n");
  CHECK(r.out.empty());
  // Decode: a .npy header and JSON carry the ids' type, so --dtype only makes sense for raw .bin input.
  TempDir dtmp;
  const std::string npy = dtmp.file("ids.npy");
  REQUIRE(RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "-o", npy, "-"}, "hello").exit_code == 0);
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", "--dtype", "uint32", npy});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe decode: --dtype applies to bin input, not npy (its ids carry their own type)\n");
  CHECK(RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", npy}).out == "hello");
  r = RunLmkit({"--json", "bpe", "encode", "--tokenizer", "gpt2", "-"}, "x");
  CHECK(r.exit_code == 2);
  r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--special-token", "<|im_start|>", "-"}, "x");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("<|im_start|>") != std::string::npos);
}

TEST_CASE("cli bpe encode: a named special token of a vocab.json + merges.txt directory", "[cli][bpe][encode]") {
  // A tiny GPT-2-format tokenizer: 256 byte tokens (printable form), merges "h e" → "he", "he l" → "hel".
  TempDir dir;
  lmkit::Json vocab = lmkit::Json::object();
  auto printable = [](int b) {
    // GPT-2 bytes_to_unicode, written out for the test.
    std::vector<int> bs;
    for (int x = 0x21; x <= 0x7E; ++x) bs.push_back(x);
    for (int x = 0xA1; x <= 0xAC; ++x) bs.push_back(x);
    for (int x = 0xAE; x <= 0xFF; ++x) bs.push_back(x);
    int cp = b, n = 0;
    bool found = std::find(bs.begin(), bs.end(), b) != bs.end();
    if (!found) {
      for (int x = 0; x < b; ++x)
        if (std::find(bs.begin(), bs.end(), x) == bs.end()) ++n;
      cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  for (int b = 0; b < 256; ++b) vocab[printable(b)] = b;
  vocab["he"] = 256;
  vocab["hel"] = 257;
  vocab["<|eot|>"] = 258;
  WriteAll(dir.file("vocab.json"), vocab.dump());
  WriteAll(dir.file("merges.txt"), "#version: 0.2\nh e\nhe l\n");
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", dir.path(), "--special-token", "<|eot|>"}, "help<|eot|>");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[257,112,258]\n");
  // The input file right after --special-token is the input, not a second special token.
  WriteAll(dir.file("in.txt"), "<|eot|>hel");
  r = RunLmkit({"bpe", "encode", "--tokenizer", dir.path(), "--special-token", "<|eot|>", dir.file("in.txt")});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[258,257]\n");
  // Without naming it, the special is ordinary text.
  r = RunLmkit({"bpe", "encode", "--tokenizer", dir.path()}, "<|eot|>");
  CHECK(r.out == "[60,124,101,111,116,124,62]\n");
  // A merge whose part is not in the vocabulary is an error naming the file and line.
  WriteAll(dir.file("merges.txt"), "#version: 0.2\nh e\nhe lp\n");
  r = RunLmkit({"bpe", "encode", "--tokenizer", dir.path()}, "x");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(dir.file("merges.txt") + ":3: token \"lp\" is not in the vocabulary") != std::string::npos);
}

// `-o /dev/null`, `-o /dev/full`, `-o /dev/stdout` or a FIFO: the ids used to go to a temporary file that was then
// renamed over the destination, replacing the device node or pipe with a plain file (for root, /dev/null itself). A
// FIFO in a scratch directory stands in for the devices, so a regression cannot damage the machine running the test.
TEST_CASE("cli bpe encode and decode: a FIFO output is written in place, not replaced", "[cli][bpe][encode]") {
  TempDir dir;
  const std::string fifo = dir.file("ids.pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // opened first: lmkit's open cannot block
  REQUIRE(rd >= 0);
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--format", "json", "-o", fifo, "-"}, "Hello world");
  CHECK(r.exit_code == 0);
  char buf[256] = {};
  ssize_t n = ::read(rd, buf, sizeof(buf));
  CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "[15496,995]\n");
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", "--format", "json", "-o", fifo, "-"}, "[15496,995]");
  CHECK(r.exit_code == 0);
  n = ::read(rd, buf, sizeof(buf));
  CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "Hello world");
  ::close(rd);
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(lmkit::test::ListDir(dir.path()) == std::vector<std::string>{"ids.pipe"});
}

TEST_CASE("cli bpe encode: --chunk-bytes must be a decimal count", "[cli][bpe][encode]") {
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--chunk-bytes", "-1", "-"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("got '-1'") != std::string::npos);  // CLI11 leaves a hidden flag's name out of its message
  CHECK(r.out.empty());
}

TEST_CASE("cli bpe encode: an empty --special-token is a usage error", "[cli][bpe][encode]") {
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", "--special-token", "", "-"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe encode: --special-token: a special token must not be empty\n");
  CHECK(r.out.empty());
}

// `-o` naming the input replaced the corpus (or the ids) with the result, and reported success.
TEST_CASE("cli bpe encode, decode and count: an output that is the input is refused", "[cli][bpe][encode]") {
  TempDir dir;
  const std::string text = dir.file("in.txt");
  WriteAll(text, "Hello world");
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", "gpt2", text, "-o", text});
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lmkit bpe encode: " + text + ": is also the output (-o " + text + "); writing it would destroy the input\n");
  CHECK(ReadAll(text) == "Hello world");
  // Another spelling of the same file.
  const std::string other = dir.path() + "/./in.txt";
  r = RunLmkit({"bpe", "count", text, "-o", other});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("lmkit bpe count: " + text + ": is also the output") == 0);
  CHECK(ReadAll(text) == "Hello world");
  const std::string ids = dir.file("ids.json");
  WriteAll(ids, "[15496,995]");
  r = RunLmkit({"bpe", "decode", "--tokenizer", "gpt2", ids, "-o", ids});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("lmkit bpe decode: " + ids + ": is also the output") == 0);
  CHECK(ReadAll(ids) == "[15496,995]");
  CHECK(lmkit::test::ListDir(dir.path()) == std::vector<std::string>{"ids.json", "in.txt"});
}

// The tokenizer files are inputs too: -o into the tokenizer directory replaced vocab.json with ids (exit 0), and
// `bpe train -o DIR` replaced a corpus named like one of the three files it writes.
TEST_CASE("cli bpe encode, decode and train: outputs may not replace the tokenizer or training inputs",
          "[cli][bpe][encode]") {
  TempDir dir;
  const std::string text = dir.file("in.txt"), tok = dir.file("tok");
  WriteAll(text, "Hello world, hello there");
  REQUIRE(RunLmkit({"bpe", "train", text, "--vocab-size", "260", "-o", tok}).exit_code == 0);
  const std::string vocab = ReadAll(tok + "/vocab.json");
  auto r = RunLmkit({"bpe", "encode", "--tokenizer", tok, text, "-o", tok + "/vocab.json"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe encode: " + tok + "/vocab.json: is also the output (-o " + tok +
                     "/vocab.json); writing it would destroy the input\n");
  const std::string ids = dir.file("ids.json");
  WriteAll(ids, "[72,101]");
  r = RunLmkit({"bpe", "decode", "--tokenizer", tok, ids, "-o", tok + "/./merges.txt"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("lmkit bpe decode: " + tok + "/merges.txt: is also the output") == 0);
  CHECK(ReadAll(tok + "/vocab.json") == vocab);
  // A corpus that lives where `bpe train` writes merges.txt.
  const std::string corpus = ReadAll(tok + "/merges.txt");
  r = RunLmkit({"bpe", "train", tok + "/merges.txt", "--vocab-size", "260", "-o", tok});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("lmkit bpe train: " + tok + "/merges.txt: is also the output") == 0);
  CHECK(ReadAll(tok + "/merges.txt") == corpus);
  CHECK(ReadAll(tok + "/vocab.json") == vocab);
  // Writing beside the tokenizer, into a file that is not one of its three, is fine.
  CHECK(RunLmkit({"bpe", "encode", "--tokenizer", tok, text, "-o", tok + "/ids.bin"}).exit_code == 0);
}

TEST_CASE("cli bpe encode: --allowed-special and --disallowed-special follow tiktoken", "[cli][bpe][encode]") {
  // Default: every special of the tokenizer is matched.
  CHECK(RunLmkit({"bpe", "encode", "-t", "gpt2"}, "a<|endoftext|>b").out == "[64,50256,65]\n");
  // tiktoken's defaults (allowed none, disallowed all): special-token text is an error naming it and its offset.
  TempDir dir;
  WriteAll(dir.file("in.txt"), "hello <|endoftext|>");
  auto r = RunLmkit(
      {"bpe", "encode", "-t", "gpt2", "--allowed-special", "none", dir.file("in.txt"), "-o", dir.file("ids.bin")});
  CHECK(r.exit_code == 1);
  CHECK(r.err ==
        "lmkit bpe encode: " + dir.file("in.txt") +
            ": byte 6: the text is the special token \"<|endoftext|>\", which is disallowed (--allowed-special "
            "encodes it as a special, --disallowed-special none as ordinary text)\n");
  CHECK(lmkit::test::ListDir(dir.path()) == std::vector<std::string>{"in.txt"});  // no output is left
  // Allowed none, disallowed none: tiktoken's encode_ordinary.
  r = RunLmkit({"bpe", "encode", "-t", "gpt2", "--allowed-special", "none", "--disallowed-special", "none"},
               "a<|endoftext|>b");
  CHECK(r.out == "[64,27,91,437,1659,5239,91,29,65]\n");
  // A list: only <|endoftext|> is a special; the other specials of cl100k_base are errors (disallowed: all the rest).
  r = RunLmkit({"bpe", "encode", "-t", "cl100k_base", "--allowed-special", "<|endoftext|>,<|endofprompt|>"},
               "x<|endoftext|>y");
  CHECK(r.out == "[87,100257,88]\n");
  r = RunLmkit({"bpe", "encode", "-t", "cl100k_base", "--allowed-special", "<|endoftext|>"}, "x<|fim_prefix|>");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("<stdin>: byte 1: the text is the special token \"<|fim_prefix|>\"") != std::string::npos);
  // Names that are not specials of the tokenizer, and empty items, are usage errors.
  r = RunLmkit({"bpe", "encode", "-t", "gpt2", "--allowed-special", "<|im_start|>"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err ==
        "lmkit bpe encode: --allowed-special: \"<|im_start|>\" is not a special token of this tokenizer (it has "
        "\"<|endoftext|>\")\n");
  r = RunLmkit({"bpe", "encode", "-t", "gpt2", "--disallowed-special", "a,,b"}, "x");
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lmkit bpe encode: --disallowed-special: empty special token in 'a,,b'\n");
}

TEST_CASE("cli bpe encode: a trained folder encodes its specials like its tokenizer.json (#32)", "[cli][bpe][encode]") {
  TempDir dir;
  auto t = RunLmkit({"bpe", "train", TestData("bpe/tinystories_sample.txt"), "--vocab-size", "300", "--special-token",
                     "<|endoftext|>", "-o", dir.path()});
  REQUIRE(t.exit_code == 0);
  auto folder = RunLmkit({"bpe", "encode", "-t", dir.path()}, "a<|endoftext|>b");
  auto json = RunLmkit({"bpe", "encode", "-t", dir.file("tokenizer.json")}, "a<|endoftext|>b");
  CHECK(folder.out == "[98,0,99]\n");
  CHECK(json.out == folder.out);
}

TEST_CASE("cli bpe encode: --add-special-tokens applies a tokenizer.json's post-processor", "[cli][bpe][encode]") {
  // Goldens: HF tokenizers' encode(text, add_special_tokens=True) (tests/data/bpe/hf/goldens.json, case 0).
  auto golden = lmkit::ParseJson(ReadAll(TestData("bpe/hf/goldens.json")), "goldens");
  REQUIRE(golden.ok());
  REQUIRE((*golden)["cases"][0] == "Hello world");
  for (const char* name : {"llama2_prepend_replace", "mistral_metaspace_first", "llama3_known_regex"}) {
    INFO(name);
    const std::string tok = TestData(std::string("bpe/hf/") + name + ".json");
    const auto& row = (*golden)["tokenizers"][name][0];
    auto with = RunLmkit({"bpe", "encode", "-t", tok, "--add-special-tokens"}, "Hello world");
    REQUIRE(with.exit_code == 0);
    CHECK(with.out == lmkit::DumpJson(row["ids_with_special"], -1) + "\n");
    auto without = RunLmkit({"bpe", "encode", "-t", tok}, "Hello world");  // the default adds nothing
    CHECK(without.out == lmkit::DumpJson(row["ids"], -1) + "\n");
  }
  auto none = RunLmkit({"bpe", "encode", "-t", "gpt2", "--add-special-tokens"}, "x");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("--add-special-tokens") != std::string::npos);
  CHECK(none.err.find("post-processor") != std::string::npos);
}

TEST_CASE("cli bpe encode: SentencePiece .model and tekken.json files, picked by their content", "[cli][bpe][encode]") {
  // Goldens: sentencepiece's and mistral-common's ids (tests/data/bpe/native/goldens.json, string 0).
  auto golden = lmkit::ParseJson(ReadAll(TestData("bpe/native/goldens.json")), "goldens");
  REQUIRE(golden.ok());
  REQUIRE((*golden)["strings"][0] == "Hello world");
  TempDir tmp;
  // A SentencePiece model under the name Llama 3 gives its tiktoken rank file: the content decides.
  const std::string renamed = tmp.file("tokenizer.model");
  WriteAll(renamed, ReadAll(TestData("bpe/native/spm_keep_spaces.model")));
  const std::vector<std::pair<std::string, std::string>> files = {
      {TestData("bpe/native/mistral_v3.model"), "mistral_v3.model"},
      {renamed, "spm_keep_spaces.model"},
      {TestData("bpe/native/tekken_small.json"), "tekken_small.json"}};
  for (const auto& [path, name] : files) {
    INFO(name);
    auto r = RunLmkit({"bpe", "encode", "-t", path, "-"}, "Hello world");
    REQUIRE(r.exit_code == 0);
    const std::string ids = lmkit::DumpJson((*golden)["files"][name]["ids"][0], -1);
    CHECK(r.out == ids + "\n");
    const std::string json = tmp.file("ids.json");
    WriteAll(json, ids);
    auto back = RunLmkit({"bpe", "decode", "-t", path, json});
    CHECK(back.exit_code == 0);
    CHECK(back.out == "Hello world");
  }
  // A model type lmkit does not implement: one line naming the file, exit 1.
  const std::string unigram = tmp.file("unigram.model");
  WriteAll(unigram, std::string("\x0A\x09\x0A\x05<unk>\x18\x02\x12\x02\x18\x01", 15));
  auto r = RunLmkit({"bpe", "encode", "-t", unigram, "-"}, "x");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("unigram.model") != std::string::npos);
  CHECK(r.err.find("UNIGRAM is not implemented") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
