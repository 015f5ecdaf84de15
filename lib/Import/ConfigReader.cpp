//===- ConfigReader.cpp - typed access to config.json ---------------------===//

#include "ConfigReader.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::parc;
namespace json = llvm::json;

ConfigReader::ConfigReader(MLIRContext *context, StringRef filename,
                           StringRef text)
    : context(context), filename(filename.str()), text(text) {}

Location ConfigReader::fileLoc(unsigned line, unsigned column) const {
  return FileLineColLoc::get(context, filename, line, column);
}

LogicalResult ConfigReader::parse() {
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    // json::ParseError prints "[line:column, byte=offset]: message".
    std::string message = llvm::toString(parsed.takeError());
    llvm::SmallVector<StringRef> groups;
    llvm::Regex pattern("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
    unsigned line = 1, column = 1;
    StringRef detail = message;
    if (pattern.match(message, &groups)) {
      groups[1].getAsInteger(10, line);
      groups[2].getAsInteger(10, column);
      detail = groups[3];
    }
    emitError(fileLoc(line, column)) << "malformed JSON: " << detail;
    return failure();
  }
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

/// Finds `"key"` followed by `:` at or after `from`; npos if absent.
static size_t findKey(StringRef text, StringRef key, size_t from) {
  std::string quoted = ("\"" + key + "\"").str();
  for (size_t pos = text.find(quoted, from); pos != StringRef::npos;
       pos = text.find(quoted, pos + 1)) {
    size_t after = pos + quoted.size();
    while (after < text.size() && llvm::isSpace(text[after]))
      ++after;
    if (after < text.size() && text[after] == ':')
      return pos;
  }
  return StringRef::npos;
}

Location ConfigReader::locate(StringRef dottedKey) const {
  llvm::SmallVector<StringRef> parts;
  dottedKey.split(parts, '.');
  size_t pos = 0, found = StringRef::npos;
  for (StringRef part : parts) {
    size_t next = findKey(text, part, pos);
    if (next == StringRef::npos)
      break;
    found = pos = next;
  }
  if (found == StringRef::npos)
    return fileLoc();
  StringRef before = text.take_front(found);
  unsigned line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  unsigned column = found - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
  return fileLoc(line, column);
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
