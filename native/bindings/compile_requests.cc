#include "bindings/compile_requests.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/json_schema_options.h"

namespace py = pybind11;

namespace xg2 {
namespace {

// The arguments of one request, each cast to what its compile takes.
class RequestArguments {
 public:
  RequestArguments(const std::string& kind, const py::tuple& args, size_t expected) : kind_(kind), args_(args) {
    if (args_.size() != expected) {
      throw py::type_error(kind_ + " compile request takes " + std::to_string(expected) + " arguments, got " +
                           std::to_string(args_.size()));
    }
  }

  template <typename T>
  T Get(size_t index, const char* name) const {
    try {
      return args_[index].cast<T>();
    } catch (const py::cast_error&) {
      throw py::type_error(kind_ + " compile request: " + name + " cannot be " +
                           py::str(py::type::handle_of(args_[index]).attr("__name__")).cast<std::string>());
    }
  }

 private:
  const std::string& kind_;
  const py::tuple& args_;
};

RequestCompile JsonSchemaCompile(const RequestArguments& args) {
  std::string text = args.Get<std::string>(0, "schema");
  const JsonSchemaOptions options = JsonSchemaOptionsFrom(
      args.Get<bool>(1, "any_whitespace"), args.Get<std::optional<int>>(2, "indent"),
      args.Get<JsonSchemaSeparators>(3, "separators"), args.Get<bool>(4, "strict_mode"),
      args.Get<std::optional<int>>(5, "max_whitespace"), args.Get<bool>(6, "lenient"), args.Get<bool>(7, "any_order"),
      args.Get<bool>(8, "any_key_spelling"));
  return [text = std::move(text), options](const GrammarCompiler& compiler, const CancellationToken* cancel) {
    JsonSchemaCompilation compiled = compiler.CompileJsonSchema(text, options, cancel);
    return RequestCompilation{std::move(compiled.grammar), std::move(compiled.warnings)};
  };
}

RequestCompile StructuralTagCompile(const RequestArguments& args) {
  auto lowered = args.Get<std::shared_ptr<LoweredStructuralTag>>(0, "lowered");
  if (!lowered) throw py::type_error("structural_tag compile request: lowered cannot be None");
  return [lowered = std::move(lowered)](const GrammarCompiler& compiler, const CancellationToken* cancel) {
    return RequestCompilation{compiler.CompileStructuralTag(lowered, cancel), {}};
  };
}

}  // namespace

RequestCompile CompileOfRequest(const std::string& kind, const py::tuple& tuple) {
  if (kind == "json_schema") return JsonSchemaCompile(RequestArguments(kind, tuple, 9));
  if (kind == "structural_tag") return StructuralTagCompile(RequestArguments(kind, tuple, 1));
  if (kind == "builtin_json") {
    RequestArguments(kind, tuple, 0);
    return [](const GrammarCompiler& compiler, const CancellationToken* cancel) {
      return RequestCompilation{compiler.CompileBuiltinJson(cancel), {}};
    };
  }
  if (kind == "ebnf") {
    const RequestArguments args(kind, tuple, 2);
    return [ebnf = args.Get<std::string>(0, "ebnf"), root = args.Get<std::string>(1, "root_rule_name")](
               const GrammarCompiler& compiler, const CancellationToken* cancel) {
      return RequestCompilation{compiler.CompileEbnf(ebnf, root, cancel), {}};
    };
  }
  if (kind == "regex" || kind == "lark") {
    const bool regex = kind == "regex";
    const RequestArguments args(kind, tuple, 1);
    return [text = args.Get<std::string>(0, regex ? "pattern" : "lark_string"), regex](
               const GrammarCompiler& compiler, const CancellationToken* cancel) {
      return RequestCompilation{regex ? compiler.CompileRegex(text, cancel) : compiler.CompileLark(text, cancel), {}};
    };
  }
  if (kind == "choice") {
    const RequestArguments args(kind, tuple, 1);
    return [choices = args.Get<std::vector<std::string>>(0, "choices")](const GrammarCompiler& compiler,
                                                                       const CancellationToken* cancel) {
      return RequestCompilation{compiler.CompileChoice(choices, cancel), {}};
    };
  }
  throw py::value_error("unknown compile request kind '" + kind + "'");
}

}  // namespace xg2
