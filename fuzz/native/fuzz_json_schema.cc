// libFuzzer target: the JSON Schema frontend. The input is schema text; its length picks the
// options (bit 0: any_whitespace, bit 1: any_order, bit 2: strict_mode off, bit 3: indent 2,
// bit 4: at most 2 whitespace characters per gap);
// a schema the strict converter refuses as unsupported is converted again leniently. A schema
// that converts is compiled and matched briefly against its own first bytes.
#include "frontends/json_schema/json_schema_converter.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xg2::fuzz;
  const std::string_view schema = AsText(data, size);
  xg2::JsonSchemaOptions options;
  options.any_whitespace = size & 1;
  options.any_order = size & 2;
  options.strict_mode = !(size & 4);
  if (size & 8) options.indent = 2;
  if (size & 16) options.max_whitespace = 2;
  xg2::JsonSchemaConversion conversion;
  auto convert = [&] {
    xg2::ScopedCompileLimits scope(&Limits());
    conversion = xg2::JsonSchemaToEbnf(schema, options);
  };
  bool converted = false;
  try {
    convert();
    converted = true;
  } catch (const xg2::UnsupportedSchemaError&) {
    options.lenient = true;
    converted = ExpectTyped(convert);
  } catch (const xg2::Error&) {
  }
  if (!converted) return 0;
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  try {
    grammar = Compile(conversion.ebnf);
  } catch (const xg2::GrammarSyntaxError& error) {
    Fail("JSON Schema converter produced EBNF that does not parse:", error.what());
  } catch (const xg2::Error&) {
    return 0;
  }
  MatchBriefly(grammar, schema.substr(0, 64));
  return 0;
}
