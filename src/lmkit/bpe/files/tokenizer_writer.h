// Writers for trained byte-level BPE models: GPT-2's vocab.json and merges.txt, and Hugging Face's tokenizer.json.
//
// Contract: tokens are written in GPT-2's printable form (byte_unicode.h). vocab.json: one JSON object {token: id} in
// id order, on one line, as GPT-2's encoder.json, specials in printable form too (for the usual "<|...|>" specials
// that form is the text itself). merges.txt: "#version: 0.2", then one "A B" line per merge in rank order.
// tokenizer.json: model BPE (vocab, merges as "A B" strings), pre_tokenizer and decoder ByteLevel with
// add_prefix_space false, and the specials as added_tokens (special: true); a special's key in model.vocab and its
// added_tokens content are its raw text, as Hugging Face stores them, so that HF gives it the same id.
// WriteTokenizerFiles creates `dir` when missing (one level) and replaces the three files together (StagedDir: all or
// none, a second concurrent writer is refused); errors are kIo with the file as subject. Thread-safe.
#pragma once

#include <string>

#include "lmkit/bpe/train/trainer.h"
#include "lmkit/common/status.h"

namespace lmkit::bpe {

std::string RenderVocabJson(const BpeModel& model);
std::string RenderMergesTxt(const BpeModel& model);
std::string RenderTokenizerJson(const BpeModel& model);

Status WriteTokenizerFiles(const BpeModel& model, const std::string& dir);

}  // namespace lmkit::bpe
