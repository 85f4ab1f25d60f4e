// Minimisation by a chosen algorithm, for the native tests that compare the algorithms on one
// machine (Minimize, dfa_minimisation.h, picks its own). Kept out of dfa_minimisation.h so
// that the engine's sources do not see it.
#ifndef XG2_GRAMMAR_DFA_MINIMISATION_TESTING_H_
#define XG2_GRAMMAR_DFA_MINIMISATION_TESTING_H_

#include "grammar/fsm_automata.h"

namespace xg2 {
namespace fsm_build {

enum class MinimisationAlgorithm { kMoore, kHopcroft };

// The minimal Dfa of `dfa` by `algorithm` over the whole machine (no one-pass attempt),
// renumbered canonically as Minimize's result is.
Dfa MinimizeWith(const FlatDfa& dfa, MinimisationAlgorithm algorithm);

// Whether two Dfas are identical node by node, edge by edge and loop by loop.
bool SameDfa(const Dfa& a, const Dfa& b);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_DFA_MINIMISATION_TESTING_H_
