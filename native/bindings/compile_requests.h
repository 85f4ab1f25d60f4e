// A compile request of the Python GrammarCompiler (xg2_plugin/compiler.py) as the native compile
// it names: its kind, which is also the source name of its CompiledGrammar ("json_schema",
// "builtin_json", "ebnf", "regex", "lark", "choice", "structural_tag"), and its arguments as a
// tuple in the order compiler.py builds them. The arguments are converted once, with the GIL,
// so that the compile runs without it. This is the one place where the kinds meet their
// GrammarCompiler entries, for the one-call synchronous path and the general path's build alike
// (cached_compiler_bindings.cc).
#ifndef XG2_BINDINGS_COMPILE_REQUESTS_H_
#define XG2_BINDINGS_COMPILE_REQUESTS_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/grammar_compiler.h"

namespace xg2 {

struct RequestCompilation {
  std::shared_ptr<CompiledGrammar> grammar;
  std::vector<std::string> warnings;  // JSON Schema keywords ignored (lenient); empty for other kinds
};

using RequestCompile = std::function<RequestCompilation(const GrammarCompiler&, const CancellationToken*)>;

// The compile of request `kind` with `args` (GIL held). Throws TypeError for arguments of the
// wrong number or type and ValueError for an unknown kind (both are the Python layer's bugs:
// compiler.py checks what users pass before it builds a request).
RequestCompile CompileOfRequest(const std::string& kind, const pybind11::tuple& args);

}  // namespace xg2

#endif  // XG2_BINDINGS_COMPILE_REQUESTS_H_
