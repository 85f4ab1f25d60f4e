// Each bindings file registers itself here with XG2_REGISTER_BINDINGS, so a stage's Python
// surface lives next to nothing but its own declarations and module.cc needs no edit when a
// stage is added. Registration order is the order of the `order` key (then the name).
#ifndef XG2_BINDINGS_REGISTRY_H_
#define XG2_BINDINGS_REGISTRY_H_

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace xg2 {

using BindFunction = void (*)(pybind11::module_&);

struct BindingEntry {
  int order;
  std::string name;
  BindFunction bind;
};

std::vector<BindingEntry>& BindingRegistry();

struct BindingRegistrar {
  BindingRegistrar(int order, const char* name, BindFunction bind) {
    BindingRegistry().push_back({order, name, bind});
  }
};

}  // namespace xg2

#define XG2_CONCAT_INNER(a, b) a##b
#define XG2_CONCAT(a, b) XG2_CONCAT_INNER(a, b)
// Lower `order` binds first: exceptions 0, tokenizer 10, frontends 20, grammar 30, matcher 40.
#define XG2_REGISTER_BINDINGS(order, name, fn) \
  static ::xg2::BindingRegistrar XG2_CONCAT(xg2_binding_registrar_, __LINE__)(order, name, fn)

#endif  // XG2_BINDINGS_REGISTRY_H_
