//===- TpShards.cpp - record how every op runs under TP -------------------===//
//
// Propagates what a TP rank holds of each value through the model's
// forwards, op by op, by each op's TpShardingOpInterface, and records the
// decisions. This is the only place the split of a value is derived: the
// activation trace, the lowering, plan.bin and parc-run read the record.
//
//===----------------------------------------------------------------------===//

#include "TpShards.h"

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/LayerStacks.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <utility>

using namespace mlir;
using namespace mlir::parc;

namespace {

class Propagation {
public:
  Propagation(ModelOp model, bool sequenceParallel, bool lossParallel)
      : model(model), sequenceParallel(sequenceParallel),
        lossParallel(lossParallel) {}

  LogicalResult run(func::FuncOp forward, ArrayRef<TpShard> args, CallOp caller,
                    SmallVectorImpl<TpShard> &returned);

private:
  TpRole roleOf(Operation &op, StringRef name) {
    auto ref = op.getAttrOfType<SymbolRefAttr>(name);
    auto param =
        ref ? tables.lookupNearestSymbolFrom<ParamOp>(&op, ref) : ParamOp();
    return param ? getTpRole(param).value_or(TpRole::Replicated)
                 : TpRole::Replicated;
  }
  /// "'parc.linear' on 'model.layers.0.mlp.down_proj.weight'".
  std::string describe(Operation &op) {
    std::string what = "'" + op.getName().getStringRef().str() + "'";
    if (auto ref = op.getAttrOfType<SymbolRefAttr>("weight"))
      if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(&op, ref))
        what += " on '" + getDottedPath(param) + "'";
    return what;
  }
  std::string moduleOf(func::FuncOp forward) {
    auto module = forward->getParentOfType<NNModuleOp>();
    return module ? "'" + getDottedPath(module) + "'" : "the model";
  }

  ModelOp model;
  bool sequenceParallel, lossParallel;
  SymbolTableCollection tables;
  struct Seen {
    SmallVector<TpShard> args, returned;
    CallOp caller;
  };
  llvm::DenseMap<Operation *, Seen> seen;
};

