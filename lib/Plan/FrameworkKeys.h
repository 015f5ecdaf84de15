//===- FrameworkKeys.h - other frameworks' job-file key tables --*- C++ -*-===//
//
// Internal to lib/Plan: the shape both job-file translators
// (TorchtitanJob.cpp, NemoRecipe.cpp) give their key tables, one row per
// key saying whether it plans something or is ignored, and the lookups and
// "known: ..." lists their unknown-key errors print.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_PLAN_FRAMEWORKKEYS_H
#define PARC_LIB_PLAN_FRAMEWORKKEYS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::parc::framework {

/// What parc does with another framework's key.
enum class KeyUse {
  /// Read by the translation: it plans something, or is refused there.
  Plan,
  /// Changes neither memory nor step time: listed as ignored.
  Ignore,
};

struct KeyRow {
  llvm::StringLiteral section;
  /// "*": every key of the section not named in a row of its own.
  llvm::StringLiteral name;
  KeyUse use;
};

/// The row of `section`.`name`, or of the section's "*"; null for a key
/// the table does not have.
inline const KeyRow *findKeyRow(ArrayRef<KeyRow> rows, StringRef section,
                                StringRef name) {
  const KeyRow *wildcard = nullptr;
  for (const KeyRow &row : rows) {
    if (row.section != section)
      continue;
    if (row.name == name)
      return &row;
    if (row.name == "*")
      wildcard = &row;
  }
  return wildcard;
}

inline bool hasSection(ArrayRef<KeyRow> rows, StringRef section) {
  return llvm::any_of(
      rows, [&](const KeyRow &row) { return row.section == section; });
}

/// "a, b, c": the table's sections in order.
inline std::string listSections(ArrayRef<KeyRow> rows) {
  llvm::SetVector<StringRef> sections;
  for (const KeyRow &row : rows)
    sections.insert(row.section);
  return llvm::join(sections, ", ");
}

/// "a, b, *": the keys of `section` in order.
inline std::string listKeys(ArrayRef<KeyRow> rows, StringRef section) {
  SmallVector<StringRef> names;
  for (const KeyRow &row : rows)
    if (row.section == section)
      names.push_back(row.name);
  return llvm::join(names, ", ");
}

} // namespace mlir::parc::framework

#endif // PARC_LIB_PLAN_FRAMEWORKKEYS_H
