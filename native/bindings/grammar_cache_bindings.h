// The compiled-grammar cache as the bindings hold it: values are the Python CompiledGrammar
// objects of one Python GrammarCompiler (grammar_cache_bindings.cc binds it as
// _native.GrammarCache; cached_compiler_bindings.cc compiles into it and charges what it stores).
#ifndef XG2_BINDINGS_GRAMMAR_CACHE_BINDINGS_H_
#define XG2_BINDINGS_GRAMMAR_CACHE_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <memory>

#include "compiler/compile_cache.h"

namespace xg2 {

// A Python object the cache holds without the GIL: the last owner to let go takes the GIL to
// release it (a value may be evicted by any compiling thread).
using HeldObject = std::shared_ptr<pybind11::object>;
using PyGrammarCache = CompileCache<HeldObject>;

// Holds `object` (GIL held).
HeldObject Hold(pybind11::object object);

}  // namespace xg2

#endif  // XG2_BINDINGS_GRAMMAR_CACHE_BINDINGS_H_
