//===- TpShards.cpp - record how every op runs under TP -------------------===//
//
// Propagates what a TP rank holds of each value through the model's
// forwards, op by op, by each op's TpShardingOpInterface, and records the
// decisions. This is the only place the split of a value is derived: the
// activation trace, the lowering, plan.bin and parc-run read the record.
//
//===----------------------------------------------------------------------===//

#include "TpShards.h"

#include "llvm/ADT/DenseMap.h"

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
        if (failed(run(callee, operands, call, results)))
          return failure();
      } else {
        results.assign(call.getNumResults(), TpShard::Full);
      }
    } else {
      bool sequence = llvm::is_contained(operands, TpShard::Sequence);
      if (sequence && llvm::any_of(operands, [](TpShard shard) {
            return shard != TpShard::Sequence;
          }))
        return mlir::emitError(op.getLoc())
               << "apply-tp: " << describe(op)
               << " mixes sequence-parallel values with "
                  "others";
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
