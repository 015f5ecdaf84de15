//===- LowerToSchedule.cpp - one straight-line program per rank kind ------===//
//
// Lowers the plan the earlier passes recorded as attributes into a
// parc.program per kind of rank (one without PP, one per stage with it): the
// ordered steps of one training step, with FSDP all-gathers / frees /
// reduce-scatters, pipeline sends and receives, TP collectives, tied-copy and
// data-parallel all-reduces as shard collectives over flat buffers of the
// exact size, and compute, saves, recomputes, what compute leaves behind
// (parc.alloc) and the optimizer as parc ops, each compute step with its
// highest point (#parc.peak). The analyses and parc-run read these programs
// and derive no order of their own; docs/schedule.md states each rule.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/StepMemory.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace mlir::parc {
#define GEN_PASS_DEF_LOWERTOSCHEDULE
#include "parc/Transforms/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kTiedAttr = kPpTiedCopiesAttrName;
constexpr llvm::StringLiteral kTpCollectivesAttr = "parc.tp_collectives";

int64_t bytesOf(Type type) { return (type.getIntOrFloatBitWidth() + 7) / 8; }

int64_t lastDim(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() == 0 ||
      ShapedType::isDynamic(tensor.getShape().back()))
    return 1;
  return tensor.getShape().back();
}

//===----------------------------------------------------------------------===//
// TP collectives of a forward and its backward
//===----------------------------------------------------------------------===//

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter };

/// One TP collective a compute step issues: the whole (unsharded) tensor
/// has `elementsPerToken` elements of `element` per token.
struct TpCollective {
  CollectiveKind kind;
  int64_t elementsPerToken;
  Type element;
};

struct TpTraffic {
  SmallVector<TpCollective> forward, backward;
};

/// Records the collectives --apply-tp put on each op in execution order, and
/// their backward conjugates (Megatron's f / g pairs): an all-reduce after a
/// row-parallel linear is matched by the all-reduce of the input gradient of
/// its column-parallel group; sequence parallel swaps all-gather and
/// reduce-scatter; the vocab-parallel logits linear all-reduces its input
/// gradient without sequence parallel; embedding outputs, the logits gather
/// and the loss-parallel statistics need nothing in backward.
class TpCollectiveWalker : public ForwardWalker<TpCollectiveWalker, int> {
public:
  TpCollectiveWalker(bool stopAtLayers, NNModuleOp lastLayer, Type compute,
                     bool sequenceParallel)
      : ForwardWalker(stopAtLayers), lastLayer(lastLayer), compute(compute),
        sequenceParallel(sequenceParallel) {}

  /// Before the last layer (the root's head) and after it (its tail); a
  /// layer's own traffic is all in `head`.
  TpTraffic head, tail;

  void run(func::FuncOp forward) {
    walk(forward, SmallVector<int>(forward.getNumArguments(), 0));
    std::reverse(head.backward.begin(), head.backward.end());
    std::reverse(tail.backward.begin(), tail.backward.end());
  }

  SmallVector<int> visitOp(Operation &op, ArrayRef<int>) {
    if (auto entries = op.getAttrOfType<ArrayAttr>(kTpCollectivesAttr))
      for (Attribute entry : entries)
        record(op, cast<DictionaryAttr>(entry));
    if (auto linear = dyn_cast<LinearOp>(op); linear && !sequenceParallel) {
      auto param =
          tables.lookupNearestSymbolFrom<ParamOp>(&op, linear.getWeight());
      auto plan = param ? param->getAttrOfType<StringAttr>(kTpParamAttrName)
                        : StringAttr();
      if (plan && plan.getValue() == "vocab")
        current().backward.push_back({CollectiveKind::AllReduce,
                                      lastDim(linear.getInput().getType()),
                                      compute});
    }
    return SmallVector<int>(op.getNumResults(), 0);
  }

  SmallVector<int> visitOpaqueCall(CallOp call, NNModuleOp callee,
                                   ArrayRef<int>) {
    if (callee && callee == lastLayer)
      inTail = true;
    return SmallVector<int>(call.getNumResults(), 0);
  }

private:
  TpTraffic &current() { return inTail ? tail : head; }

  void record(Operation &op, DictionaryAttr entry) {
    auto kindAttr = entry.getAs<StringAttr>("kind");
    auto position = entry.getAs<StringAttr>("position");
    auto bytes = entry.getAs<IntegerAttr>("bytes_per_token");
    if (!kindAttr || !position || !bytes)
      return;
    StringRef kind = kindAttr.getValue();
    CollectiveKind forward = kind == "all_gather" ? CollectiveKind::AllGather
                             : kind == "reduce_scatter"
                                 ? CollectiveKind::ReduceScatter
                                 : CollectiveKind::AllReduce;
    if (position.getValue() == "within") {
      // Loss-parallel statistics: fp32 scalars.
      current().forward.push_back(
          {forward, bytes.getInt() / 4, Float32Type::get(op.getContext())});
      return;
    }
    Type irType = position.getValue() == "before" ? op.getOperand(0).getType()
                                                  : op.getResult(0).getType();
    int64_t irBytes =
        bytesOf(cast<RankedTensorType>(irType).getElementType());
    TpCollective collective{forward, bytes.getInt() / irBytes, compute};
    current().forward.push_back(collective);
    bool after = position.getValue() == "after";
    if (forward == CollectiveKind::AllReduce && after && isa<LinearOp>(op))
      current().backward.push_back(collective);
    else if (forward == CollectiveKind::ReduceScatter && after)
      current().backward.push_back(
          {CollectiveKind::AllGather, collective.elementsPerToken, compute});
    else if (forward == CollectiveKind::AllGather && !after)
      current().backward.push_back({CollectiveKind::ReduceScatter,
                                    collective.elementsPerToken, compute});
  }

