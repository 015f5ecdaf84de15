//===- Frozen.cpp - frozen modules ----------------------------------------===//

#include "parc/Analysis/Frozen.h"

#include "Parc/IR/ParcOps.h"

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
