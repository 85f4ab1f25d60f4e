// Turns a tokenizer's vocabulary strings ("encoded" tokens, as tokenizer.json or a
// sentencepiece model spell them) into the bytes each token contributes to the output text,
// and recognises which of the three spellings a vocabulary uses.
//
// The decoded text of a token is what it appends to the output *mid-sequence*. Sentencepiece
// tokenizers that add a prefix space (TokenizerInfo::add_prefix_space()) prepend "▁" to the
// input, so the first token of an encoded text carries a space that the tokenizer's decode
// drops; the decoded text here keeps it ("▁Hello" -> " Hello"), because that is what the
// token appends after earlier output.
#ifndef XG2_TOKENIZER_VOCAB_DECODER_H_
#define XG2_TOKENIZER_VOCAB_DECODER_H_

#include <string>
#include <vector>

#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// Recognises the vocabulary spelling from the tokens themselves (metadata is often missing or
// wrong). Pass the tokenizer's model vocabulary; a few added tokens spelled as plain text do
// not change the answer.
//  * kByteFallback: some "<0xAB>" byte tokens, and more tokens containing the "▁" space marker
//    than tokens containing a raw space.
//  * kByteLevel: the GPT-2 space / newline stand-ins "Ġ" or "Ċ" occur, and at least 99% of
//    tokens are spelled entirely in the GPT-2 byte alphabet (so raw spaces, CJK text, ... are
//    essentially absent).
//  * kRaw otherwise.
VocabType DetectVocabType(const std::vector<std::string>& encoded_tokens);

// The bytes each token appends to the output mid-sequence (see the file comment):
//  * kByteLevel: each code point maps back through the GPT-2 byte alphabet. A token with a
//    code point outside the alphabet (an added token spelled as plain text) is taken as its
//    UTF-8 bytes unchanged, as Hugging Face's ByteLevel decoder does.
//  * kByteFallback: exactly "<0xAB>" (uppercase hex) is the single byte 0xAB; otherwise every
//    "▁" becomes a space and the rest is kept.
//  * kRaw: the strings are the bytes.
// Control tokens such as "<s>" decode to their literal text; callers mark them special.
std::vector<std::string> DecodeVocabulary(const std::vector<std::string>& encoded_tokens,
                                          VocabType type);

}  // namespace xg2

#endif  // XG2_TOKENIZER_VOCAB_DECODER_H_
