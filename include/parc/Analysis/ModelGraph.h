//===- ModelGraph.h - walking a model -------------------------------*- C++ -*-===//
//
// The model's own graph (modules, parameters, forwards) without the lowered
// programs beside it.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_MODELGRAPH_H
#define PARC_ANALYSIS_MODELGRAPH_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::parc {

/// Calls `fn` on every op of the model's graph (modules, parameters, their
/// ops), not on the lowered parc.program steps: a program of a large plan
/// holds tens of thousands of steps that no question about the graph needs.
void walkModelGraph(ModelOp model, llvm::function_ref<void(Operation *)> fn);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_MODELGRAPH_H
