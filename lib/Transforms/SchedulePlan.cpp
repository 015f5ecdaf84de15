//===- SchedulePlan.cpp - reading what --lower-to-schedule lowers ---------===//
//
// The plan attributes (layers, remat, TP collectives, FSDP units, pipeline
// schedule, tied copies) and the bytes behind each step's allocations, read
// and checked once for the program writer (LowerToSchedule.cpp).
//
//===----------------------------------------------------------------------===//

#include "SchedulePlan.h"

#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::parc;
using namespace mlir::parc::lowering;

namespace {

constexpr llvm::StringLiteral kTiedAttr = kPpTiedCopiesAttrName;

int64_t lastDim(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() == 0 ||
      ShapedType::isDynamic(tensor.getShape().back()))
    return 1;
  return tensor.getShape().back();
}

struct PlanReader {
  PlanReader(ModelOp model, int64_t seq, int64_t mbs, int64_t gradAccum,
             int64_t imageTokens, KernelProfile kernels)
      : model(model), seq(seq), mbs(mbs), gradAccum(gradAccum),
        imageTokens(imageTokens), kernels(kernels) {}
  ModelOp model;
  int64_t seq, mbs, gradAccum, imageTokens;
  KernelProfile kernels;

  /// An error on `op` (by default the model), without printing the op.
  InFlightDiagnostic error(Operation *op = nullptr) {
    InFlightDiagnostic diag =
        mlir::emitError(op ? op->getLoc() : model->getLoc());
    diag << "lower-to-schedule: ";
    return diag;
  }

  FailureOr<SchedulePlan> read() {
    SchedulePlan plan;
    plan.seq = seq;
    plan.mbs = mbs;
    if (seq < 1 || mbs < 1 || gradAccum < 1 || imageTokens < 0)
      return error() << "needs positive seq, mbs and grad-accum";
    SmallVector<NNModuleOp> order = getLayersInExecutionOrder(model);
    if (!hasDiscoveredLayers(model) || order.empty())
      return error() << "@" << model.getSymName()
                     << " has no discovered layers: run --discover-layers "
                        "first";
    plan.shards = getFsdpShardCount(model);
    if (plan.shards <= 0)
      return error() << "@" << model.getSymName()
                     << " has no FSDP plan: run --apply-fsdp first (shards=1 "
                        "for unsharded parameters)";
    if (failed(readParallelism(plan)))
      return failure();
    if (failed(readLayers(plan, order)) || failed(readUnits(plan, order)))
      return failure();
    readTied(plan);
    if (failed(readFootprints(plan)))
      return failure();
    return plan;
  }

  /// The bytes behind the program's allocations: each unit's footprint per
  /// stage and the loss path.
  LogicalResult readFootprints(SchedulePlan &plan) {
    FailureOr<FsdpUnitSizes> sizes =
        getFsdpUnitSizes(model, "lower-to-schedule");
    if (failed(sizes))
      return failure();
    if (int64_t(sizes->roots.size()) != plan.stages)
      return error() << "the FSDP units span " << sizes->roots.size()
                     << " pipeline stages of " << plan.stages
                     << ": run --apply-fsdp again";
    TpPlan tp = getTpPlan(model);
    SmallVector<int64_t> late = getLateRootGradientElements(model, tp.size);
    for (int64_t stage = 0; stage < plan.stages; ++stage) {
      StageFootprints &mem = plan.memory.emplace_back();
      mem.root = getFootprint(sizes->roots[stage], sizes->shards);
      for (const FsdpUnitSize &unit : sizes->layers[stage])
        mem.layers[unit.path] = getFootprint(unit, sizes->shards);
      mem.lateRootGradients = (stage < int64_t(late.size()) ? late[stage] : 0) *
                              mem.root.gradientBytes;
    }
    plan.loss = getLossBytes(model, mbs, seq, tp, kernels,
                             plan.memory.front().root.computeBytes);
    return success();
  }

