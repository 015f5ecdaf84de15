//===- ConfigReader.h - typed access to config.json -------------*- C++ -*-===//
//
// Reads keys of a parsed config.json with the defaults of a transformers
// config class. Every default taken is recorded, every wrong type or missing
// required key becomes a diagnostic at the key's line, and reading goes on so
// that one run reports every problem.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_IMPORT_CONFIGREADER_H
#define PARC_LIB_IMPORT_CONFIGREADER_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OperationSupport.h"
#include "parc/Support/JSONSource.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::parc {

class ConfigReader;

/// One JSON object of the config (the root, `text_config`, ...), read with
/// its dotted prefix so diagnostics name the full key.
class ConfigSection {
public:
  ConfigSection(ConfigReader &reader, const llvm::json::Object &object,
                std::string prefix)
      : reader(reader), object(object), prefix(std::move(prefix)) {}

  bool has(llvm::StringRef key) const;
  std::string keyPath(llvm::StringRef key) const;
  Location loc(llvm::StringRef key) const;

  /// A nested object; nullopt when absent or null (recorded as defaulted).
  std::optional<ConfigSection> section(llvm::StringRef key) const;

  /// Required keys: a missing one is an error naming it.
  int64_t requireInt(llvm::StringRef key) const;
  std::string requireString(llvm::StringRef key) const;

  /// Keys with a class default.
  int64_t getInt(llvm::StringRef key, int64_t defaultValue) const;
  /// A size or count (dimensions, layers, heads, windows): an error unless
  /// in [1, max], and then 1, so that nothing is built from the bad value.
  /// A missing key without a default (`required`) is an error too.
  int64_t getSize(llvm::StringRef key, int64_t defaultValue,
                  int64_t max = kMaxDimension) const;
  int64_t requireSize(llvm::StringRef key, int64_t max = kMaxDimension) const;

  /// The largest dimension (hidden, intermediate, vocabulary, heads, image
  /// and window sizes) and layer count an import accepts: far above any
  /// published model, low enough that no product of them overflows and no
  /// import runs for long.
  static constexpr int64_t kMaxDimension = int64_t(1) << 24;
  static constexpr int64_t kMaxLayers = 4096;
  double getFloat(llvm::StringRef key, double defaultValue) const;
  bool getBool(llvm::StringRef key, bool defaultValue) const;
  std::string getString(llvm::StringRef key,
                        llvm::StringRef defaultValue) const;
  /// A number that may be null (disabled), e.g. final_logit_softcapping.
  std::optional<double>
  getOptionalFloat(llvm::StringRef key,
                   std::optional<double> defaultValue) const;
  std::optional<int64_t>
  getOptionalInt(llvm::StringRef key,
                 std::optional<int64_t> defaultValue) const;
  /// A list of strings; nullopt when absent or null.
  std::optional<std::vector<std::string>>
  getStringList(llvm::StringRef key) const;
  /// The raw value, for keys passed through (rope_scaling).
  const llvm::json::Value *getRaw(llvm::StringRef key) const;

  /// Emits an error about `key` (at its line) and marks the import failed.
  InFlightDiagnostic error(llvm::StringRef key) const;

private:
  const llvm::json::Value *lookup(llvm::StringRef key) const;
  void recordDefault(llvm::StringRef key) const;
  void record(llvm::StringRef key, Attribute value) const;
  void typeError(llvm::StringRef key, llvm::StringRef expected) const;

  ConfigReader &reader;
  const llvm::json::Object &object;
  std::string prefix;
};

/// Owns the parsed document and the bookkeeping of one import.
class ConfigReader {
public:
  ConfigReader(MLIRContext *context, llvm::StringRef filename,
               llvm::StringRef text);

  /// Parses the text; malformed JSON is reported with its line and column.
  LogicalResult parse();
  ConfigSection root();

  /// The location of `"key":` inside the object at `parentPath`, or of the
  /// parent when the key is absent.
  Location locate(llvm::StringRef dottedKey) const;
  Location fileLoc(unsigned line = 1, unsigned column = 1) const;

  MLIRContext *getContext() const { return context; }
  const std::vector<std::string> &getDefaultedKeys() const { return defaulted; }
  bool hadError() const { return failed; }
  void markFailed() { failed = true; }
  void addDefaulted(std::string key) { defaulted.push_back(std::move(key)); }
  /// Records the value a key took, given or defaulted.
  void recordValue(llvm::StringRef dottedKey, Attribute value) {
    effective.set(dottedKey, value);
  }
  /// Every key read, with the value it took.
  DictionaryAttr getEffectiveConfig() const {
    return effective.getDictionary(context);
  }

private:
  MLIRContext *context;
  JSONSource source;
  llvm::json::Value document = nullptr;
  std::vector<std::string> defaulted;
  NamedAttrList effective;
  bool failed = false;
};

} // namespace mlir::parc

#endif // PARC_LIB_IMPORT_CONFIGREADER_H
