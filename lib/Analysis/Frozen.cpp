//===- Frozen.cpp - frozen modules ----------------------------------------===//

#include "parc/Analysis/Frozen.h"

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::parc;

bool mlir::parc::isFrozen(Operation *op) {
  for (Operation *cur = op; cur && !isa<ModelOp>(cur); cur = cur->getParentOp())
    if (cur->hasAttr(kFrozenAttrName))
      return true;
  return false;
}

LogicalResult mlir::parc::markFrozen(ModelOp model,
                                     ArrayRef<std::string> paths) {
  for (const std::string &path : paths) {
    auto module = dyn_cast_or_null<NNModuleOp>(lookupDottedPath(model, path));
    if (!module)
      return mlir::emitError(model->getLoc())
             << "frozen path '" << path << "' names no module of @"
             << model.getSymName();
    module->setAttr(kFrozenAttrName, UnitAttr::get(model.getContext()));
  }
  return success();
}

int64_t mlir::parc::countTrainableParameters(ModelOp model,
                                             int64_t totalParameters) {
  llvm::DenseSet<Operation *> aliases, frozenStorage;
  for (TieOp tie : model.getBody()->getOps<TieOp>()) {
    SmallVector<Operation *> members;
    for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>())
      if (Operation *param = SymbolTable::lookupSymbolIn(model, ref))
        members.push_back(param);
    if (members.empty())
      continue;
    aliases.insert(std::next(members.begin()), members.end());
    if (llvm::any_of(members, [](Operation *op) { return isFrozen(op); }))
      frozenStorage.insert(members.front());
  }
  int64_t frozen = 0;
  model.walk([&](ParamOp param) {
    if (!aliases.contains(param) &&
        (isFrozen(param) || frozenStorage.contains(param)))
      frozen += param.getNumElements();
  });
  return totalParameters - frozen;
}

