//===- RecipeReader.h - the recipe reader's parts ------------*- C++ -*-===//
//
// Internal to lib/Plan: the reader that Recipe.cpp (flattening, settings,
// typed values) and RecipeCheck.cpp (the checks across keys) share, and the
// key table of RecipeKeys.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_PLAN_RECIPEREADER_H
#define PARC_LIB_PLAN_RECIPEREADER_H

#include "parc/Plan/Recipe.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>

namespace mlir::parc::recipe {

/// The table row of a dotted key; null for a key recipes do not have.
const RecipeKey *findRecipeKey(StringRef key);

/// Runs `body`, which yaml-cpp may throw from, and reports what it throws
/// through `errorAt`: a yaml-cpp exception as a malformed recipe at its
/// mark, anything else as a recipe that cannot be read (at a null mark).
/// Returns false when it threw.
bool reportRecipeExceptions(
    llvm::function_ref<void()> body,
    llvm::function_ref<InFlightDiagnostic(const YAML::Mark &)> errorAt);

/// A dotted key's value and where its key was written.
struct Entry {
  YAML::Node value;
  Location loc;
  /// Whether the value comes from the recipe file, whose relative paths
  /// resolve against the file's directory.
  bool fromFile;
  /// The key whose setting replaces this value (TranslatedEntry).
  std::string replacedBy = {};
};

class RecipeReader {
public:
  RecipeReader(MLIRContext *context, StringRef filename, StringRef baseDir)
      : context(context), filename(filename), baseDir(baseDir) {}

  FailureOr<PlanRequest> read(StringRef text, ArrayRef<RecipeSetting> settings);
  FailureOr<PlanRequest> read(const TranslatedRecipe &translated,
                              ArrayRef<RecipeSetting> settings);

private:
  Location fileLoc(unsigned line = 1, unsigned column = 1) const {
    if (filename.empty())
      return UnknownLoc::get(context);
    return FileLineColLoc::get(context, filename, line, column);
  }
  /// yaml-cpp counts lines and columns from 0.
  Location markLoc(const YAML::Mark &mark) const {
    if (mark.is_null())
      return fileLoc();
    return fileLoc(mark.line + 1, mark.column + 1);
  }
  InFlightDiagnostic error(Location loc) {
    failed = true;
    return emitError(loc);
  }
  InFlightDiagnostic error(const Entry &entry) { return error(entry.loc); }
  /// error() at a yaml-cpp mark, for reportRecipeExceptions.
  auto errorAtMark() {
    return [this](const YAML::Mark &mark) { return error(markLoc(mark)); };
  }

  void flatten(StringRef text);
  void load(const TranslatedRecipe &translated);
  /// The execution policies the recipe's framework runs where the recipe
  /// leaves them out.
  void applyFrameworkDefaults(PlanRequest &request);
  FailureOr<PlanRequest> finish(PlanRequest &request,
                                ArrayRef<RecipeSetting> settings);
  void apply(const RecipeSetting &setting);
  void build(PlanRequest &request);
  /// The checks across keys (RecipeCheck.cpp): the cluster, the layout
  /// using every GPU, the batch dividing into micro-batches, then the
  /// policies that need those. Each stops at its first error.
  void check(PlanRequest &request);
  bool checkCluster(PlanRequest &request);
  bool checkMicroBatchTokens(const PlanRequest &request);
  bool checkLayout(PlanRequest &request);
  bool checkBatch(PlanRequest &request);
  void checkPolicies(const PlanRequest &request);

  const Entry *lookup(StringRef key) const {
    auto it = entries.find(key.str());
    return it == entries.end() ? nullptr : &it->second;
  }
  void missing(StringRef key);
  /// A scalar's text, or an error naming what `key` must be.
  std::optional<std::string> scalar(StringRef key, StringRef expected);
  void readPositive(StringRef key, int64_t &out) { readAtLeast(key, out, 1); }
  /// A non-negative integer (a depth, a count that may be zero).
  void readCount(StringRef key, int64_t &out) { readAtLeast(key, out, 0); }
  void readAtLeast(StringRef key, int64_t &out, int64_t minimum);
  /// Whether `value` is within the key's bound (RecipeKey::max); an error
  /// naming the key if not.
  bool checkMax(const Entry &entry, StringRef key, int64_t value);
  void readNonNegative(StringRef key, double &out);
  void readString(StringRef key, std::string &out);
  void readChoice(StringRef key, ArrayRef<StringRef> choices, std::string &out);
  void readDtype(StringRef key, StorageDtype &out);
  void readList(StringRef key, std::vector<std::string> &out,
                StringRef what = "dotted paths");
  void readPositiveList(StringRef key, std::vector<int64_t> &out);
  void readRemat(StringRef key, std::string &out);
  /// The path at `key`, resolved and required to name a file.
  std::string readPath(StringRef key);

  MLIRContext *context;
  std::string filename;
  std::string baseDir;
  std::map<std::string, Entry> entries;
  /// cluster.gpus, the alternative to gpus_per_node.
  int64_t totalGpus = 0;
  RecipeFramework framework = RecipeFramework::Parc;
  bool failed = false;
};

} // namespace mlir::parc::recipe

#endif // PARC_LIB_PLAN_RECIPEREADER_H
