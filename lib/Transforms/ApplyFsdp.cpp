//===- ApplyFsdp.cpp - group parameters into FSDP units -------------------===//
//
// One unit per discovered layer plus a root unit for everything outside the
// layers, as torchtitan wraps a model with fully_shard: blocks first, then the
// root. Every parameter is sharded along dim 0 over the `fsdp` axis of a
// shard.grid; a tie group is owned by one unit and stored once.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYFSDP
#include "parc/Transforms/Passes.h.inc"

namespace {

constexpr int kRootUnit = -1;

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Which unit owns each parameter: the innermost layer that contains it, or
/// the root. A tie group split across units moves wholly to the root so that
/// its one storage lives in one unit.
struct UnitAssignment {
  llvm::DenseMap<Operation *, int> unitOf;
  /// Tie aliases, mapped to the parameter owning their storage.
  llvm::DenseMap<Operation *, ParamOp> aliasOwner;
};

UnitAssignment assignUnits(ModelOp model, ArrayRef<NNModuleOp> layers) {
  UnitAssignment assignment;
  model.walk([&](ParamOp param) { assignment.unitOf[param] = kRootUnit; });
  for (int index = 0, e = layers.size(); index < e; ++index)
    NNModuleOp(layers[index]).walk([&](ParamOp param) {
      assignment.unitOf[param] = index;
    });
  for (TieOp tie : model.getBody()->getOps<TieOp>()) {
    SmallVector<ParamOp> members;
    for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>())
      members.push_back(cast<ParamOp>(SymbolTable::lookupSymbolIn(model, ref)));
    int unit = assignment.unitOf[members.front()];
    for (ParamOp member : members)
      if (assignment.unitOf[member] != unit)
        unit = kRootUnit;
    for (ParamOp member : members) {
      assignment.unitOf[member] = unit;
      if (member != members.front())
        assignment.aliasOwner[member] = members.front();
    }
  }
  return assignment;
}

struct ApplyFsdpPass : public impl::ApplyFsdpBase<ApplyFsdpPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(applyTo(getOperation())))
      signalPassFailure();
  }

  LogicalResult applyTo(ModelOp model) {
    if (shards < 1)
      return mlir::emitError(model->getLoc())
             << "apply-fsdp needs shards >= 1, got " << int64_t(shards);
    if (prefetch < 0)
      return mlir::emitError(model->getLoc())
             << "apply-fsdp needs prefetch >= 0, got " << int64_t(prefetch);
    MLIRContext *context = model.getContext();
    Type compute = getStorageType(context, computeDtype);
    Type master = getStorageType(context, masterDtype);
    Type reduce = getStorageType(context, reduceDtype);
    Type optim = getStorageType(context, optimDtype);

    // Re-running replaces the previous plan.
    for (Operation &op : llvm::make_early_inc_range(*model.getBody()))
      if (isa<FsdpUnitOp>(op) ||
          (isa<shard::GridOp>(op) &&
           llvm::is_contained({kFsdpGridName, kDpGridName},
                              cast<shard::GridOp>(op).getSymName())))
        op.erase();

    if (failed(ensureLayersDiscovered(model)))
      return failure();
    SmallVector<NNModuleOp> layers = getLayersInExecutionOrder(model);
    if (layers.empty())
      mlir::emitWarning(model->getLoc())
          << "no discovered layers in @" << model.getSymName()
          << ": every parameter is in the root FSDP unit";
    UnitAssignment assignment = assignUnits(model, layers);

    OpBuilder builder = OpBuilder::atBlockBegin(model.getBody());
    Location loc = model.getLoc();
    shard::GridOp::create(builder, loc, kFsdpGridName,
                          ArrayRef<int64_t>{int64_t(shards)});
    if (replicas > 1)
      shard::GridOp::create(builder, loc, kDpGridName,
                            ArrayRef<int64_t>{int64_t(replicas)});
    builder.setInsertionPointToEnd(model.getBody());

    // Parameters of each unit, in model order; the root is slot 0.
    std::vector<SmallVector<ParamOp>> paramsOf(layers.size() + 1);
    model.walk([&](ParamOp param) {
      if (!assignment.aliasOwner.count(param))
        paramsOf[assignment.unitOf[param] + 1].push_back(param);
    });
    llvm::DenseMap<Operation *, SmallVector<Attribute>> aliasesOf;
    for (auto [alias, owner] : assignment.aliasOwner)
      aliasesOf[owner].push_back(getRelativeRef(model, alias));

    int64_t totalPadding = 0;
    int64_t tpSize = getTpPlan(model).size;
    auto createUnit = [&](int unit) {
      bool isRoot = unit == kRootUnit;
      std::string path = isRoot ? "" : getDottedPath(layers[unit]);
      auto op = FsdpUnitOp::create(
          builder, loc, builder.getStringAttr(isRoot ? "root" : path),
          builder.getStringAttr(path), TypeAttr::get(compute),
          TypeAttr::get(master), TypeAttr::get(reduce), TypeAttr::get(optim),
          // FSDP2 keeps the root gathered from forward into backward, and
          // the last layer too where the policy says so: its backward is
          // the first to run, and would gather it again at once.
          builder.getBoolAttr(
              !isRoot && reshardAfterForward &&
              (reshardLastLayer || unit != int(layers.size()) - 1)),
          builder.getI64IntegerAttr(prefetch),
          GradSyncAttr::get(builder.getContext(), gradSync));
      OpBuilder body =
          OpBuilder::atBlockEnd(&op.getBodyRegion().emplaceBlock());
      auto sharding = shard::ShardingOp::create(
          body, loc, kFsdpGridName,
          ArrayRef<shard::GridAxesAttr>{
              DenseI16ArrayAttr::get(model.getContext(), {0})});
      int64_t padding = 0;
      for (ParamOp param : paramsOf[unit + 1]) {
        // Under TP, FSDP shards the slice a TP rank holds.
        SmallVector<int64_t> local = getTpLocalShape(param, tpSize);
        int64_t dim0 = local[0];
        int64_t padded = roundUp(dim0, shards);
        padding += (padded - dim0) * (ShapedType::getNumElements(local) / dim0);
        auto shardOp =
            ShardParamOp::create(body, loc, getRelativeRef(model, param),
                                 sharding, body.getI64IntegerAttr(padded));
        auto aliases = aliasesOf.find(param);
        if (aliases != aliasesOf.end())
          shardOp->setAttr("tied", body.getArrayAttr(aliases->second));
        // A tie group is one tensor: frozen through any of its modules, it
        // is frozen (as requires_grad is one flag of the shared Parameter).
        bool frozen = isFrozen(param);
        for (auto [alias, owner] : assignment.aliasOwner)
          frozen |= owner == param && isFrozen(alias);
        if (frozen)
          shardOp->setAttr("frozen", body.getUnitAttr());
      }
      op->setAttr("padding_elements", builder.getI64IntegerAttr(padding));
      totalPadding += padding;
    };
    createUnit(kRootUnit);
    for (int unit = 0, e = layers.size(); unit < e; ++unit)
      createUnit(unit);

    mlir::emitRemark(model->getLoc())
        << layers.size() + 1 << " FSDP units (root + " << layers.size()
        << " layers) over shard.grid @" << kFsdpGridName << " of "
        << int64_t(shards) << " shards; padding " << totalPadding
        << " elements";
    if (replicas > 1)
      mlir::emitRemark(model->getLoc())
          << "HSDP: " << int64_t(replicas)
          << " replicas of each FSDP group over shard.grid @" << kDpGridName
          << "; gradient shards all-reduced over it each step";
    return success();
  }
};

} // namespace
} // namespace mlir::parc
