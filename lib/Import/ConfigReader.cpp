//===- ConfigReader.cpp - typed access to config.json ---------------------===//

#include "ConfigReader.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::parc;
namespace json = llvm::json;

ConfigReader::ConfigReader(MLIRContext *context, StringRef filename,
                           StringRef text)
    : context(context), source(context, filename, text) {}

Location ConfigReader::fileLoc(unsigned line, unsigned column) const {
  return source.fileLoc(line, column);
}

LogicalResult ConfigReader::parse() {
  FailureOr<llvm::json::Value> parsed = source.parse();
  if (mlir::failed(parsed))
    return failure();
  document = std::move(*parsed);
  if (!document.getAsObject()) {
    emitError(fileLoc()) << "config must be a JSON object";
    return failure();
  }
  return success();
}

ConfigSection ConfigReader::root() {
  return ConfigSection(*this, *document.getAsObject(), "");
}

Location ConfigReader::locate(StringRef dottedKey) const {
  return source.locate(dottedKey);
}

//===----------------------------------------------------------------------===//
// ConfigSection
//===----------------------------------------------------------------------===//

std::string ConfigSection::keyPath(StringRef key) const {
  return prefix.empty() ? key.str() : prefix + "." + key.str();
}

Location ConfigSection::loc(StringRef key) const {
  return reader.locate(keyPath(key));
}

const json::Value *ConfigSection::lookup(StringRef key) const {
  const json::Value *value = object.get(key);
  if (value && value->kind() == json::Value::Null)
    return nullptr;
  return value;
}

bool ConfigSection::has(StringRef key) const { return lookup(key); }

void ConfigSection::recordDefault(StringRef key) const {
  reader.addDefaulted(keyPath(key));
}

void ConfigSection::record(StringRef key, Attribute value) const {
  reader.recordValue(keyPath(key), value);
}

InFlightDiagnostic ConfigSection::error(StringRef key) const {
  reader.markFailed();
  return emitError(loc(key));
}

void ConfigSection::typeError(StringRef key, StringRef expected) const {
  error(key) << "key '" << keyPath(key) << "' must be " << expected;
}

std::optional<ConfigSection> ConfigSection::section(StringRef key) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    return std::nullopt;
  }
  if (const json::Object *nested = value->getAsObject())
    return ConfigSection(reader, *nested, keyPath(key));
  typeError(key, "an object");
  return std::nullopt;
}

int64_t ConfigSection::requireInt(StringRef key) const {
  const json::Value *value = lookup(key);
  if (!value) {
    error(key) << "missing required key '" << keyPath(key) << "'";
    return 1;
  }
  return getInt(key, 1);
}

std::string ConfigSection::requireString(StringRef key) const {
  const json::Value *value = lookup(key);
  if (!value) {
    error(key) << "missing required key '" << keyPath(key) << "'";
    return "";
  }
  return getString(key, "");
}

int64_t ConfigSection::getInt(StringRef key, int64_t defaultValue) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    record(key, Builder(reader.getContext()).getI64IntegerAttr(defaultValue));
    return defaultValue;
  }
  std::optional<int64_t> number = value->getAsInteger();
  if (!number) {
    typeError(key, "an integer");
    return defaultValue;
  }
  record(key, Builder(reader.getContext()).getI64IntegerAttr(*number));
  return *number;
}

int64_t ConfigSection::getSize(StringRef key, int64_t defaultValue,
                               int64_t max) const {
  int64_t value = getInt(key, defaultValue);
  if (value >= 1 && value <= max)
    return value;
  error(key) << "key '" << keyPath(key) << "' must be "
             << (value < 1 ? "positive" : "at most " + std::to_string(max))
             << ", got " << value;
  return 1;
}

int64_t ConfigSection::requireSize(StringRef key, int64_t max) const {
  if (!lookup(key)) {
    error(key) << "missing required key '" << keyPath(key) << "'";
    return 1;
  }
  return getSize(key, 1, max);
}

std::optional<int64_t>
ConfigSection::getOptionalInt(StringRef key,
                              std::optional<int64_t> defaultValue) const {
  if (!object.get(key)) {
    recordDefault(key);
    return defaultValue;
  }
  if (!lookup(key))
    return std::nullopt;
  return getInt(key, defaultValue.value_or(0));
}

double ConfigSection::getFloat(StringRef key, double defaultValue) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    record(key, Builder(reader.getContext()).getF64FloatAttr(defaultValue));
    return defaultValue;
  }
  std::optional<double> number = value->getAsNumber();
  if (!number) {
    typeError(key, "a number");
    return defaultValue;
  }
  record(key, Builder(reader.getContext()).getF64FloatAttr(*number));
  return *number;
}

std::optional<double>
ConfigSection::getOptionalFloat(StringRef key,
                                std::optional<double> defaultValue) const {
  if (!object.get(key)) {
    recordDefault(key);
    return defaultValue;
  }
  if (!lookup(key))
    return std::nullopt;
  return getFloat(key, defaultValue.value_or(0));
}

bool ConfigSection::getBool(StringRef key, bool defaultValue) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    record(key, Builder(reader.getContext()).getBoolAttr(defaultValue));
    return defaultValue;
  }
  std::optional<bool> flag = value->getAsBoolean();
  if (!flag) {
    typeError(key, "true or false");
    return defaultValue;
  }
  record(key, Builder(reader.getContext()).getBoolAttr(*flag));
  return *flag;
}

std::string ConfigSection::getString(StringRef key,
                                     StringRef defaultValue) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    record(key, Builder(reader.getContext()).getStringAttr(defaultValue));
    return defaultValue.str();
  }
  std::optional<StringRef> str = value->getAsString();
  if (!str) {
    typeError(key, "a string");
    return defaultValue.str();
  }
  record(key, Builder(reader.getContext()).getStringAttr(*str));
  return str->str();
}

std::optional<std::vector<std::string>>
ConfigSection::getStringList(StringRef key) const {
  const json::Value *value = lookup(key);
  if (!value) {
    recordDefault(key);
    return std::nullopt;
  }
  const json::Array *array = value->getAsArray();
  if (!array) {
    typeError(key, "a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> result;
  for (const json::Value &element : *array) {
    std::optional<StringRef> str = element.getAsString();
    if (!str) {
      typeError(key, "a list of strings");
      return std::nullopt;
    }
    result.push_back(str->str());
  }
  return result;
}

const json::Value *ConfigSection::getRaw(StringRef key) const {
  return lookup(key);
}
