//===- FlopCount.cpp - FLOPs of a model's op graph ------------------------===//
//
// The FLOP tracer walks a forward the way the memory replay does: through
// parc.call into each callee's forward (ForwardWalk.h), with every tensor's
// shape at the run's batch and sequence and whether a gradient flows back
// into it. Each op reports its FLOPs for that query (FlopsOpInterface).
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/FlopCount.h"

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/LayerStacks.h"

using namespace mlir;
using namespace mlir::parc;

FlopCount &FlopCount::operator+=(const FlopCount &other) {
  forward += other.forward;
  backward += other.backward;
  recompute += other.recompute;
  matmulForward += other.matmulForward;
  attentionForward += other.attentionForward;
  return *this;
}

FlopCount &FlopCount::operator-=(const FlopCount &other) {
  forward -= other.forward;
  backward -= other.backward;
  recompute -= other.recompute;
  matmulForward -= other.matmulForward;
  attentionForward -= other.attentionForward;
  return *this;
}

FlopCount FlopCount::scaled(double factor) const {
  FlopCount flops = *this;
  flops.forward *= factor;
  flops.backward *= factor;
  flops.recompute *= factor;
  flops.matmulForward *= factor;
  flops.attentionForward *= factor;
  return flops;
}

namespace {

/// A tensor of the trace: its shape at the run's batch and sequence, and
/// whether a gradient flows back into it.
struct Tensor {
  SmallVector<int64_t> shape;
  bool requiresGrad = false;
  double elements() const {
    double count = 1;
    for (int64_t extent : shape)
      count *= double(extent);
    return count;
  }
  int64_t lastDim() const { return shape.empty() ? 1 : shape.back(); }
};

class FlopTracer : public ForwardWalker<FlopTracer, Tensor> {
public:
  FlopTracer(int64_t batch, int64_t tokens, bool stopAtLayers, RematKind remat)
      : ForwardWalker(stopAtLayers), batch(batch), tokens(tokens),
        remat(remat) {}

  FlopCount trace(func::FuncOp forward, bool argsRequireGrad) {
    SmallVector<Tensor> args;
    for (BlockArgument arg : forward.getArguments())
      args.push_back(newTensor(arg.getType(), argsRequireGrad));
    walk(forward, args);
    return result;
  }

  /// Root traces only: whether each layer's input needs a gradient.
  llvm::DenseMap<Operation *, bool> layerInputGrad;
  /// Root traces only: the count when the last layer was called.
  FlopCount beforeLastLayer;

private:
  Tensor newTensor(Type type, bool requiresGrad) {
    Tensor tensor;
    tensor.requiresGrad = requiresGrad;
    if (auto ranked = dyn_cast<RankedTensorType>(type))
      for (auto [dim, extent] : llvm::enumerate(ranked.getShape()))
        tensor.shape.push_back(ShapedType::isDynamic(extent)
                                   ? (dim == 0 ? batch : tokens)
                                   : extent);
    else
      tensor.shape.push_back(0);
    return tensor;
  }

  static bool anyGrad(ArrayRef<Tensor> tensors) {
    return llvm::any_of(tensors,
                        [](const Tensor &t) { return t.requiresGrad; });
  }

  bool hasTrainableParams(NNModuleOp module) {
    auto [it, inserted] = trainableModules.try_emplace(module, false);
    if (inserted)
      module.walk([&](ParamOp param) {
        if (!isFrozen(param))
          it->second = true;
      });
    return it->second;
  }

public:
  /// A layer called from the root's trace, or a module without a forward:
  /// its results need a gradient when its input or its parameters do.
  SmallVector<Tensor> visitOpaqueCall(CallOp call, NNModuleOp callee,
                                      ArrayRef<Tensor> operands) {
    bool inputGrad = anyGrad(operands);
    if (callee)
      layerInputGrad[callee] = inputGrad;
    if (callee && getLayerTag(callee))
      beforeLastLayer = result;
    bool grad = inputGrad || (callee && hasTrainableParams(callee));
    SmallVector<Tensor> results;
    for (Value value : call.getResults())
      results.push_back(newTensor(value.getType(), grad));
    return results;
  }

  SmallVector<Tensor> visitOp(Operation &op, ArrayRef<Tensor> operands) {
    return traceOp(op, operands);
  }

private:
  ParamOp lookupParam(Operation &op, SymbolRefAttr ref) {
    return ref ? tables.lookupNearestSymbolFrom<ParamOp>(&op, ref) : ParamOp();
  }
  static bool isTrainable(ParamOp param) { return param && !isFrozen(param); }

  SmallVector<Tensor> traceOp(Operation &op, ArrayRef<Tensor> operands) {
    ParamOp weight = lookupParam(op, op.getAttrOfType<SymbolRefAttr>("weight"));
    ParamOp bias = lookupParam(op, op.getAttrOfType<SymbolRefAttr>("bias"));
    bool weightGrad = isTrainable(weight);
    bool biasGrad = isTrainable(bias);
    bool inputGrad = anyGrad(operands);
    bool outputGrad = inputGrad || weightGrad || biasGrad;
    SmallVector<Tensor> results;
    for (Value value : op.getResults())
      results.push_back(newTensor(value.getType(), outputGrad));

    OpFlops flops;
    if (auto counted = dyn_cast<FlopsOpInterface>(op)) {
      SmallVector<SmallVector<int64_t>> shapes;
      for (const Tensor &operand : operands)
        shapes.push_back(operand.shape);
      FlopQuery query;
      query.operandShapes = shapes;
      query.resultShape = results.empty() ? ArrayRef<int64_t>()
                                          : ArrayRef(results.front().shape);
      query.weightElements = weight ? weight.getNumElements() : 0;
      query.hasBias = op.hasAttr("bias");
      query.weightGrad = weightGrad;
      query.biasGrad = biasGrad;
      query.inputGrad = inputGrad;
      flops = counted.getFlops(query);
    }
    result.forward += flops.forward;
    result.backward += flops.backward;
    result.matmulForward += flops.matmul;
    result.attentionForward += flops.attention;
    if (remat == RematKind::Full ||
        (remat == RematKind::Selective && op.hasAttr("parc.recompute")) ||
        (remat == RematKind::Op && !op.hasAttr(kRematSaveAttrName)))
      result.recompute += flops.forward;
    return results;
  }

  int64_t batch, tokens;
  RematKind remat;
  llvm::DenseMap<Operation *, bool> trainableModules;
  FlopCount result;
};

} // namespace

FlopCount mlir::parc::countLayerFlops(NNModuleOp layer, RematKind remat,
                                      int64_t batch, int64_t tokens,
                                      bool inputRequiresGrad) {
  return FlopTracer(batch, tokens, /*stopAtLayers=*/false, remat)
      .trace(layer.getForward(), inputRequiresGrad);
}

RootFlops mlir::parc::countRootFlops(ModelOp model, int64_t batch,
                                     int64_t tokens) {
  RootFlops flops;
  auto forward = dyn_cast_or_null<func::FuncOp>(
      SymbolTable::lookupSymbolIn(model, "forward"));
  if (!forward)
    return flops;
  FlopTracer tracer(batch, tokens, /*stopAtLayers=*/true, RematKind::None);
  flops.total = tracer.trace(forward, /*argsRequireGrad=*/false);
  flops.head = tracer.beforeLastLayer;
  flops.tail = flops.total;
  flops.tail -= flops.head;
  flops.layerInputGrad = std::move(tracer.layerInputGrad);
  return flops;
}
