//===- ModelStats.h - parameter counts of a parc.model ----------*- C++ -*-===//

#ifndef PARC_ANALYSIS_MODELSTATS_H
#define PARC_ANALYSIS_MODELSTATS_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/DenseMap.h"
#include <map>
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::parc {

/// Parameter counts of a model with tied parameters counted once, as
/// `model.parameters()` yields each shared tensor once. A tie group's storage
/// is owned by its first entry; the other entries are aliases and add nothing.
struct ModelStats {
  int64_t totalParameters = 0;
  /// Parameters per module subtree (aliases excluded), by module op.
  llvm::DenseMap<Operation *, int64_t> subtreeParameters;
  /// Parameters per element type, e.g. "bf16".
  std::map<std::string, int64_t> parametersByDtype;
  /// Tie groups as dotted paths, owner first.
  std::vector<std::vector<std::string>> tieGroups;
  /// Aliased parameter paths mapped to the path that owns their storage.
  llvm::StringMap<std::string> aliasOwner;

  static ModelStats compute(ModelOp model);

  /// Prints the total on the first line, then subtrees down to `maxDepth`,
  /// dtypes and ties.
  void print(ModelOp model, llvm::raw_ostream &os, unsigned maxDepth) const;
};

/// The short name MLIR prints for an element type ("bf16", "f32").
std::string getDtypeName(Type elementType);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_MODELSTATS_H