LogicalResult Propagation::run(func::FuncOp forward, ArrayRef<TpShard> args,
                               CallOp caller,
                               SmallVectorImpl<TpShard> &returned) {
  MLIRContext *ctx = forward.getContext();
  // Diagnostics go through mlir::emitError(loc), as ApplyTp's do, so that
  // the op is not printed after them.
  // A module's forward is recorded once, for the split its call passes.
  if (auto it = seen.find(forward); it != seen.end()) {
    if (it->second.args != ArrayRef(args)) {
      InFlightDiagnostic diag =
          mlir::emitError(caller.getLoc())
          << "apply-tp: " << moduleOf(forward)
          << " is called with differently split arguments; a module's ops "
             "are split one way";
      diag.attachNote(it->second.caller.getLoc()) << "first called here";
      return diag;
    }
    returned.assign(it->second.returned);
    return success();
  }
  forward->setAttr(kTpShardsAttrName, TpShardsAttr::get(ctx, args, {}, {}));
  llvm::DenseMap<Value, TpShard> shards;
  for (auto [arg, shard] : llvm::zip(forward.getArguments(), args))
    shards[arg] = shard;
  for (Operation &op : forward.getBody().front()) {
    SmallVector<TpShard> operands;
    for (Value operand : op.getOperands())
      operands.push_back(shards.lookup(operand));
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, shard] : llvm::enumerate(operands)) {
        if (shard == TpShard::Features || shard == TpShard::Vocab)
          return mlir::emitError(ret.getLoc())
                 << "apply-tp: the forward of " << moduleOf(forward)
                 << " returns a value split over TP ranks (result " << i
                 << "); TP-split values stay inside one module";
        if (!caller && i == 0 && shard != TpShard::Full)
          return mlir::emitError(ret.getLoc())
                 << "apply-tp: the model's result is split over the "
                    "sequence; under sequence parallel the forward ends in "
                    "a loss, which gathers it";
      }
      returned.assign(operands);
      continue;
    }
    auto rule = dyn_cast<TpShardingOpInterface>(op);
    auto call = dyn_cast<CallOp>(op);
    if (!rule && !call)
      return mlir::emitError(op.getLoc())
             << "apply-tp: '" << op.getName()
             << "' has no TP sharding rule "
                "(TpShardingOpInterface) in the forward of "
             << moduleOf(forward);
    // Vocab shards are all-gathered before an op that does not keep them.
    SmallVector<int32_t> gather;
    for (auto [i, shard] : llvm::enumerate(operands))
      if (shard == TpShard::Vocab &&
          !(rule && rule.keepsVocabShards(i, lossParallel))) {
        gather.push_back(i);
        shard = TpShard::Full;
      }
    SmallVector<TpShard> results;
    SmallVector<TpComm> comms;
    if (call) {
      if (llvm::is_contained(operands, TpShard::Features))
        return mlir::emitError(call.getLoc())
               << "apply-tp: passes values split over TP ranks to '"
               << call.getCallee()
               << "'; TP-split values stay inside one module";
      auto callee =
          dyn_cast_or_null<func::FuncOp>(call.resolveCallableInTable(&tables));
      if (callee) {
        // A vision tower's layers run on image features that no vocab
        // embedding scattered over the sequence: tensor-parallel without
        // sequence parallelism, as Megatron's and NeMo's vision encoders.
        auto module = callee->getParentOfType<NNModuleOp>();
        auto tag = module ? getLayerTag(module) : std::nullopt;
        bool outer = sequenceParallel;
        if (tag && isVisionStack(tag->first))
          sequenceParallel = false;
        LogicalResult ran = run(callee, operands, call, results);
        sequenceParallel = outer;
        if (failed(ran))
          return failure();
      } else {
        results.assign(call.getNumResults(), TpShard::Full);
      }
    } else {
      TpShardQuery query;
      query.operands = operands;
      query.weight = roleOf(op, "weight");
      query.hasBias = bool(op.getAttrOfType<SymbolRefAttr>("bias"));
      query.bias = roleOf(op, "bias");
      query.sequenceParallel = sequenceParallel;
      query.lossParallel = lossParallel;
      if (failed(rule.inferTpShards(query)))
        return mlir::emitError(op.getLoc())
               << "apply-tp: " << describe(op) << " " << query.refusal;
      results.assign(op.getNumResults(), query.result);
      comms = query.comms;
    }
    op.setAttr(kTpShardsAttrName,
               TpShardsAttr::get(ctx, results, comms, gather));
    for (auto [value, shard] : llvm::zip(op.getResults(), results))
      shards[value] = shard;
  }
  Seen &record = seen[forward];
  record.args.assign(args.begin(), args.end());
  record.returned.assign(returned.begin(), returned.end());
  record.caller = caller;
  return success();
}

} // namespace

LogicalResult mlir::parc::recordTpShards(ModelOp model, bool sequenceParallel,
                                         bool lossParallel) {
  auto forward = dyn_cast_or_null<func::FuncOp>(
      SymbolTable::lookupSymbolIn(model, "forward"));
  if (!forward)
    return success();
  Propagation propagation(model, sequenceParallel, lossParallel);
  SmallVector<TpShard> args(forward.getNumArguments(), TpShard::Full);
  SmallVector<TpShard> returned;
  if (succeeded(propagation.run(forward, args, CallOp(), returned)))
    return success();
  model.walk([](Operation *op) { op->removeAttr(kTpShardsAttrName); });
  return failure();
}

namespace {

/// The TP collectives of a forward in execution order, and their backward
/// conjugates (Megatron's f / g pairs), read from the `parc.tp_shards` record
/// apply-tp put on each op, as parc-run runs them: a replicated input copied
/// into column-parallel linears all-reduces its gradient once, however many
/// linears read it in a row (q, k and v), as a sequence-parallel input is
/// all-gathered once (backward: reduce-scatter); a partial output
/// all-reduces (row-parallel linear, vocab embedding) or, under sequence
/// parallel, reduce-scatters (backward: all-gather); vocab-parallel loss
/// all-reduces three fp32 statistics per token; logits gathered over the
/// vocabulary are the padded vocabulary wide. Replicated weights' gradient
/// all-reduces (weight_grad, bias_grad) are per parameter, not per token,
/// and are not traffic here. Each value is a tensor identity (0: none), so
/// that "the same input" means what it means to parc-run.
class TpCollectiveWalker : public ForwardWalker<TpCollectiveWalker, int> {
public:
  TpCollectiveWalker(bool stopAtLayers, NNModuleOp lastLayer, Type compute,
                     int64_t tpSize)
      : ForwardWalker(stopAtLayers), lastLayer(lastLayer), compute(compute),
        tpSize(tpSize) {}

