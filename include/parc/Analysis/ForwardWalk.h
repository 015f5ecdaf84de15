//===- ForwardWalk.h - walk a forward with calls inlined --------*- C++ -*-===//
//
// The activation trace, the cost model, the TP collectives of the lowering
// and apply-tp's op graph all read a layer's forward as one straight line of
// primitive ops: a parc.call is followed into the callable it resolves to
// (CallOpInterface: the callee module's @forward), so that a tensor passed
// down keeps its identity (the norm output that q, k and v all read is one
// tensor). This walker owns that inlining; each user says only what a
// tensor is and what an op does to it.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_FORWARDWALK_H
#define PARC_ANALYSIS_FORWARDWALK_H

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/LayerStacks.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::parc {

/// CRTP base. `Derived` provides
///   SmallVector<TensorT> visitOp(Operation &op, ArrayRef<TensorT> operands);
///   SmallVector<TensorT> visitOpaqueCall(CallOp call, NNModuleOp callee,
///                                        ArrayRef<TensorT> operands);
/// visitOpaqueCall sees calls that are not inlined: into a discovered layer
/// when `stopAtLayers` (the root's own trace), or into a module without a
/// forward (callee may then be null).
template <typename Derived, typename TensorT>
class ForwardWalker {
public:
  explicit ForwardWalker(bool stopAtLayers) : stopAtLayers(stopAtLayers) {}

  /// Walks `forward` with `args` bound to its arguments; returns what it
  /// returns.
  SmallVector<TensorT> walk(func::FuncOp forward, ArrayRef<TensorT> args) {
    llvm::DenseMap<Value, TensorT> values;
    for (auto [arg, tensor] : llvm::zip(forward.getArguments(), args))
      values[arg] = tensor;
    SmallVector<TensorT> returned;
    for (Operation &op : forward.getBody().front()) {
      SmallVector<TensorT> operands;
      for (Value operand : op.getOperands())
        operands.push_back(values.lookup(operand));
      if (isa<func::ReturnOp>(op)) {
        returned = std::move(operands);
        continue;
      }
      SmallVector<TensorT> results;
      if (auto call = dyn_cast<CallOp>(op))
        results = walkCall(call, operands);
      else
        results = derived().visitOp(op, operands);
      for (auto [value, tensor] : llvm::zip(op.getResults(), results))
        values[value] = tensor;
    }
    return returned;
  }

protected:
  SymbolTableCollection tables;
  bool stopAtLayers;

private:
  Derived &derived() { return static_cast<Derived &>(*this); }

  SmallVector<TensorT> walkCall(CallOp call, ArrayRef<TensorT> operands) {
    auto forward =
        dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&tables));
    auto callee = forward ? forward->getParentOfType<NNModuleOp>()
                          : tables.lookupNearestSymbolFrom<NNModuleOp>(
                                call, call.getCallee());
    if (!forward || (stopAtLayers && getLayerTag(callee)))
      return derived().visitOpaqueCall(call, callee, operands);
    return walk(forward, operands);
  }
};

} // namespace mlir::parc

#endif // PARC_ANALYSIS_FORWARDWALK_H