  NNModuleOp lastLayer;
  Type compute;
  bool sequenceParallel;
  bool inTail = false;
};

//===----------------------------------------------------------------------===//
// What the programs are lowered from
//===----------------------------------------------------------------------===//

/// An FSDP unit, or the part of the root unit one stage holds, in elements.
struct UnitPart {
  std::string path;
  int64_t gatherElements = 0; // unsharded, all its parameters
  int64_t gradElements = 0;   // unsharded, its trainable parameters
  int64_t prefetch = 1;
  bool reshardAfterForward = true;
  Type compute, master, reduce;
};

/// One layer as the programs see it.
struct LayerStep {
  NNModuleOp layer;
  StringAttr path;
  int64_t stage = 0, chunk = 0;
  int64_t tokens = 0; // per sample
  StringRef remat = "none";
  int64_t savedBytes = 0, recomputedBytes = 0, workingBytes = 0;
  TpTraffic tp;
  UnitPart unit;
};

struct TiedCopy {
  std::string path; // the storage owner
  int64_t gradElements = 0;
  SmallVector<int64_t> stages;
};

/// What one stage's compute leaves behind, in bytes per rank.
struct StageFootprints {
  UnitFootprint root;
  llvm::StringMap<UnitFootprint> layers;
  /// The root's gradients only the embedding's backward produces.
  int64_t lateRootGradients = 0;
};

struct SchedulePlan {
  int64_t shards = 1, tpSize = 1, stages = 1, chunks = 1, microBatches = 1;
  int64_t dpSize = 1, world = 1;
  int64_t seq = 0, mbs = 1;
  /// Clip to this global gradient norm before the optimizer (0: never).
  double maxNorm = 0;
  bool sequenceParallel = false;
  Type compute, reduce;
  /// Per stage: its steps, its layers in execution order, its root part.
  SmallVector<SmallVector<PipelineStep>> steps;
  std::vector<std::vector<LayerStep>> layers;
  SmallVector<UnitPart> roots;
  TpTraffic rootTp;
  /// Elements of the activation crossing a stage boundary, per micro-batch.
  int64_t boundaryElements = 0;
  SmallVector<TiedCopy> tied;
  /// Per stage; and the loss path (on the stage that computes the loss).
  SmallVector<StageFootprints> memory;
  LossBytes loss;
};

struct PlanReader {
  PlanReader(ModelOp model, int64_t seq, int64_t mbs, int64_t gradAccum,
             int64_t imageTokens, KernelProfile kernels)
      : model(model), seq(seq), mbs(mbs), gradAccum(gradAccum),
        imageTokens(imageTokens), kernels(kernels) {}
  ModelOp model;
  int64_t seq, mbs, gradAccum, imageTokens;
  KernelProfile kernels;

