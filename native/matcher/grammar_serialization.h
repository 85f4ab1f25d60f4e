// Versioned binary formats of a compiled grammar and of a tokenizer table.
//
// Compiled grammar blob (all integers little-endian):
//   "XG2G"  u32 format version  bytes engine version  16-byte tokenizer fingerprint
//   u8 derived-vocabulary flag  sections (FSM, EBNF, Earley limits, token literal ids, stop
//   terminal ids, classifications)  u64 checksum of every byte before it.
// A grammar stores no vocabulary: it is read back against the caller's tokenizer, whose
// fingerprint must equal the one recorded; a grammar that names tokens (Token(id), token
// sets) is matched against the derived vocabulary of tokenizer/token_literals.h, rebuilt from
// the base tokenizer and the recorded ids. The classifications are those of the grammar's
// mask cache that were built when it was serialized (a structural tag's are all built at
// compile time); the reader recomputes each uncertain list's prefix lengths from the
// vocabulary instead of trusting stored ones.
//
// Tokenizer blob: "XG2T"  u32 format version  fingerprint  vocab type, size, flags, the
// decoded tokens, stop and special ids  u64 checksum.
//
// Reading never trusts the blob: every length is checked against the bytes left, the
// checksum against the content, and the FSM against its structural invariants
// (CheckFsmStructure) before anything indexes with it, then against the rest of grammar_fsm.h's
// invariants (CheckGrammarFsmInvariants). A failure is a DeserializationError naming what
// mismatched.
#ifndef XG2_MATCHER_GRAMMAR_SERIALIZATION_H_
#define XG2_MATCHER_GRAMMAR_SERIALIZATION_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "matcher/compiled_grammar.h"
#include "matcher/serial_stream.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// Bumped whenever either layout or the meaning of a stored field changes.
constexpr uint32_t kSerializationFormatVersion = 4;

// 16 bytes naming a vocabulary: vocab size and type, the prefix-space flag, every decoded
// token's bytes, stop and special ids. Computed once per table and kept with it.
std::string TokenizerFingerprint(const TokenizerInfo& tokenizer);

std::string SerializeTokenizerInfo(const TokenizerInfo& tokenizer, const std::string& engine_version);
std::shared_ptr<const TokenizerInfo> DeserializeTokenizerInfo(std::string_view blob,
                                                              const std::string& engine_version);

// `base` is the tokenizer the grammar was compiled for (the grammar's own may be derived
// from it); `with_classifications` stores the mask cache's built entries.
std::string SerializeCompiledGrammar(const CompiledGrammar& grammar, const TokenizerInfo& base,
                                     const std::string& engine_version, bool with_classifications);

// What a compiled grammar blob holds, checked, before it is tied to a vocabulary.
struct StoredClassification {
  NodeId node;
  int32_t accepted_set;  // index into GrammarBlob::accepted_sets
  std::vector<int32_t> uncertain_positions;
};
struct GrammarBlob {
  GrammarFsm fsm;
  std::string ebnf;
  EarleyLimits earley_limits;
  std::vector<int32_t> token_literal_ids;
  std::vector<int32_t> stop_terminal_ids;
  bool derived_vocabulary = false;
  std::vector<std::shared_ptr<const AcceptedTokens>> accepted_sets;
  std::vector<StoredClassification> classifications;
};

// Reads and checks a compiled grammar blob made for `base`. `verify_checksum` false skips
// only the checksum (for the fuzz target, which must reach the structural checks).
GrammarBlob ReadCompiledGrammarBlob(std::string_view blob, const TokenizerInfo& base,
                                    const std::string& engine_version, bool verify_checksum = true);

// The compiled grammar of `blob`, matched against `vocab` (the base tokenizer, or the derived
// vocabulary when blob.derived_vocabulary), with a fresh mask cache holding the stored
// classifications (each checked against `vocab`).
std::shared_ptr<CompiledGrammar> AssembleCompiledGrammar(GrammarBlob blob, std::shared_ptr<const TokenizerInfo> vocab,
                                                         std::shared_ptr<MaskCachePool> pool,
                                                         MaskCacheOptions cache_options);

// The structural invariants of grammar/grammar_fsm.h that indexing relies on: table sizes,
// CSR offsets monotone and in range, edge targets in range and in their rule's block, rule
// ids in range, sorted disjoint byte edges, loop and token-set tables consistent. Token-set
// ids must lie below `vocab_size`. Throws DeserializationError naming the first violation.
void CheckFsmStructure(const GrammarFsm& fsm, int32_t vocab_size);

}  // namespace xg2

#endif  // XG2_MATCHER_GRAMMAR_SERIALIZATION_H_
