// The checks every front end runs before writing an output: an output must not replace one of the inputs it is made
// from, and two outputs of one request must not be the same file.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmkit/common/status.h"

namespace lmkit {

// True when writing the file `output` would replace `input` (a file) or an existing file of `input` (a directory).
// fs::equivalent sees through symlinks, hard links and spellings such as ./x, which a path comparison would miss.
bool WouldOverwriteInput(const std::string& output, const std::string& input);

// kInvalidArgument (subject: the input; the message names the request field `field` that gave `output`) when
// `output` is an existing regular file that WouldOverwriteInput says is one of `inputs` or a file of an input
// directory ("-", stdin, is skipped): the result would replace the data it was made from.
Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs, const std::string& output,
                               std::string_view field);

// kInvalidArgument "Field(a) and Field(b) name the same file" for the first two of `outputs` ({field, path}; empty
// paths skipped) that resolve to one path (absolute, symlinks of existing parts resolved).
Status CheckDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// The files a tokenizer spec reads: a directory's vocab.json, merges.txt and tokenizer.json (whichever exist), the
// file itself, or none for a built-in name. The inputs of CheckOutputIsNotAnInput for an encode or decode.
std::vector<std::string> TokenizerInputFiles(const std::string& tokenizer);

}  // namespace lmkit