  /// Before the last layer (the root's head) and after it (its tail); a
  /// layer's own traffic is all in `head`.
  TpTraffic head, tail;

  void run(func::FuncOp forward) {
    walk(forward, fresh(forward.getNumArguments()));
    std::reverse(head.backward.begin(), head.backward.end());
    std::reverse(tail.backward.begin(), tail.backward.end());
  }

  SmallVector<int> visitOp(Operation &op, ArrayRef<int> operands) {
    if (TpShardsAttr shards = getTpShards(&op))
      record(op, shards, operands);
    return fresh(op.getNumResults());
  }

  SmallVector<int> visitOpaqueCall(CallOp call, NNModuleOp callee,
                                   ArrayRef<int>) {
    if (callee && callee == lastLayer)
      inTail = true;
    return fresh(call.getNumResults());
  }

private:
  TpTraffic &current() { return inTail ? tail : head; }

  Type elementOf(Value value) {
    if (compute || !value)
      return compute;
    return cast<ShapedType>(value.getType()).getElementType();
  }

  SmallVector<int> fresh(unsigned n) {
    SmallVector<int> ids;
    for (unsigned i = 0; i < n; ++i)
      ids.push_back(++lastId);
    return ids;
  }

  void push(CollectiveKind forward, std::optional<CollectiveKind> backward,
            int64_t elements, Type element) {
    current().forward.push_back({forward, elements, element});
    if (backward)
      current().backward.push_back({*backward, elements, element});
  }

  void record(Operation &op, TpShardsAttr shards, ArrayRef<int> operands) {
    using CK = CollectiveKind;
    int input = operands.empty() ? 0 : operands.front();
    int64_t inWidth = op.getNumOperands() ? lastDim(op.getOperand(0).getType())
                                          : 1;
    int64_t outWidth =
        op.getNumResults() ? lastDim(op.getResult(0).getType()) : 1;
    Type in = elementOf(op.getNumOperands() ? op.getOperand(0) : Value());
    Type out = elementOf(op.getNumResults() ? op.getResult(0) : Value());
    for (TpComm comm : shards.getComms()) {
      switch (comm) {
      case TpComm::CopyInput:
        if (std::exchange(lastCopied, input) != input)
          current().backward.push_back({CK::AllReduce, inWidth, in});
        break;
      case TpComm::GatherSequence:
        if (std::exchange(lastGathered, input) != input)
          push(CK::AllGather, CK::ReduceScatter, inWidth, in);
        break;
      case TpComm::Reduce:
        push(CK::AllReduce, std::nullopt, outWidth, out);
        break;
      case TpComm::ScatterSequence:
        push(CK::ReduceScatter, CK::AllGather, outWidth, out);
        break;
      case TpComm::VocabLoss:
        push(CK::AllReduce, std::nullopt, kVocabLossStatistics,
             Float32Type::get(op.getContext()));
        break;
      case TpComm::WeightGrad:
      case TpComm::BiasGrad:
        break;
      }
    }
    for (int32_t operand : shards.getGather())
      push(CK::AllGather, std::nullopt,
           llvm::alignTo(lastDim(op.getOperand(operand).getType()), tpSize),
           elementOf(op.getOperand(operand)));
  }

  static int64_t lastDim(Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() == 0 ||
        ShapedType::isDynamic(tensor.getShape().back()))
      return 1;
    return tensor.getShape().back();
  }

  /// Vocab-parallel cross-entropy's statistics per token: the logit max,
  /// the target logit and the sum of exponentials.
  static constexpr int64_t kVocabLossStatistics = 3;

  NNModuleOp lastLayer;
  Type compute;
  int64_t tpSize;
  bool inTail = false;
  int lastId = 0, lastCopied = 0, lastGathered = 0;
};

} // namespace

TpTrafficSplit mlir::parc::getTpTraffic(func::FuncOp forward, int64_t tpSize,
                                        Type compute, bool stopAtLayers,
                                        NNModuleOp lastLayer) {
  TpCollectiveWalker walker(stopAtLayers, lastLayer, compute, tpSize);
  walker.run(forward);
  return {std::move(walker.head), std::move(walker.tail)};
}
