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

#include "SchedulePlan.h"

#include "parc/Analysis/Grids.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Parallelism.h"
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

using namespace lowering;

namespace {

//===----------------------------------------------------------------------===//
// Writing one program
//===----------------------------------------------------------------------===//

class ProgramWriter {
public:
  ProgramWriter(const SchedulePlan &plan, int64_t stage, OpBuilder &builder,
                Location loc)
      : plan(plan), stage(stage), b(builder), loc(loc),
        headForward(plan.headForward), headBackward(plan.headBackward),
        mem(plan.memory[stage]), accumulate(plan.microBatches > 1) {
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
    for (const PipelineStep &step : plan.steps[stage])
      if (!step.forward)
        ++backwardsLeft[step.chunk];
  }

  void write() {
    // The shards this rank holds, in the compute dtype the gathers move.
    // One shard in another dtype is still gathered: the gather is the
    // compute-dtype copy the forward runs on (over a group of one).
    for (UnitState &unit :
         llvm::concat<UnitState>(llvm::MutableArrayRef(&root, 1), units)) {
      if (plan.shards > 1 || unit.part->compute != unit.part->master)
        if (unit.part->gatherElements > 0)
          unit.shard = buffer(
              BufferKind::ParamShard, unit.part->path, std::nullopt,
              unit.part->gatherElements / plan.shards, unit.part->compute);
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

  /// Whether the unit's gradients wait for the last micro-batch's backward
  /// to be reduce-scattered (with one shard there is nothing to reduce).
  bool defers(const UnitState &unit) const {
    return unit.part->deferSync && plan.shards > 1 && accumulate;
  }

  bool isFirstVirtual(int64_t chunk) const { return stage == 0 && chunk == 0; }
  bool isLastVirtual(int64_t chunk) const {
    return stage == plan.stages - 1 && chunk == plan.chunks - 1;
  }
  IntegerAttr chunkAttr(int64_t chunk) {
    return chunk ? indices[chunk] : IntegerAttr();
  }
  IntegerAttr microBatchAttr(std::optional<int64_t> mb) {
    return mb ? indices[*mb] : IntegerAttr();
  }

  Value buffer(BufferKind kind, StringRef of, std::optional<int64_t> mb,
               int64_t elements, Type element) {
    auto type = RankedTensorType::get({elements}, element);
    return BufferOp::create(b, loc, type,
                            BufferKindAttr::get(b.getContext(), kind),
                            b.getStringAttr(of), microBatchAttr(mb));
  }

  void gather(UnitState &unit) {
    if (unit.holds || unit.part->gatherElements == 0)
      return;
    unit.holds = true;
    if (!unit.shard)
      return;
    auto type =
        RankedTensorType::get({unit.part->gatherElements}, unit.part->compute);
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
    if (isRoot && rootHeld)
      rootReleased();
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
                    int64_t gradients, ArrayRef<int64_t> tensors = {}) {
    if (!working && !logits && !saved && !gradients)
      return {};
    // One tensor is what the parts say already.
    SmallVector<int64_t> made;
    llvm::copy_if(tensors, std::back_inserter(made),
                  [](int64_t t) { return t > 0; });
    DenseI64ArrayAttr blocks =
        made.size() > 1 ? b.getDenseI64ArrayAttr(made) : DenseI64ArrayAttr();
    return StepPeakAttr::get(b.getContext(), working, logits, saved, gradients,
                             blocks);
  }

  /// `bytes` the preceding compute step leaves (nothing for none).
  Value alloc(AllocKind kind, StringRef of, std::optional<int64_t> mb,
              int64_t bytes) {
    if (bytes <= 0)
      return {};
    return AllocOp::create(b, loc,
                           RankedTensorType::get({bytes}, b.getIntegerType(8)),
                           AllocKindAttr::get(b.getContext(), kind),
                           b.getStringAttr(of), microBatchAttr(mb));
  }

  /// What the root's gradients add when a backward first produces them
  /// (FSDP2 holds them from lm_head's backward to the root's
  /// reduce-scatter), and the embedding's when only its backward does.
  int64_t rootHoldBytes() const {
    if (rootHeld)
      return 0;
    return mem.root.unshardedGradients - mem.lateRootGradients +
           (accumulate && !rootShards && !defers(root)
                ? mem.root.shardedGradients
                : 0);
  }
  int64_t lateBytes() const { return lateHeld ? 0 : mem.lateRootGradients; }

  void holdRoot(int64_t mb) {
    if (rootHeld) {
      // Deferred sync: a later micro-batch's root gradients, added into
      // the held ones before the next compute step.
      if (defers(root) && rootAddedAt != mb) {
        rootAddedAt = mb;
        producedRoot(mem.root.unshardedGradients - mem.lateRootGradients, mb);
      }
      return;
    }
    rootAddedAt = mb;
    rootHeld = true;
    if (Value grads =
            alloc(AllocKind::Gradients, "", mb,
                  mem.root.unshardedGradients - mem.lateRootGradients))
      rootGradients.push_back(grads);
    if (accumulate && !rootShards && !defers(root)) {
      rootShards = true;
      alloc(AllocKind::GradientShards, "", std::nullopt,
            mem.root.shardedGradients);
    }
  }

  void holdLate(std::optional<int64_t> mb) {
    if (lateHeld) {
      if (defers(root) && mb && lateAddedAt != *mb) {
        lateAddedAt = *mb;
        producedRoot(mem.lateRootGradients, *mb);
      }
      return;
    }
    if (mb)
      lateAddedAt = *mb;
    lateHeld = true;
    if (Value grads =
            alloc(AllocKind::Gradients, "", mb, mem.lateRootGradients))
      rootGradients.push_back(grads);
  }

  /// The compute-dtype share of `bytes` of the root's held gradients, made
  /// by a backward and added in before the next compute step.
  void producedRoot(int64_t bytes, int64_t mb) {
    const UnitFootprint &fp = mem.root;
    if (fp.gradientBytes <= 0)
      return;
    if (Value grads = alloc(AllocKind::Gradients, "", mb,
                            bytes / fp.gradientBytes * fp.computeBytes))
      settling.push_back({grads, nullptr});
  }

  /// A layer's backward leaves its unsharded gradients (read by its
  /// reduce-scatter, or added into the parameters' own before the next
  /// compute step) and, from its first backward, its gradient shards.
  void produceGradients(UnitState &unit, int64_t mb) {
    const UnitFootprint *fp = footprint(unit);
    if (!fp)
      return;
    if (defers(unit)) {
      // The first backward's gradients become the unit's accumulated ones
      // (converted to the reduce dtype where it differs); each later
      // backward's are added in and freed before the next compute step.
      auto [it, first] = accumulated.try_emplace(&unit);
      if (first)
        it->second = alloc(AllocKind::Gradients, unit.part->path, mb,
                           fp->accumulatedGradients);
      if (!first || unit.part->compute != unit.part->reduce)
        if (Value grads = alloc(AllocKind::Gradients, unit.part->path, mb,
                                fp->producedGradients))
          settling.push_back({grads, nullptr});
      // Its gradient shards appear with its one reduce-scatter.
      return;
    }
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
    rootReleased();
    for (Value grads : rootGradients)
      FreeOp::create(b, loc, grads);
    rootGradients.clear();
  }

  /// The root's gradients have been reduced (or added in): with one
  /// micro-batch its gradient shards appear now; a next micro-batch's
  /// backward produces them again.
  void rootReleased() {
    if (!accumulate)
      alloc(AllocKind::GradientShards, "", std::nullopt,
            mem.root.shardedGradients);
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
    auto type = RankedTensorType::get({unit.part->gradElements / plan.shards},
                                      unit.part->reduce);
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
      if (defers(root) && !rootShards) {
        rootShards = true;
        alloc(AllocKind::GradientShards, "", std::nullopt,
              mem.root.shardedGradients);
      }
    }
    if (Value grads = accumulated.lookup(&unit)) {
      scattering.push_back(grads);
      accumulated.erase(&unit);
      if (const UnitFootprint *fp = footprint(unit))
        alloc(AllocKind::GradientShards, unit.part->path, std::nullopt,
              fp->shardedGradients);
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
            b, loc, RankedTensorType::get({part}, c.element), tpGrid, axes, in,
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
    Value in =
        buffer(gradient ? BufferKind::ActivationGrad : BufferKind::Activation,
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
      ForwardStepOp::create(b, loc, rootPath, tailPart, mbAttr, IntegerAttr(),
                            peak(0, loss.kept + loss.transient, loss.rootSaved,
                                 0, loss.forwardTensors));
      tpCollectives(ArrayRef(plan.rootTp.forward).drop_front(headForward),
                    false, "", mb, plan.seq);
      if (loss.rootSaved > 0)
        tailKept[mb].push_back(SaveOp::create(
            b, loc,
            RankedTensorType::get({loss.rootSaved}, b.getIntegerType(8)),
            rootPath, tailPart, mbAttr, IntegerAttr()));
      // One allocation per tensor the loss keeps, where a caching
      // allocator places each on its own.
      for (int64_t bytes : loss.keptTensors)
        if (Value kept = alloc(AllocKind::Logits, "", mb, bytes))
          tailKept[mb].push_back(kept);
    } else {
      transfer(/*send=*/true, /*gradient=*/false, (stage + 1) % plan.stages,
               boundaryPath(chunk, false), mb);
    }
  }

  void backward(const PipelineStep &step, ArrayRef<size_t> chunk) {
    int64_t mb = step.microBatch;
    IntegerAttr mbAttr = indices[mb], chunkA = chunkAttr(step.chunk);
    // Under deferred gradient sync a unit reduce-scatters after its chunk's
    // last backward, all micro-batches' gradients at once.
    bool lastBackward = --backwardsLeft[step.chunk] == 0;
    auto scatter = [&](UnitState &unit) {
      if (!defers(unit))
        reduceScatter(unit, mb);
      else if (lastBackward)
        reduceScatter(unit, std::nullopt);
    };
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
              : peak(0, lossGrads, 0, 0, loss.gradientTensors);
      BackwardStepOp::create(b, loc, rootPath, tailPart, mbAttr, IntegerAttr(),
                             highest);
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
      if (layer.remat != RematKind::None)
        RecomputeStepOp::create(b, loc, layer.path, mbAttr, chunkA,
                                RematKindAttr::get(b.getContext(), layer.remat),
                                b.getI64IntegerAttr(layer.recomputedBytes));
      // A full recompute reruns the forward's TP collectives (selective
      // remat recomputes no op that communicates; the op policy's rerun is
      // counted with all of them, those of the linears it keeps included).
      if (layer.remat == RematKind::Full || layer.remat == RematKind::Op)
        tpCollectives(layer.tp.forward, false, layer.path.getValue(), mb,
                      layer.tokens);
      settle();
      // The rebuilt activations (the recompute's bytes) join its peak; its
      // gradients appear as it frees its saved activations.
      const UnitFootprint *fp = footprint(unit);
      int64_t accumulating = accumulate && fp ? fp->accumulationTransient : 0;
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
      scatter(unit);
      release(unit);
    }
    if (isFirstVirtual(step.chunk)) {
      ready(nullptr);
      settle();
      // The embedding's backward, the last of the step: its gradient joins
      // the root's.
      BackwardStepOp::create(b, loc, rootPath, headPart, mbAttr, IntegerAttr(),
                             peak(0, 0, 0, rootHoldBytes() + lateBytes()));
      holdRoot(mb);
      holdLate(mb);
      tpCollectives(ArrayRef(plan.rootTp.backward).take_front(headBackward),
                    true, "", mb, plan.seq);
      if (plan.stages == 1) {
        scatter(root);
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
      auto op = shard::AllReduceOp::create(b, loc, grad.getType(), ppGrid, axes,
                                           grad);
      op->setAttr("parc.group",
                  DenseI64ArrayAttr::get(b.getContext(), copy.stages));
    }
    // Data-parallel replicas add their (sharded) gradients.
    int64_t params = 0;
    for (UnitState &unit :
         llvm::concat<UnitState>(llvm::MutableArrayRef(&root, 1), units)) {
      params += unit.part->gradElements / plan.shards;
      if (plan.dpSize == 1 || unit.part->gradElements == 0)
        continue;
      Value grad = unit.reducedGrad;
      if (!grad)
        grad = buffer(BufferKind::Gradient, unit.part->path, std::nullopt,
                      unit.part->gradElements / plan.shards, unit.part->reduce);
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
  /// The micro-batch whose root (and embedding) gradients were last added.
  int64_t rootAddedAt = -1, lateAddedAt = -1;
  llvm::DenseSet<UnitState *> backwarded, scatteredOnce;
  /// Deferred gradient sync: each unit's accumulated unsharded gradients,
  /// and the backwards of each chunk still to run on this stage.
  llvm::DenseMap<UnitState *, Value> accumulated;
  std::map<int64_t, int64_t> backwardsLeft;
  /// What the loss keeps for its backward, per micro-batch.
  std::map<int64_t, SmallVector<Value>> tailKept;
  std::map<std::pair<size_t, int64_t>, Value> saved;
};

LogicalResult lowerModel(ModelOp model, const LowerToScheduleOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  if (!(options.maxNorm >= 0))
    return mlir::emitError(model->getLoc())
           << "lower-to-schedule: max-norm must be >= 0 (0: no clipping), got "
           << options.maxNorm;
  FailureOr<SchedulePlan> plan =
      readSchedulePlan(model, options.seqLen, options.microBatch,
                       options.gradAccumulation, options.imageTokens,
                       chooseKernels(hardware->kernels, options.attentionKernel,
                                     options.normKernel, options.lossKernel));
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
    ProgramWriter(*plan, stage, body, loc).write();
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
    options.attentionKernel = attentionKernel;
    options.normKernel = normKernel;
    options.lossKernel = lossKernel;
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