  LogicalResult readParallelism(SchedulePlan &plan) {
    TpPlan tp = getTpPlan(model);
    plan.tpSize = tp.size;
    plan.sequenceParallel = tp.sequenceParallel;
    int64_t tpGrid = getGridSize(model, kTpGridName);
    if ((tp.size > 1 || tpGrid > 1) && tpGrid != tp.size)
      return error() << "parc.tp_size = " << tp.size << " but shard.grid @"
                     << kTpGridName << " has " << tpGrid
                     << " ranks: run --apply-tp again";
    // The activation trace and parc-run read each op's split from
    // apply-tp's record; a TP plan without it would be counted replicated.
    if (tp.size > 1)
      if (auto forward = dyn_cast_or_null<func::FuncOp>(
              SymbolTable::lookupSymbolIn(model, "forward"));
          forward && !getTpShards(forward))
        return error() << "parc.tp_size = " << tp.size
                       << " but the forward has no " << kTpShardsAttrName
                       << " record: run --apply-tp "
                          "again";
    // The dialect verified parc.pp and its schedule (ParcDialect.cpp).
    bool hasPlan = model->hasAttr(kPpPlanAttrName);
    PpPlan pp = getPpPlan(model);
    plan.stages = pp.stages;
    plan.chunks = pp.chunks;
    plan.microBatches = pp.microbatches;
    if (hasPlan) {
      if (gradAccum > 1)
        return error() << "grad-accum = " << gradAccum << " with a pipeline: "
                       << "the micro-batches are parc.pp's (" << pp.microbatches
                       << ")";
      if (pp.stages > 1 && getGridSize(model, kPpGridName) != pp.stages)
        return error() << "parc.pp has " << pp.stages
                       << " stages but shard.grid @" << kPpGridName << " has "
                       << getGridSize(model, kPpGridName)
                       << " ranks: run --apply-pp again";
      plan.steps = std::move(pp.steps);
    } else {
      // Gradient accumulation without a pipeline: F0 B0 F1 B1 ...
      plan.microBatches = gradAccum;
      plan.steps.resize(1);
      for (int64_t i = 0; i < gradAccum; ++i) {
        plan.steps[0].push_back({true, i, 0});
        plan.steps[0].push_back({false, i, 0});
      }
    }
    plan.dpSize = std::max<int64_t>(1, getGridSize(model, kDpGridName));
    // The ranks the plan's axes span (a grid no plan uses adds none).
    plan.world = plan.shards * plan.dpSize * plan.tpSize * plan.stages;
    return success();
  }

  LogicalResult readLayers(SchedulePlan &plan, ArrayRef<NNModuleOp> order) {
    // The activation dtype is the FSDP compute dtype (the replay's too).
    for (FsdpUnitOp unit : model.getBody()->getOps<FsdpUnitOp>()) {
      plan.compute = unit.getComputeDtype();
      plan.reduce = unit.getReduceDtype();
      break;
    }
    if (!plan.compute)
      return error() << "@" << model.getSymName()
                     << " has a shard.grid @fsdp but no parc.fsdp_unit: run "
                        "--apply-fsdp again";
    int64_t elementBytes = getElementBytes(plan.compute);
    PipelinePlacement placement(model);
    plan.layers.resize(plan.stages);
    plan.roots.resize(plan.stages);
    NNModuleOp last = order.back();
    for (NNModuleOp layer : order) {
      LayerStep step;
      step.layer = layer;
      step.path = StringAttr::get(model.getContext(), getDottedPath(layer));
      step.stage = placement.getStage(layer);
      step.chunk = placement.getChunk(layer);
      if (step.stage < 0 || step.stage >= plan.stages || step.chunk < 0 ||
          step.chunk >= plan.chunks)
        return error(layer)
               << "layer " << step.path.getValue() << " is on pp stage "
               << step.stage << " chunk " << step.chunk << " of a plan with "
               << plan.stages << " stages x " << plan.chunks
               << " chunks: run --apply-pp again";
      step.remat = getRemat(layer).value_or(RematKind::None);
      auto tag = getLayerTag(layer);
      step.tokens = tag && isVisionStack(tag->first) ? imageTokens : seq;
      if (step.tokens > 0) {
        LayerActivationBytes acts =
            estimateLayerActivations(layer, step.remat, mbs, step.tokens,
                                     elementBytes, getTpPlan(model), kernels);
        step.savedBytes = acts.saved;
        step.recomputedBytes = acts.recomputed;
        step.workingBytes = acts.working;
      }
      step.tp = getTpTraffic(layer.getForward(), plan.tpSize, plan.compute,
                             /*stopAtLayers=*/false)
                    .head;
      if (failed(checkTpDivisible(plan, step.tp, step.tokens,
                                  step.path.getValue())))
        return failure();
      if (!plan.boundaryElements && !(tag && isVisionStack(tag->first)))
        plan.boundaryElements =
            mbs * seq * lastDim(layer.getForward().getResultTypes().front()) /
            (plan.sequenceParallel ? plan.tpSize : 1);
      plan.layers[step.stage].push_back(std::move(step));
    }
    if (plan.sequenceParallel && (mbs * seq) % plan.tpSize != 0)
      return error() << "sequence parallel over tp " << plan.tpSize
                     << " needs mbs x seq (" << mbs * seq
                     << ") divisible by it";
    auto forward = dyn_cast_or_null<func::FuncOp>(
        SymbolTable::lookupSymbolIn(model, "forward"));
    if (forward) {
      TpTrafficSplit walker = getTpTraffic(forward, plan.tpSize, plan.compute,
                                           /*stopAtLayers=*/true, last);
      plan.rootTp.forward = walker.head.forward;
      plan.rootTp.backward = walker.head.backward;
      // The tail's traffic, kept apart by position: the head's first.
      headCollectives = walker.head.forward.size();
      headBackward = walker.head.backward.size();
      plan.rootTp.forward.append(walker.tail.forward);
      plan.rootTp.backward.append(walker.tail.backward);
      if (failed(checkTpDivisible(plan, plan.rootTp, seq, "the root")))
        return failure();
    }
    return success();
  }

