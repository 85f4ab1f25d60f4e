// The rule FSMs of one compiled grammar as a sequence of immutable snapshots
// (docs/lazy_rule_dfas.md; grammar/grammar_fsm.h, "Snapshots"). Readers (parsers, the mask
// cache) hold a shared_ptr to a snapshot and read it without locks; a rule whose DFA is not
// built in it is built on request under the grammar's one build mutex, which appends to a copy
// of the latest snapshot and publishes the copy. A reader moves to a newer snapshot only after
// it asked for a build, so its hot paths never look for one.
#ifndef XG2_MATCHER_RULE_DFA_SNAPSHOTS_H_
#define XG2_MATCHER_RULE_DFA_SNAPSHOTS_H_

#include <functional>
#include <memory>
#include <string>

#include "grammar/grammar_fsm.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

// Empty when `newer` extends `older` as the snapshot invariants require (append-only nodes, the
// older snapshot a prefix of the newer); otherwise what differs first, for an InternalError.
// Linear in the size of `newer`.
std::string SnapshotPrefixViolation(const GrammarFsm& older, const GrammarFsm& newer);

class RuleDfaSnapshots {
 public:
  // Builds `rule` (and whatever it creates) onto a copy of `latest` and returns the copy: a
  // snapshot that `latest` is a prefix of, in which `rule` is built. Runs under the build
  // mutex. Must not fail: rules whose build could fail are built at compile.
  using Builder = std::function<GrammarFsm(const GrammarFsm& latest, RuleId rule)>;
  // Called under the build mutex with each new snapshot before readers can load it (the mask
  // cache grows its per-node tables there, so that no reader meets a node it has no slot for).
  using PublishListener = std::function<void(const std::shared_ptr<const GrammarFsm>& next)>;

  // `first` is the snapshot the compile built. Without a builder every rule of it must be
  // built (BuildGrammarFsm builds all of them today).
  explicit RuleDfaSnapshots(std::shared_ptr<const GrammarFsm> first, Builder builder = nullptr);

  // The snapshot the compile built (never replaced).
  const std::shared_ptr<const GrammarFsm>& first() const { return first_; }
  // The newest published snapshot.
  std::shared_ptr<const GrammarFsm> Latest() const;
  // A snapshot in which `rule` is built: the latest when it is built there already, otherwise
  // the one this call builds and publishes. Throws InternalError where nothing can build it
  // (no builder: an unbuilt rule in a grammar meant to be whole).
  std::shared_ptr<const GrammarFsm> BuildRule(RuleId rule);
  // A snapshot with every rule built: the latest where none is unbuilt, else the one the
  // builds of the rest end with ("build all first": serialization and FSM dumps).
  std::shared_ptr<const GrammarFsm> BuildAll();
  // Set once, before any reader asks for a build (CompiledGrammar's constructor).
  void SetPublishListener(PublishListener listener) { listener_ = std::move(listener); }
  // Builds run since construction.
  int64_t builds() const;

 private:
  const std::shared_ptr<const GrammarFsm> first_;
  Builder builder_;
  PublishListener listener_;
  // Guards latest_ and builds_, and serialises builds (one build at a time per grammar).
  mutable ForkSafeMutex mutex_;
  std::shared_ptr<const GrammarFsm> latest_;
  int64_t builds_ = 0;
};

}  // namespace xg2

#endif  // XG2_MATCHER_RULE_DFA_SNAPSHOTS_H_
