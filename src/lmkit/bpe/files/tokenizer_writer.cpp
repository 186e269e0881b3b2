// See tokenizer_writer.h. JSON is written by hand: nlohmann's ordered_json inserts in linear time per key, which is
// quadratic for a 30k-entry vocabulary, and the output needs exact control (id order, one line) anyway.
#include "lmkit/bpe/files/tokenizer_writer.h"

#include <fmt/format.h>

#include <charconv>
#include <utility>
#include <vector>

#include "lmkit/bpe/files/byte_unicode.h"
#include "lmkit/common/atomic_file.h"
#include "lmkit/common/staged_dir.h"

namespace lmkit::bpe {

namespace {

// Text built in `buf` and handed on in pieces of about 1 MiB when there is a file: a model trained on one long word
// has files many times its input's size (tokens of megabytes), and building them whole took 5x the input in memory.
struct TextOut {
  static constexpr size_t kPiece = size_t{1} << 20;
  std::string buf;
  AtomicFile* file = nullptr;  // null: the text stays in buf
  Status Spill() {
    if (file == nullptr || buf.size() < kPiece) return Status::Ok();
    Status st = file->Write(buf);
    buf.clear();
    return st;
  }
  Status Finish() {
    if (file == nullptr) return Status::Ok();
    Status st = file->Write(buf);
    buf.clear();
    return st;
  }
};

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

// AppendJsonString of AppendPrintable's form without the intermediate string. The printable form has no control
// characters, and the bytes '"' and '\\' stand for themselves there: they are the only ones to escape.
void AppendPrintableJson(std::string& out, std::string_view bytes) {
  size_t run = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '"' && bytes[i] != '\\') continue;
    AppendPrintable(out, bytes.substr(run, i - run));
    out.push_back('\\');
    out.push_back(bytes[i]);
    run = i + 1;
  }
  AppendPrintable(out, bytes.substr(run));
}

void AppendId(std::string& out, size_t id) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), id);
  out.append(buf, r.ptr);
}

// {token: id} in id order. Ordinary tokens in GPT-2's printable form; specials too, unless `raw_specials`.
Status AppendVocabObject(TextOut& text, const BpeModel& m, const char* sep, bool raw_specials) {
  std::string& out = text.buf;
  out.push_back('{');
  for (size_t id = 0; id < m.vocab.size(); ++id) {
    LMKIT_RETURN_IF_ERROR(text.Spill());
    if (id > 0) out += sep;
    if (raw_specials && id < m.num_specials) {
      AppendJsonString(out, m.vocab[id]);
    } else {
      out.push_back('"');
      AppendPrintableJson(out, m.vocab[id]);
      out.push_back('"');
    }
    out += ": ";
    AppendId(out, id);
  }
  out.push_back('}');
  return Status::Ok();
}

Status EmitVocabJson(const BpeModel& model, TextOut& text) {
  // Specials raw, as Hugging Face's BPE model saves its vocabulary: HF's add_special_tokens finds them by their text.
  LMKIT_RETURN_IF_ERROR(AppendVocabObject(text, model, ", ", /*raw_specials=*/true));
  text.buf.push_back('\n');
  return text.Finish();
}

Status EmitMergesTxt(const BpeModel& model, TextOut& text) {
  std::string& out = text.buf;
  out += "#version: 0.2\n";
  for (const auto& [a, b] : model.merges) {
    LMKIT_RETURN_IF_ERROR(text.Spill());
    AppendPrintable(out, model.vocab[a]);
    out.push_back(' ');
    AppendPrintable(out, model.vocab[b]);
    out.push_back('\n');
  }
  return text.Finish();
}

Status EmitTokenizerJson(const BpeModel& model, TextOut& text) {
  std::string& out = text.buf;
  out += "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [";
  for (size_t i = 0; i < model.num_specials; ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += fmt::format("{{\"id\": {}, \"content\": ", i);
    AppendJsonString(out, model.vocab[i]);
    out += ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}";
  }
  out += model.num_specials > 0 ? "\n  ],\n" : "],\n";
  out +=
      "  \"normalizer\": null,\n"
      "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
      "\"use_regex\": true},\n"
      "  \"post_processor\": null,\n"
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
      "\"use_regex\": true},\n"
      "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
      "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
      "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": ";
  // Hugging Face looks an added token up in the model's vocabulary by its raw content (its BpeTrainer stores specials
  // that way): a special in printable form ("[docĠbreak]") would be added a second time under a new id.
  LMKIT_RETURN_IF_ERROR(AppendVocabObject(text, model, ",\n      ", /*raw_specials=*/true));
  out += ",\n    \"merges\": [";
  for (size_t i = 0; i < model.merges.size(); ++i) {
    LMKIT_RETURN_IF_ERROR(text.Spill());
    out += i == 0 ? "\n      " : ",\n      ";
    out.push_back('"');
    AppendPrintableJson(out, model.vocab[model.merges[i].first]);
    out.push_back(' ');
    AppendPrintableJson(out, model.vocab[model.merges[i].second]);
    out.push_back('"');
  }
  out += model.merges.empty() ? "]\n  }\n}\n" : "\n    ]\n  }\n}\n";
  return text.Finish();
}

using Emitter = Status (*)(const BpeModel&, TextOut&);

std::string Render(const BpeModel& model, Emitter emit) {
  TextOut text;
  (void)emit(model, text);  // without a file there is nothing to fail
  return std::move(text.buf);
}

}  // namespace

std::string RenderVocabJson(const BpeModel& model) { return Render(model, EmitVocabJson); }
std::string RenderMergesTxt(const BpeModel& model) { return Render(model, EmitMergesTxt); }
std::string RenderTokenizerJson(const BpeModel& model) { return Render(model, EmitTokenizerJson); }

Status WriteTokenizerFiles(const BpeModel& model, const std::string& dir) {
  // The three files are one tokenizer: they are staged together and swapped in at once (StagedDir), so a failure (a
  // full disk, a directory named tokenizer.json) leaves the old set whole, and two runs into one directory cannot mix.
  LMKIT_ASSIGN_OR_RETURN(StagedDir out, StagedDir::Create(dir));
  const std::pair<const char*, Emitter> files[] = {
      {"vocab.json", EmitVocabJson}, {"merges.txt", EmitMergesTxt}, {"tokenizer.json", EmitTokenizerJson}};
  for (const auto& [name, emit] : files) {
    LMKIT_RETURN_IF_ERROR(out.WriteFileWith(name, [&, emit = emit](AtomicFile& f) {
      TextOut text;
      text.file = &f;
      return emit(model, text);
    }));
  }
  return out.Commit();
}

}  // namespace lmkit::bpe