  LogicalResult checkTpDivisible(const SchedulePlan &plan,
                                 const TpTraffic &traffic, int64_t tokens,
                                 StringRef where) {
    for (ArrayRef<TpCollective> list :
         {ArrayRef(traffic.forward), ArrayRef(traffic.backward)})
      for (const TpCollective &c : list)
        if (c.kind != CollectiveKind::AllReduce &&
            (mbs * tokens * c.elementsPerToken) % plan.tpSize != 0)
          return error() << "a TP collective of " << where << " moves "
                         << mbs * tokens * c.elementsPerToken
                         << " elements, which tp " << plan.tpSize
                         << " does not divide: pick seq and mbs so that "
                            "mbs x seq divides by it";
    return success();
  }

  LogicalResult readUnits(SchedulePlan &plan, ArrayRef<NNModuleOp> order) {
    PipelinePlacement placement(model);
    llvm::StringMap<LayerStep *> byPath;
    for (auto &stageLayers : plan.layers)
      for (LayerStep &step : stageLayers)
        byPath[step.path.getValue()] = &step;
    SymbolTableCollection tables;
    for (FsdpUnitOp unitOp : model.getBody()->getOps<FsdpUnitOp>()) {
      StringRef path = unitOp.getPath();
      LayerStep *layer = path.empty() ? nullptr : byPath.lookup(path);
      if (!path.empty() && !layer)
        return error(unitOp)
               << "parc.fsdp_unit @" << unitOp.getSymName() << " wraps '"
               << path
               << "', which is no discovered layer: run --apply-fsdp "
                  "again after --discover-layers";
      UnitPart unit;
      unit.path = path.str();
      unit.prefetch = unitOp.getPrefetch();
      unit.reshardAfterForward = unitOp.getReshardAfterForward();
      unit.deferSync = unitOp.getGradSync() == GradSync::LastMicroBatch;
      unit.compute = unitOp.getComputeDtype();
      unit.master = unitOp.getMasterDtype();
      unit.reduce = unitOp.getReduceDtype();
      if (!layer)
        for (UnitPart &root : plan.roots)
          root = unit;
      for (ShardParamOp shard : unitOp.getBody()->getOps<ShardParamOp>()) {
        auto param = dyn_cast_or_null<ParamOp>(
            tables.lookupSymbolIn(model, shard.getParam()));
        if (!param)
          return error(shard) << "parc.shard_param " << shard.getParam()
                              << " names no parameter";
        SmallVector<int64_t> local = getTpLocalShape(param, plan.tpSize);
        int64_t padded = ShapedType::getNumElements(local) / local[0] *
                         shard.getPaddedDim0();
        bool trainable = !shard->hasAttr("frozen");
        // A tie group spanning stages is one copy on each.
        SmallVector<int64_t> holders =
            layer ? SmallVector<int64_t>{layer->stage}
                  : placement.getHolderStages(
                        model, param, shard->getAttrOfType<ArrayAttr>("tied"),
                        tables);
        for (int64_t stage : holders) {
          UnitPart &into =
              layer ? unit : plan.roots[std::min(stage, plan.stages - 1)];
          into.gatherElements += padded;
          into.gradElements += trainable ? padded : 0;
        }
        tiedGradElements[param] = trainable ? padded : 0;
      }
      if (layer)
        layer->unit = std::move(unit);
    }
    return success();
  }

  void readTied(SchedulePlan &plan) {
    auto copies = model->getAttrOfType<ArrayAttr>(kTiedAttr);
    if (!copies || plan.stages < 2)
      return;
    // The dialect verified each entry (#parc.pp_tied).
    for (auto entry : copies.getAsRange<PpTiedCopiesAttr>()) {
      auto owner = dyn_cast_or_null<ParamOp>(SymbolTable::lookupSymbolIn(
          model, cast<SymbolRefAttr>(entry.getParams()[0])));
      if (!owner || !tiedGradElements.lookup(owner))
        continue;
      TiedCopy copy;
      copy.path = getDottedPath(owner);
      copy.gradElements = tiedGradElements.lookup(owner);
      llvm::append_range(copy.stages, entry.getStages());
      plan.tied.push_back(std::move(copy));
    }
  }

  size_t headCollectives = 0, headBackward = 0;
  llvm::DenseMap<Operation *, int64_t> tiedGradElements;
};

} // namespace

FailureOr<SchedulePlan>
mlir::parc::lowering::readSchedulePlan(ModelOp model, int64_t seq, int64_t mbs,
                                       int64_t gradAccum, int64_t imageTokens,
                                       KernelProfile kernels) {
  PlanReader reader(model, seq, mbs, gradAccum, imageTokens, kernels);
  FailureOr<SchedulePlan> plan = reader.read();
  if (succeeded(plan)) {
    plan->headForward = reader.headCollectives;
    plan->headBackward = reader.headBackward;
  }
  return plan;
}
