//===- ModelGraph.cpp - walking a model -----------------------------------===//

#include "parc/Analysis/ModelGraph.h"

using namespace mlir;
using namespace mlir::parc;

void mlir::parc::walkModelGraph(ModelOp model,
                                llvm::function_ref<void(Operation *)> fn) {
  model.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<ProgramOp>(op))
      return WalkResult::skip();
    fn(op);
    return WalkResult::advance();
  });
}