  InFlightDiagnostic error() {
    InFlightDiagnostic diag = mlir::emitError(model->getLoc());
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
      mem.lateRootGradients =
          (stage < int64_t(late.size()) ? late[stage] : 0) *
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
    // The dialect verified parc.pp and its schedule (ParcDialect.cpp).
    bool hasPlan = model->hasAttr(kPpPlanAttrName);
    PpPlan pp = getPpPlan(model);
    plan.stages = pp.stages;
    plan.chunks = pp.chunks;
    plan.microBatches = pp.microbatches;
    if (hasPlan) {
      if (gradAccum > 1)
        return error() << "grad-accum = " << gradAccum << " with a pipeline: "
                       << "the micro-batches are parc.pp's ("
                       << pp.microbatches << ")";
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
    int64_t elementBytes = bytesOf(plan.compute);
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
        return error() << "layer " << step.path.getValue()
                       << " is on pp stage " << step.stage << " chunk "
                       << step.chunk << " of a plan with " << plan.stages
                       << " stages x " << plan.chunks
                       << " chunks: run --apply-pp again";
      if (auto remat = layer->getAttrOfType<StringAttr>("parc.remat"))
        step.remat = remat.getValue();
      if (step.remat != "none" && step.remat != "full" &&
          step.remat != "selective")
        return error() << "layer " << step.path.getValue()
                       << " has parc.remat = \"" << step.remat
                       << "\" (expected full, selective or none): run "
                          "--apply-remat again";
      auto tag = getLayerTag(layer);
      step.tokens = tag && tag->first.starts_with("vision") ? imageTokens : seq;
      if (step.tokens > 0) {
        LayerActivationBytes acts =
            estimateLayerActivations(layer, step.remat, mbs, step.tokens,
                                     elementBytes, getTpPlan(model), kernels);
        step.savedBytes = acts.saved;
        step.recomputedBytes = acts.recomputed;
        step.workingBytes = acts.working;
      }
      TpCollectiveWalker walker(/*stopAtLayers=*/false, last, plan.compute,
                                plan.sequenceParallel);
      walker.run(layer.getForward());
      step.tp = std::move(walker.head);
      if (failed(checkTpDivisible(plan, step.tp, step.tokens,
                                  step.path.getValue())))
        return failure();
      if (!plan.boundaryElements && !(tag && tag->first.starts_with("vision")))
        plan.boundaryElements =
            mbs * seq *
            lastDim(layer.getForward().getResultTypes().front()) /
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
      TpCollectiveWalker walker(/*stopAtLayers=*/true, last, plan.compute,
                                plan.sequenceParallel);
      walker.run(forward);
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
    for (ArrayRef<TpCollective> list : {ArrayRef(traffic.forward),
                                        ArrayRef(traffic.backward)})
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
        return error() << "parc.fsdp_unit @" << unitOp.getSymName()
                       << " wraps '" << path
                       << "', which is no discovered layer: run --apply-fsdp "
                          "again after --discover-layers";
      UnitPart unit;
      unit.path = path.str();
      unit.prefetch = unitOp.getPrefetch();
      unit.reshardAfterForward = unitOp.getReshardAfterForward();
      unit.compute = unitOp.getComputeDtype();
      unit.master = unitOp.getMasterDtype();
      unit.reduce = unitOp.getReduceDtype();
      if (!layer)
        for (UnitPart &root : plan.roots)
          root = unit;
      for (ShardParamOp shard : unitOp.getBody()->getOps<ShardParamOp>()) {
        auto param =
            dyn_cast_or_null<ParamOp>(tables.lookupSymbolIn(model, shard.getParam()));
        if (!param)
          return error() << "parc.shard_param " << shard.getParam()
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
          UnitPart &into = layer ? unit : plan.roots[std::min(stage, plan.stages - 1)];
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
    for (auto entry : copies.getAsRange<DictionaryAttr>()) {
      auto params = entry.getAs<ArrayAttr>("params");
      auto stages = entry.getAs<ArrayAttr>("stages");
      if (!params || params.empty() || !stages)
        continue;
      auto owner = dyn_cast_or_null<ParamOp>(SymbolTable::lookupSymbolIn(
          model, cast<SymbolRefAttr>(params[0])));
      if (!owner || !tiedGradElements.lookup(owner))
        continue;
      TiedCopy copy;
      copy.path = getDottedPath(owner);
      copy.gradElements = tiedGradElements.lookup(owner);
      for (auto stage : stages.getAsRange<IntegerAttr>())
        copy.stages.push_back(stage.getInt());
      plan.tied.push_back(std::move(copy));
    }
  }

  size_t headCollectives = 0, headBackward = 0;
  llvm::DenseMap<Operation *, int64_t> tiedGradElements;
};

//===----------------------------------------------------------------------===//
// Writing one program
//===----------------------------------------------------------------------===//

class ProgramWriter {
public:
  ProgramWriter(const SchedulePlan &plan, const PlanReader &reader,
                int64_t stage, OpBuilder &builder, Location loc)
      : plan(plan), stage(stage), b(builder), loc(loc),
        headForward(reader.headCollectives),
        headBackward(reader.headBackward), mem(plan.memory[stage]),
        accumulate(plan.microBatches > 1) {
    MLIRContext *ctx = b.getContext();
    axes = DenseI16ArrayAttr::get(ctx, {0});
    axisZero = b.getIndexAttr(0);
    fsdpGrid = FlatSymbolRefAttr::get(ctx, kFsdpGridName);
    tpGrid = FlatSymbolRefAttr::get(ctx, kTpGridName);
    ppGrid = FlatSymbolRefAttr::get(ctx, kPpGridName);
    dpGrid = FlatSymbolRefAttr::get(ctx, kDpGridName);
    rootPath = b.getStringAttr("");
    headPart = b.getStringAttr("head");
    tailPart = b.getStringAttr("tail");
    for (int64_t i = 0; i < std::max(plan.microBatches, plan.chunks); ++i)
      indices.push_back(b.getI64IntegerAttr(i));
    for (const LayerStep &layer : plan.layers[stage])
      units.push_back({&layer.unit, {}, {}});
    root = {&plan.roots[stage], {}, {}};
  }

  void write() {
    // The shards this rank holds, in the compute dtype the gathers move.
    // One shard in another dtype is still gathered: the gather is the
    // compute-dtype copy the forward runs on (over a group of one).
    for (UnitState &unit :
         llvm::concat<UnitState>(llvm::MutableArrayRef(&root, 1), units)) {
      if (plan.shards > 1 || unit.part->compute != unit.part->master)
        if (unit.part->gatherElements > 0)
          unit.shard = buffer(BufferKind::ParamShard, unit.part->path,
                              std::nullopt,
                              unit.part->gatherElements / plan.shards,
                              unit.part->compute);
    }
    for (const PipelineStep &step : plan.steps[stage]) {
      SmallVector<size_t> chunk;
      for (auto [index, layer] : llvm::enumerate(plan.layers[stage]))
        if (layer.chunk == step.chunk)
          chunk.push_back(index);
      if (step.forward)
        forward(step, chunk);
      else
        backward(step, chunk);
    }
    finish();
  }

private:
  struct UnitState {
    const UnitPart *part;
    Value shard, gathered;
    Value reducedGrad;
    bool holds = false;  // gathered (an axis of size 1 needs no buffer)
    bool waited = false; // its gather has landed (parc.wait)
  };

  bool isFirstVirtual(int64_t chunk) const { return stage == 0 && chunk == 0; }
  bool isLastVirtual(int64_t chunk) const {
    return stage == plan.stages - 1 && chunk == plan.chunks - 1;
  }
  IntegerAttr chunkAttr(int64_t chunk) {
    return chunk ? indices[chunk] : IntegerAttr();
  }

  Value buffer(BufferKind kind, StringRef of, std::optional<int64_t> mb,
               int64_t elements, Type element) {
    auto type = RankedTensorType::get({elements}, element);
    return BufferOp::create(b, loc, type,
                            BufferKindAttr::get(b.getContext(), kind),
                            b.getStringAttr(of),
                            mb ? indices[*mb] : IntegerAttr());
  }

  void gather(UnitState &unit) {
    if (unit.holds || unit.part->gatherElements == 0)
      return;
    unit.holds = true;
    if (!unit.shard)
      return;
    auto type = RankedTensorType::get({unit.part->gatherElements},
                                      unit.part->compute);
    unit.gathered = shard::AllGatherOp::create(b, loc, type, fsdpGrid, axes,
                                               unit.shard, axisZero);
    unit.waited = false;
  }

  /// The compute stream waits for the unit's gather in flight, if any.
  void wait(UnitState &unit) {
    if (!unit.gathered || unit.waited)
      return;
    WaitOp::create(b, loc, unit.gathered, StepPeakAttr());
    unit.waited = true;
  }

  /// Before a compute step of `unit` (null: a root part): its gather and
  /// the root's (any layer may read a root parameter) have landed.
  void ready(UnitState *unit) {
    wait(root);
    if (unit)
      wait(*unit);
  }

  void release(UnitState &unit) {
    wait(unit);
    if (unit.gathered)
      FreeOp::create(b, loc, unit.gathered);
    unit.gathered = {};
    unit.holds = false;
  }

  /// The compute stream waits for the reduce-scatter in flight, if any;
  /// the unsharded gradients it read are freed. Accumulating into a shard
  /// that exists, its result is a shard of its own beside it until it is
  /// added in; the root's releases its gradients (and, with one micro-batch,
  /// its result becomes the root's gradient shards).
  void landScatter() {
    if (!scatterInFlight)
      return;
    const UnitFootprint *fp = footprint(*scatterUnit);
    bool isRoot = scatterUnit == &root;
    int64_t beside = 0;
    if (fp && accumulate && !scatteredOnce.insert(scatterUnit).second)
      beside = fp->shardedGradients;
    if (isRoot && rootHeld) {
      beside += lateBytes();
      if (!accumulate)
        beside += mem.root.shardedGradients;
    }
    WaitOp::create(b, loc, scatterInFlight, peak(0, 0, 0, beside));
    scatterInFlight = {};
    if (isRoot && rootHeld) {
      if (!accumulate)
        alloc(AllocKind::GradientShards, "", std::nullopt,
              mem.root.shardedGradients);
      rootHeld = lateHeld = false;
    }
    for (Value grads : scattering)
      FreeOp::create(b, loc, grads);
    scattering.clear();
  }

  //===--------------------------------------------------------------------===//
  // What compute steps leave behind (docs/schedule.md, "Allocations")
  //===--------------------------------------------------------------------===//

  const UnitFootprint *footprint(const UnitState &unit) const {
    if (&unit == &root)
      return &mem.root;
    auto it = mem.layers.find(unit.part->path);
    return it == mem.layers.end() ? nullptr : &it->second;
  }

  StepPeakAttr peak(int64_t working, int64_t logits, int64_t saved,
                    int64_t gradients) {
    if (!working && !logits && !saved && !gradients)
      return {};
    return StepPeakAttr::get(b.getContext(), working, logits, saved,
                             gradients);
  }

  /// `bytes` the preceding compute step leaves (nothing for none).
  Value alloc(AllocKind kind, StringRef of, std::optional<int64_t> mb,
              int64_t bytes) {
    if (bytes <= 0)
      return {};
    return AllocOp::create(
        b, loc, RankedTensorType::get({bytes}, b.getIntegerType(8)),
        AllocKindAttr::get(b.getContext(), kind), b.getStringAttr(of),
        mb ? indices[*mb] : IntegerAttr());
  }

  /// What the root's gradients add when a backward first produces them
  /// (FSDP2 holds them from lm_head's backward to the root's
  /// reduce-scatter), and the embedding's when only its backward does.
  int64_t rootHoldBytes() const {
    if (rootHeld)
      return 0;
    return mem.root.unshardedGradients - mem.lateRootGradients +
           (accumulate && !rootShards ? mem.root.shardedGradients : 0);
  }
  int64_t lateBytes() const { return lateHeld ? 0 : mem.lateRootGradients; }

  void holdRoot(int64_t mb) {
    if (rootHeld)
      return;
    rootHeld = true;
    if (Value grads = alloc(AllocKind::Gradients, "", mb,
                            mem.root.unshardedGradients -
                                mem.lateRootGradients))
      rootGradients.push_back(grads);
    if (accumulate && !rootShards) {
      rootShards = true;
      alloc(AllocKind::GradientShards, "", std::nullopt,
            mem.root.shardedGradients);
    }
  }

  void holdLate(std::optional<int64_t> mb) {
    if (lateHeld)
      return;
    lateHeld = true;
    if (Value grads =
            alloc(AllocKind::Gradients, "", mb, mem.lateRootGradients))
      rootGradients.push_back(grads);
  }

  /// A layer's backward leaves its unsharded gradients (read by its
  /// reduce-scatter, or added into the parameters' own before the next
  /// compute step) and, from its first backward, its gradient shards.
  void produceGradients(UnitState &unit, int64_t mb) {
    const UnitFootprint *fp = footprint(unit);
    if (!fp)
      return;
    if (Value grads = alloc(AllocKind::Gradients, unit.part->path, mb,
                            fp->unshardedGradients))
      settling.push_back({grads, &unit});
    if (!accumulate || backwarded.insert(&unit).second)
      alloc(AllocKind::GradientShards, unit.part->path, std::nullopt,
            fp->shardedGradients);
  }

  /// Gradients no collective reads (one shard) are added into the
  /// parameters' own gradients before the next compute step.
  void settle() {
    for (auto &[grads, unit] : settling)
      FreeOp::create(b, loc, grads);
    settling.clear();
  }

  /// The end of the step without a reduce-scatter of the root: its
  /// gradients join the parameters' own.
  void releaseRoot() {
    if (!rootHeld)
      return;
    holdLate(std::nullopt);
    if (!accumulate)
      alloc(AllocKind::GradientShards, "", std::nullopt,
            mem.root.shardedGradients);
    for (Value grads : rootGradients)
      FreeOp::create(b, loc, grads);
    rootGradients.clear();
    rootHeld = lateHeld = false;
  }

  /// Issues the reduce-scatter of the unit's gradient. As in FSDP2, one is
  /// in flight at a time: the previous is waited for first, so the backward
  /// between two units' reduce-scatters overlaps the earlier one, and the
  /// unsharded gradient it reads lives until then.
  void reduceScatter(UnitState &unit, std::optional<int64_t> mb) {
    if (plan.shards == 1 || unit.part->gradElements == 0)
      return;
    landScatter();
    Value grad = buffer(BufferKind::Gradient, unit.part->path, mb,
                        unit.part->gradElements, unit.part->reduce);
    auto type = RankedTensorType::get(
        {unit.part->gradElements / plan.shards}, unit.part->reduce);
    unit.reducedGrad = shard::ReduceScatterOp::create(
        b, loc, type, fsdpGrid, axes, grad,
        shard::ReductionKindAttr::get(b.getContext(),
                                      shard::ReductionKind::Sum),
        axisZero);
    scatterInFlight = unit.reducedGrad;
    scatterUnit = &unit;
    if (&unit == &root) {
      scattering.append(rootGradients);
      rootGradients.clear();
    }
    for (auto it = settling.begin(); it != settling.end();)
      if (it->second == &unit) {
        scattering.push_back(it->first);
        it = settling.erase(it);
      } else {
        ++it;
      }
  }

  void tpCollectives(ArrayRef<TpCollective> list, bool backward, StringRef of,
                     int64_t mb, int64_t tokens) {
    // A vision layer of a text-only batch (no image tokens) moves nothing.
    if (plan.tpSize == 1 || tokens == 0)
      return;
    BufferKind kind =
        backward ? BufferKind::ActivationGrad : BufferKind::Activation;
    for (const TpCollective &c : list) {
      int64_t whole = plan.mbs * tokens * c.elementsPerToken;
      int64_t part = whole / plan.tpSize;
      switch (c.kind) {
      case CollectiveKind::AllReduce: {
        Value in = buffer(kind, of, mb, whole, c.element);
        shard::AllReduceOp::create(b, loc, in.getType(), tpGrid, axes, in);
        break;
      }
      case CollectiveKind::AllGather: {
        Value in = buffer(kind, of, mb, part, c.element);
        shard::AllGatherOp::create(b, loc,
                                   RankedTensorType::get({whole}, c.element),
                                   tpGrid, axes, in, axisZero);
        break;
      }
      case CollectiveKind::ReduceScatter: {
        Value in = buffer(kind, of, mb, whole, c.element);
        shard::ReduceScatterOp::create(
            b, loc, RankedTensorType::get({part}, c.element), tpGrid, axes,
            in,
            shard::ReductionKindAttr::get(b.getContext(),
                                          shard::ReductionKind::Sum),
            axisZero);
        break;
      }
      }
    }
  }

  /// A pipeline transfer of one micro-batch's activation (or its gradient)
  /// with the neighbouring virtual stage.
  void transfer(bool send, bool gradient, int64_t peer, StringRef of,
                int64_t mb) {
    Value in = buffer(gradient ? BufferKind::ActivationGrad
                               : BufferKind::Activation,
                      of, mb, plan.boundaryElements, plan.compute);
    auto dest = DenseI64ArrayAttr::get(b.getContext(), {peer});
    if (send)
      shard::SendOp::create(b, loc, in.getType(), ppGrid, axes, in, dest,
                            ValueRange());
    else
      shard::RecvOp::create(b, loc, in.getType(), ppGrid, axes, in, dest,
                            ValueRange());
  }

  StringRef boundaryPath(ArrayRef<size_t> chunk, bool first) {
    if (chunk.empty())
      return "";
    return plan.layers[stage][first ? chunk.front() : chunk.back()]
        .path.getValue();
  }

  void forward(const PipelineStep &step, ArrayRef<size_t> chunk) {
    int64_t mb = step.microBatch;
    IntegerAttr mbAttr = indices[mb], chunkA = chunkAttr(step.chunk);
    int64_t prev = (stage - 1 + plan.stages) % plan.stages;
    if (!isFirstVirtual(step.chunk))
      transfer(/*send=*/false, /*gradient=*/false, prev,
               boundaryPath(chunk, true), mb);
    if (!rootGathered) {
      // FSDP2 keeps the root gathered from its forward through its
      // backward; without a pipeline each micro-batch of gradient
      // accumulation is a forward and backward of its own (reshard and
      // reduce-scatter after backward, FSDP2's defaults), with one the
      // root stays gathered across the schedule's micro-batches and its
      // gradient is reduced once.
      rootGathered = true;
      gather(root);
      for (int64_t ahead = 0;
           ahead < root.part->prefetch && ahead < int64_t(chunk.size());
           ++ahead)
        gather(units[chunk[ahead]]);
    }
    if (isFirstVirtual(step.chunk)) {
      ready(nullptr);
      settle();
      ForwardStepOp::create(b, loc, rootPath, headPart, mbAttr, IntegerAttr(),
                            StepPeakAttr());
      tpCollectives(ArrayRef(plan.rootTp.forward).take_front(headForward),
                    false, "", mb, plan.seq);
    }
    for (auto [pos, index] : llvm::enumerate(chunk)) {
      const LayerStep &layer = plan.layers[stage][index];
      UnitState &unit = units[index];
      for (int64_t ahead = 0;
           ahead <= unit.part->prefetch && pos + ahead < chunk.size(); ++ahead)
        gather(units[chunk[pos + ahead]]);
      ready(&unit);
      settle();
      ForwardStepOp::create(b, loc, layer.path, StringAttr(), mbAttr, chunkA,
                            peak(layer.workingBytes, 0, 0, 0));
      tpCollectives(layer.tp.forward, false, layer.path.getValue(), mb,
                    layer.tokens);
      if (layer.savedBytes > 0)
        saved[{index, mb}] = SaveOp::create(
            b, loc,
            RankedTensorType::get({layer.savedBytes}, b.getIntegerType(8)),
            layer.path, StringAttr(), mbAttr, chunkA);
      if (unit.part->reshardAfterForward)
        release(unit);
    }
    if (isLastVirtual(step.chunk)) {
      ready(nullptr);
      settle();
      // The loss path, and what the loss keeps for its backward.
      const LossBytes &loss = plan.loss;
      ForwardStepOp::create(
          b, loc, rootPath, tailPart, mbAttr, IntegerAttr(),
          peak(0, loss.kept + loss.transient, loss.rootSaved, 0));
      tpCollectives(ArrayRef(plan.rootTp.forward).drop_front(headForward),
                    false, "", mb, plan.seq);
      if (loss.rootSaved > 0)
        tailKept[mb].push_back(SaveOp::create(
            b, loc,
            RankedTensorType::get({loss.rootSaved}, b.getIntegerType(8)),
            rootPath, tailPart, mbAttr, IntegerAttr()));
      if (Value kept = alloc(AllocKind::Logits, "", mb, loss.kept))
        tailKept[mb].push_back(kept);
    } else {
      transfer(/*send=*/true, /*gradient=*/false, (stage + 1) % plan.stages,
               boundaryPath(chunk, false), mb);
    }
  }

  void backward(const PipelineStep &step, ArrayRef<size_t> chunk) {
    int64_t mb = step.microBatch;
    IntegerAttr mbAttr = indices[mb], chunkA = chunkAttr(step.chunk);
    if (isLastVirtual(step.chunk)) {
      ready(nullptr);
      settle();
      // Its highest point: the loss's gradient beside what the loss kept,
      // or lm_head's backward (the logits gradient in the compute dtype,
      // the root's gradients from here on) after the loss's are gone.
      const LossBytes &loss = plan.loss;
      int64_t lossGrads = loss.gradients;
      int64_t lmHeadLogits = loss.logits * mem.root.computeBytes - loss.kept;
      int64_t lmHeadGrads = rootHoldBytes();
      int64_t lmHeadWorking = accumulate ? mem.root.accumulationTransient : 0;
      StepPeakAttr highest =
          lmHeadLogits + lmHeadGrads + lmHeadWorking > lossGrads
              ? peak(lmHeadWorking, lmHeadLogits, 0, lmHeadGrads)
              : peak(0, lossGrads, 0, 0);
      BackwardStepOp::create(b, loc, rootPath, tailPart, mbAttr,
                             IntegerAttr(), highest);
      tpCollectives(ArrayRef(plan.rootTp.backward).drop_front(headBackward),
                    true, "", mb, plan.seq);
      holdRoot(mb);
      for (Value kept : tailKept[mb])
        FreeOp::create(b, loc, kept);
      tailKept.erase(mb);
    } else {
      transfer(/*send=*/false, /*gradient=*/true, (stage + 1) % plan.stages,
               boundaryPath(chunk, false), mb);
    }
    for (size_t pos = chunk.size(); pos-- > 0;) {
      size_t index = chunk[pos];
      const LayerStep &layer = plan.layers[stage][index];
      UnitState &unit = units[index];
      for (int64_t behind = 0;
           behind <= unit.part->prefetch && behind <= int64_t(pos); ++behind)
        gather(units[chunk[pos - behind]]);
      ready(&unit);
      if (layer.remat != "none")
        RecomputeStepOp::create(b, loc, layer.path, mbAttr, chunkA,
                                b.getStringAttr(layer.remat),
                                b.getI64IntegerAttr(layer.recomputedBytes));
      // A full recompute reruns the forward's TP collectives (selective
      // remat recomputes no op that communicates).
      if (layer.remat == "full")
        tpCollectives(layer.tp.forward, false, layer.path.getValue(), mb,
                      layer.tokens);
      settle();
      // The rebuilt activations (the recompute's bytes) join its peak; its
      // gradients appear as it frees its saved activations.
      const UnitFootprint *fp = footprint(unit);
      int64_t accumulating =
          accumulate && fp ? fp->accumulationTransient : 0;
      BackwardStepOp::create(
          b, loc, layer.path, StringAttr(), mbAttr, chunkA,
          peak(layer.workingBytes + accumulating, 0, 0, rootHoldBytes()));
      tpCollectives(layer.tp.backward, true, layer.path.getValue(), mb,
                    layer.tokens);
      holdRoot(mb);
      produceGradients(unit, mb);
      auto it = saved.find({index, mb});
      if (it != saved.end()) {
        FreeOp::create(b, loc, it->second);
        saved.erase(it);
      }
      reduceScatter(unit, mb);
      release(unit);
    }
    if (isFirstVirtual(step.chunk)) {
      ready(nullptr);
      settle();
      // The embedding's backward, the last of the step: its gradient joins
      // the root's.
      BackwardStepOp::create(b, loc, rootPath, headPart, mbAttr,
                             IntegerAttr(),
                             peak(0, 0, 0, rootHoldBytes() + lateBytes()));
      holdRoot(mb);
      holdLate(mb);
      tpCollectives(ArrayRef(plan.rootTp.backward).take_front(headBackward),
                    true, "", mb, plan.seq);
      if (plan.stages == 1) {
        reduceScatter(root, mb);
        release(root);
        rootGathered = false;
      }
    } else {
      transfer(/*send=*/true, /*gradient=*/true,
               (stage - 1 + plan.stages) % plan.stages,
               boundaryPath(chunk, true), mb);
    }
    // The end of a backward pass waits for its last reduce-scatter
    // (FSDP2's final backward callback).
    landScatter();
  }

  void finish() {
    if (plan.stages > 1)
      reduceScatter(root, std::nullopt);
    release(root);
    for (UnitState &unit : units)
      release(unit);
    landScatter();
    settle();
    releaseRoot();
    // Tied copies on different stages add their gradients over pp.
    for (const TiedCopy &copy : plan.tied) {
      if (!llvm::is_contained(copy.stages, stage))
        continue;
      Value grad = buffer(BufferKind::Gradient, copy.path, std::nullopt,
                          copy.gradElements / plan.shards, plan.reduce);
      auto op = shard::AllReduceOp::create(b, loc, grad.getType(), ppGrid,
                                           axes, grad);
      op->setAttr("parc.group", DenseI64ArrayAttr::get(b.getContext(),
                                                       copy.stages));
    }
    // Data-parallel replicas add their (sharded) gradients.
    int64_t params = 0;
    for (UnitState &unit : llvm::concat<UnitState>(
             llvm::MutableArrayRef(&root, 1), units)) {
      params += unit.part->gradElements / plan.shards;
      if (plan.dpSize == 1 || unit.part->gradElements == 0)
        continue;
      Value grad = unit.reducedGrad;
      if (!grad)
        grad = buffer(BufferKind::Gradient, unit.part->path, std::nullopt,
                      unit.part->gradElements / plan.shards,
                      unit.part->reduce);
      shard::AllReduceOp::create(b, loc, grad.getType(), dpGrid, axes, grad);
    }
    if (plan.maxNorm > 0)
      ClipGradNormOp::create(b, loc, b.getF64FloatAttr(plan.maxNorm));
    OptimizerStepOp::create(b, loc, b.getI64IntegerAttr(params));
  }

  const SchedulePlan &plan;
  int64_t stage;
  OpBuilder &b;
  Location loc;
  size_t headForward, headBackward;
  DenseI16ArrayAttr axes;
  IntegerAttr axisZero;
  FlatSymbolRefAttr fsdpGrid, tpGrid, ppGrid, dpGrid;
  StringAttr rootPath, headPart, tailPart;
  SmallVector<IntegerAttr> indices;
  SmallVector<UnitState> units;
  UnitState root;
  bool rootGathered = false;
  /// The FSDP reduce-scatter issued and not yet waited for, its unit, and
  /// the gradients it reads.
  Value scatterInFlight;
  UnitState *scatterUnit = nullptr;
  SmallVector<Value> scattering;
  const StageFootprints &mem;
  bool accumulate;
  /// Unsharded gradients no reduce-scatter has read yet, by unit.
  SmallVector<std::pair<Value, UnitState *>> settling;
  /// The root's gradients while held, and whether its shards exist.
  SmallVector<Value> rootGradients;
  bool rootHeld = false, lateHeld = false, rootShards = false;
  llvm::DenseSet<UnitState *> backwarded, scatteredOnce;
  /// What the loss keeps for its backward, per micro-batch.
  std::map<int64_t, SmallVector<Value>> tailKept;
  std::map<std::pair<size_t, int64_t>, Value> saved;
};

LogicalResult lowerModel(ModelOp model, const LowerToScheduleOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  PlanReader reader(model, options.seqLen, options.microBatch,
                    options.gradAccumulation, options.imageTokens,
                    hardware->kernels);
  if (!(options.maxNorm >= 0))
    return mlir::emitError(model->getLoc())
           << "lower-to-schedule: max-norm must be >= 0 (0: no clipping), got "
           << options.maxNorm;
  FailureOr<SchedulePlan> plan = reader.read();
  if (failed(plan))
    return failure();
  plan->maxNorm = options.maxNorm;
  for (Operation &op : llvm::make_early_inc_range(*model.getBody()))
    if (isa<ProgramOp>(op))
      op.erase();

  OpBuilder b = OpBuilder::atBlockEnd(model.getBody());
  Location loc = model.getLoc();
  InFlightDiagnostic remark = mlir::emitRemark(loc);
  remark << "lower-to-schedule: " << plan->stages << " program"
         << (plan->stages > 1 ? "s" : "") << " for " << plan->world
         << " ranks:";
  for (int64_t stage = 0; stage < plan->stages; ++stage) {
    bool pipelined = plan->stages > 1;
    SmallVector<NamedAttribute> covers;
    if (pipelined)
      covers.push_back(
          b.getNamedAttr(kPpGridName, b.getDenseI64ArrayAttr({stage})));
    std::string name =
        pipelined ? "stage_" + std::to_string(stage) : "all_ranks";
    auto program = ProgramOp::create(
        b, loc, b.getStringAttr(name),
        b.getI64IntegerAttr(plan->world / plan->stages),
        b.getDictionaryAttr(covers), b.getI64IntegerAttr(plan->microBatches),
        b.getI64IntegerAttr(plan->mbs), b.getI64IntegerAttr(plan->seq));
    OpBuilder body =
        OpBuilder::atBlockEnd(&program.getBodyRegion().emplaceBlock());
    ProgramWriter(*plan, reader, stage, body, loc).write();
    remark << " @" << name << " " << program.getBody()->getOperations().size()
           << " steps" << (stage + 1 < plan->stages ? "," : "");
  }
  return success();
}

struct LowerToSchedulePass
    : public impl::LowerToScheduleBase<LowerToSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    LowerToScheduleOptions options =
        getOnDemandLowering(seqLen, microBatch, gradAccumulation, imageTokens,
                            hardware, hardwareDir);
    options.maxNorm = maxNorm;
    if (failed(lowerModel(getOperation(), options)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult ensureLowered(ModelOp model,
                            const LowerToScheduleOptions &options) {
  if (!model.getBody()->getOps<ProgramOp>().empty())
    return success();
  return lowerModel(model, options);
}

} // namespace mlir::parc
