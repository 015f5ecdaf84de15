//===- MemoryEstimate.cpp - replay one training step per rank -------------===//
//
// The estimate is a replay, not a sum of maxima: it walks each rank kind's
// parc.program (the step parc-run executes, in its order) and keeps a
// running breakdown of live bytes, so the peak is the largest total that
// exists at one moment and the phase it happens in is known. What a forward
// keeps is traced on the op graph (ActivationTrace.cpp).
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/MemoryEstimate.h"

#include "ActivationTrace.h"

#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/Programs.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::parc;

namespace {


/// One FSDP unit as the replay sees it, in bytes per rank. The root unit
/// is split by pipeline stage: each stage holds the root parameters it uses
/// (the embedding on the first, the final norm and lm_head on the last, a
/// tied pair on both).
struct UnitFootprint : FsdpUnitPlace {
  int64_t unshardedParameters = 0; // compute dtype, whole unit
  int64_t shardedParameters = 0;   // master dtype, this rank's shard
  int64_t shardedGradients = 0;
  int64_t unshardedGradients = 0; // compute dtype (+ reduce copy)
  int64_t gradientBytes = 0;      // per unsharded gradient element
  int64_t optimizerState = 0;
  int64_t computeBytes = 2; // bytes per activation element
  /// Without FSDP, once .grad holds an earlier micro-batch's gradients, a
  /// backward makes each new gradient as a tensor of its own and adds it in
  /// place before the next: one extra gradient of the unit's largest
  /// parameter during its backward.
  int64_t accumulationTransient = 0;
};

UnitFootprint getFootprint(const FsdpUnitSize &size, int64_t shards) {
  UnitFootprint unit;
  static_cast<FsdpUnitPlace &>(unit) = size;
  unit.computeBytes = size.computeBytes;
  int64_t perRank = size.elements / shards;
  int64_t trainablePerRank = size.trainableElements / shards;
  // One shard in the compute dtype is no FSDP at all (torchtitan applies
  // fully_shard only over more than one rank): the forward runs on the
  // parameters themselves, with no gathered copy.
  bool computesOnMaster = shards == 1 && size.computeBytes == size.masterBytes;
  unit.unshardedParameters =
      computesOnMaster ? 0 : size.elements * size.computeBytes;
  unit.shardedParameters = perRank * size.masterBytes;
  unit.shardedGradients = trainablePerRank * size.masterBytes;
  // Gradients are produced unsharded in the compute dtype and copied to the
  // reduce dtype for the reduce-scatter when the two differ.
  unit.gradientBytes =
      size.computeBytes +
      (size.reduceBytes != size.computeBytes ? size.reduceBytes : 0);
  // Without FSDP the gradient is the parameter's own .grad, accumulated in
  // place: there is no unsharded copy to reduce-scatter from.
  if (computesOnMaster && size.reduceBytes == size.masterBytes) {
    unit.gradientBytes = 0;
    unit.accumulationTransient = size.largestTrainable * size.masterBytes;
  }
  unit.unshardedGradients = size.trainableElements * unit.gradientBytes;
  // AdamW: first and second moments.
  unit.optimizerState = 2 * trainablePerRank * size.optimBytes;
  return unit;
}

/// Per pipeline stage, the elements of the root's trainable parameters
/// whose gradient only the embedding's backward produces: an untied
/// embedding table. The embedding runs first, so its backward is the last
/// of the step and its gradient does not exist while the layers' backward
/// runs (a table tied to lm_head has one from lm_head's backward on).
SmallVector<int64_t> getLateRootGradientElements(ModelOp model,
                                                 int64_t tpSize) {
  PipelinePlacement placement(model);
  SmallVector<int64_t> late(placement.getStageCount(), 0);
  SymbolTableCollection tables;
  llvm::DenseSet<Operation *> embedded, other;
  walkModelGraph(model, [&](Operation *op) {
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(
              op, embedding.getWeight()))
        embedded.insert(param);
      return;
    }
    if (isa<ParamOp, ShardParamOp>(op))
      return;
    for (NamedAttribute attr : op->getAttrs())
      if (auto ref = dyn_cast<SymbolRefAttr>(attr.getValue()))
        if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(op, ref))
          other.insert(param);
  });
  for (FsdpUnitOp unit : model.getBody()->getOps<FsdpUnitOp>()) {
    if (!unit.getPath().empty())
      continue;
    for (ShardParamOp shard : unit.getBody()->getOps<ShardParamOp>()) {
      if (shard->hasAttr("frozen") || shard->hasAttr("tied"))
        continue;
      auto param = dyn_cast_or_null<ParamOp>(
          tables.lookupSymbolIn(model, shard.getParam()));
      if (!param || !embedded.contains(param) || other.contains(param))
        continue;
      SmallVector<int64_t> local = getTpLocalShape(param, tpSize);
      int64_t stage =
          std::min<int64_t>(placement.getStage(param), late.size() - 1);
      late[stage] += ShapedType::getNumElements(local) / local[0] *
                     shard.getPaddedDim0();
    }
  }
  return late;
}

struct StepUnits {
  /// Per stage: the root's part there, then the stage's layers in
  /// execution order.
  SmallVector<UnitFootprint> roots;
  SmallVector<SmallVector<UnitFootprint>> layers;
};

FailureOr<StepUnits> collectUnits(ModelOp model) {
  FailureOr<FsdpUnitSizes> sizes = getFsdpUnitSizes(model, "estimate-memory");
  if (failed(sizes))
    return failure();
  StepUnits result;
  for (const FsdpUnitSize &root : sizes->roots)
    result.roots.push_back(getFootprint(root, sizes->shards));
  for (const auto &stage : sizes->layers) {
    auto &units = result.layers.emplace_back();
    for (const FsdpUnitSize &unit : stage)
      units.push_back(getFootprint(unit, sizes->shards));
  }
  return result;
}

/// The buffer a collective reads, when it is one of `kind`.
BufferOp bufferOf(Value operand, BufferKind kind) {
  auto buffer = operand.getDefiningOp<BufferOp>();
  return buffer && buffer.getKind() == kind ? buffer : BufferOp();
}

/// One rank kind's replay: walks its program op by op. Allocations the
/// program names (gathered units, saved activations, recomputed bytes) are
/// the program's own sizes; what only exists inside a compute step (an
/// op's working set, the loss, gradients a backward produces) comes from
/// the traced op graph and the unit footprints, charged at that step.
class ProgramReplay {
public:
  ProgramReplay(RankMemory &rank, const UnitFootprint &root,
                ArrayRef<UnitFootprint> layers,
                const llvm::DenseMap<Operation *, LayerActivationBytes> &acts,
                const LossBytes &loss, int64_t lateRootGradients,
                bool accumulate)
      : rank(rank), root(root), acts(acts), loss(loss),
        lateRootGradients(lateRootGradients), accumulate(accumulate) {
    for (const UnitFootprint &unit : layers)
      byPath[unit.path] = &unit;
  }

  void run(ProgramOp program) {
    for (Operation &op : program.getBody()->getOperations()) {
      step(op);
      ++index;
    }
  }

  MemoryBreakdown live;

  void note(const std::string &phase, std::optional<int64_t> at = {},
            double within = 0) {
    rank.timeline.push_back({phase, live, at.value_or(index), within});
    if (live.total() > rank.peakBytes) {
      rank.peakBytes = live.total();
      rank.atPeak = live;
      rank.peakPhase = phase;
    }
  }

private:
  std::string suffix(int64_t microBatch) const {
    return rank.pipelined
               ? " (micro-batch " + std::to_string(microBatch) + ")"
                     : "";
  }

  void step(Operation &op) {
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](shard::AllGatherOp gather) {
          if (bufferOf(gather.getInput(), BufferKind::ParamShard)) {
            int64_t bytes = getBufferBytes(gather.getResult());
            live.unshardedParameters += bytes;
            allocated[gather.getResult()] = {bytes, /*saved=*/false};
          }
        })
        .Case([&](SaveOp save) {
          int64_t bytes = getBufferBytes(save.getResult());
          live.savedActivations += bytes;
          allocated[save.getResult()] = {bytes, /*saved=*/true};
        })
        .Case([&](FreeOp free) {
          auto it = allocated.find(free.getBuffer());
          if (it == allocated.end())
            return;
          (it->second.second ? live.savedActivations
                             : live.unshardedParameters) -= it->second.first;
          allocated.erase(it);
        })
        .Case([&](RecomputeStepOp recompute) {
          recomputed += recompute.getBytes();
          recomputeStep = index;
        })
        .Case([&](ForwardStepOp forward) { this->forward(forward); })
        .Case([&](BackwardStepOp backward) { this->backward(backward); })
        .Case([&](shard::ReduceScatterOp scatter) {
          // In flight until its wait: the unsharded gradient it reads lives
          // on through the steps between.
          if (auto grad = bufferOf(scatter.getInput(), BufferKind::Gradient)) {
            scattering[scatter.getResult()] = grad;
            for (PendingGradient &p : pending)
              if (p.unit->path == grad.getOf())
                p.scattering = true;
          }
        })
        .Case([&](WaitOp wait) {
          auto it = scattering.find(wait.getCollective());
          if (it == scattering.end())
            return;
          reduced(it->second.getOf(), it->second.getMicroBatch());
          scattering.erase(it);
        })
        .Case([&](OptimizerStepOp) {
          settleGradients();
          if (rootGradients)
            releaseRootGradients("gradients root");
          note("optimizer step");
        });
  }

  void forward(ForwardStepOp forward) {
    settleGradients();
    int64_t mb = forward.getMicroBatch();
    if (forward.getModule().empty()) {
      if (forward.getPart() != "tail")
        return note("forward head" + suffix(mb));
      live.savedActivations += loss.rootSaved;
      live.logitsAndLoss += loss.kept + loss.transient;
      note("forward loss" + suffix(mb));
      live.logitsAndLoss -= loss.transient;
      return;
    }
    const UnitFootprint *unit = byPath.lookup(forward.getModule());
    int64_t working = unit ? acts.lookup(unit->layer).working : 0;
    live.recomputeWorkingSet += working;
    note("forward " + forward.getModule().str() + suffix(mb));
    live.recomputeWorkingSet -= working;
  }

  void backward(BackwardStepOp backward) {
    settleGradients();
    int64_t mb = backward.getMicroBatch();
    if (backward.getModule().empty()) {
      if (backward.getPart() == "tail") {
        // Backward of the loss: the fp32 gradient of the logits joins
        // them; lm_head's backward then holds the logits gradient in the
        // compute dtype.
        live.logitsAndLoss += loss.gradients;
        note("backward loss" + suffix(mb));
        holdRootGradients();
        live.logitsAndLoss +=
            loss.logits * root.computeBytes - loss.kept - loss.gradients;
        int64_t transient = accumulate ? root.accumulationTransient : 0;
        live.recomputeWorkingSet += transient;
        note("backward lm_head" + suffix(mb), std::nullopt, 0.5);
        live.recomputeWorkingSet -= transient;
        live.logitsAndLoss -= loss.logits * root.computeBytes;
        live.savedActivations -= loss.rootSaved;
        return;
      }
      // The embedding's backward, the last of the step: its gradient joins
      // the root's.
      holdRootGradients();
      if (!lateRootHeld) {
        lateRootHeld = true;
        live.gradients += lateRootGradients;
      }
      return note("backward head" + suffix(mb));
    }
    holdRootGradients();
    const UnitFootprint *unit = byPath.lookup(backward.getModule());
    if (!unit)
      return;
    // The unit's backward frees its saved activations as it produces its
    // gradients: the layer starts with all of the former and none of the
    // latter, and ends the other way round. Charging both at once would be
    // the sum of maxima the replay exists to avoid.
    int64_t transient = recomputed + acts.lookup(unit->layer).working +
                        (accumulate ? unit->accumulationTransient : 0);
    live.recomputeWorkingSet += transient;
    // Drawn where the rebuilding starts: at the recompute, if any.
    note("backward " + unit->path + suffix(mb), recomputeStep);
    live.recomputeWorkingSet -= transient;
    recomputed = 0;
    recomputeStep.reset();
    live.gradients += unit->unshardedGradients;
    // The sharded gradient exists from the unit's first backward (when it
    // accumulates over micro-batches, until the optimizer step).
    if (!accumulate || firstBackward.insert(unit).second)
      live.gradients += unit->shardedGradients;
    pending.push_back({unit, mb});
  }

  /// The root's unsharded gradients from its first backward on (all but
  /// the embedding's, which only the embedding's backward produces).
  void holdRootGradients() {
    if (rootGradients)
      return;
    rootGradients = true;
    live.gradients += root.unshardedGradients - lateRootGradients;
    if (accumulate && !rootAccumulating) {
      rootAccumulating = true;
      live.gradients += root.shardedGradients;
    }
  }

  void releaseRootGradients(const std::string &phase) {
    if (!lateRootHeld)
      live.gradients += lateRootGradients;
    if (!accumulate)
      live.gradients += root.shardedGradients;
    note(phase);
    live.gradients -= root.unshardedGradients;
    rootGradients = lateRootHeld = false;
  }

  /// A reduce-scatter of `path`'s gradient: the unsharded gradient becomes
  /// this rank's shard of it.
  void reduced(StringRef path, std::optional<int64_t> mb) {
    std::string phase =
        "reduce-scatter " + (path.empty() ? std::string("root") : path.str()) +
        (mb ? suffix(*mb) : "");
    const UnitFootprint *unit = path.empty() ? &root : byPath.lookup(path);
    // Accumulating into a shard that exists already, the reduce-scatter's
    // result is a shard of its own until it is added in.
    int64_t transient = accumulate && unit && !scattered.insert(unit).second
                            ? unit->shardedGradients
                            : 0;
    live.gradients += transient;
    llvm::scope_exit added([&] { live.gradients -= transient; });
    if (path.empty())
      return rootGradients ? releaseRootGradients(phase) : void();
    auto it = llvm::find_if(pending, [&](const PendingGradient &p) {
      return p.scattering && p.unit->path == path;
    });
    if (it == pending.end())
      return;
    note(phase);
    live.gradients -= it->unit->unshardedGradients;
    pending.erase(it);
  }

  /// Gradients no collective reads (one shard: there is nothing to
  /// reduce-scatter) are added into the parameters' own gradients before
  /// the next step of the program.
  void settleGradients() {
    for (const PendingGradient &p : pending) {
      if (p.scattering)
        continue;
      note("gradients " + p.unit->path + suffix(p.microBatch));
      live.gradients -= p.unit->unshardedGradients;
    }
    llvm::erase_if(pending,
                   [](const PendingGradient &p) { return !p.scattering; });
  }

  struct PendingGradient {
    const UnitFootprint *unit;
    int64_t microBatch;
    /// Read by a reduce-scatter in flight: released at its wait.
    bool scattering = false;
  };

  RankMemory &rank;
  const UnitFootprint &root;
  const llvm::DenseMap<Operation *, LayerActivationBytes> &acts;
  const LossBytes &loss;
  int64_t lateRootGradients;
  bool accumulate;
  llvm::StringMap<const UnitFootprint *> byPath;
  /// Gathered units and saved activations: their bytes, and whether saved.
  llvm::DenseMap<Value, std::pair<int64_t, bool>> allocated;
  SmallVector<PendingGradient> pending;
  /// FSDP reduce-scatters issued and not yet waited for: their buffers.
  llvm::DenseMap<Value, BufferOp> scattering;
  int64_t recomputed = 0;
  std::optional<int64_t> recomputeStep;
  bool rootGradients = false, lateRootHeld = false;
  /// Units whose accumulated sharded gradient exists (from their first
  /// backward on); the root's.
  llvm::DenseSet<const UnitFootprint *> firstBackward;
  /// Units reduce-scattered at least once this step.
  llvm::DenseSet<const UnitFootprint *> scattered;
  bool rootAccumulating = false;
  /// The program op being replayed.
  int64_t index = 0;
};

} // namespace

FailureOr<MemoryReport>
mlir::parc::estimateMemory(ModelOp model, const MemoryOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  FailureOr<ProgramSet> set =
      getPrograms(model, "estimate-memory", options.seqLen,
                  options.microBatch, options.gradAccumulation);
  if (failed(set))
    return failure();
  ArrayRef<ProgramOp> programs = set->programs;
  int64_t seq = set->seq, batch = set->batch,
          microBatches = set->microBatches;
  FailureOr<StepUnits> units = collectUnits(model);
  if (failed(units))
    return failure();
  if (int64_t(programs.size()) != int64_t(units->roots.size()))
    return mlir::emitError(model->getLoc())
           << "estimate-memory: @" << model.getSymName() << " has "
           << programs.size() << " parc.program ops for "
           << units->roots.size()
           << " pipeline stages: run --lower-to-schedule again";
  TpPlan tp = getTpPlan(model);
  SmallVector<int64_t> lateRoot = getLateRootGradientElements(model, tp.size);

  auto tokensOf = [&](NNModuleOp layer) {
    auto tag = getLayerTag(layer);
    return tag && StringRef(tag->first).starts_with("vision")
               ? options.imageTokens
               : seq;
  };
  llvm::DenseMap<Operation *, LayerActivationBytes> activations;
  for (auto &stageUnits : units->layers)
    for (UnitFootprint &unit : stageUnits) {
      auto remat = unit.layer->getAttrOfType<StringAttr>("parc.remat");
      activations[unit.layer] = estimateLayerActivations(
          unit.layer, remat ? remat.getValue() : "none", batch,
          tokensOf(unit.layer), unit.computeBytes, tp, hardware->kernels);
    }
  LossBytes loss = getLossBytes(model, batch, seq, tp, hardware->kernels,
                                units->roots.front().computeBytes);

  MemoryReport report;
  report.hardware = *hardware;
  report.seqLen = seq;
  report.microBatch = batch;
  // Above one micro-batch per step the sharded gradients accumulate from
  // each unit's first backward to the optimizer step.
  bool accumulate = microBatches > 1;
  for (ProgramOp program : programs) {
    int64_t stage = getProgramStage(program);
    if (stage < 0 || stage >= int64_t(units->roots.size()))
      return program.emitError()
             << "estimate-memory: covers pp stage " << stage << " of "
             << units->roots.size();
    RankMemory &rank = report.ranks.emplace_back();
    bool pipelined = units->roots.size() > 1;
    rank.rankKind = pipelined ? "pp stage " + std::to_string(stage) : "fsdp";
    rank.rankCount = program.getRanks();
    rank.layers = units->layers[stage].size();
    rank.pipelined = pipelined;
    const UnitFootprint &root = units->roots[stage];
    ArrayRef<UnitFootprint> layers = units->layers[stage];
    ProgramReplay replay(rank, root, layers, activations, loss,
                         lateRoot[stage] * root.gradientBytes, accumulate);
    // What lives through the whole step.
    MemoryBreakdown &live = replay.live;
    live.fixedOverhead = hardware->fixedOverheadBytes;
    live.shardedParameters += root.shardedParameters;
    live.optimizerState += root.optimizerState;
    for (const UnitFootprint &unit : layers) {
      live.shardedParameters += unit.shardedParameters;
      live.optimizerState += unit.optimizerState;
    }
    replay.note("start of step", -1);
    replay.run(program);
  }
  for (size_t index = 1; index < report.ranks.size(); ++index)
    if (report.ranks[index].peakBytes > report.ranks[report.peakRank].peakBytes)
      report.peakRank = index;
  return report;
}

static std::string formatBytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.2f GiB", double(bytes) / double(1ll << 30));
  return text;
}

void MemoryReport::print(llvm::raw_ostream &os) const {
  for (const RankMemory &rank : ranks) {
    os << "memory per rank (" << rank.rankKind << ", ";
    if (rank.pipelined)
      os << rank.layers << (rank.layers == 1 ? " layer, " : " layers, ");
    os << rank.rankCount << " ranks) on " << hardware.description << ":\n";
    auto row = [&](StringRef what, int64_t bytes) {
      os << "  " << llvm::left_justify(what, 26)
         << llvm::right_justify(formatBytes(bytes), 12) << "  "
         << llvm::format_decimal(bytes, 16) << " bytes\n";
    };
    const MemoryBreakdown &b = rank.atPeak;
    row("sharded parameters", b.shardedParameters);
    row("unsharded parameters", b.unshardedParameters);
    row("gradients", b.gradients);
    row("optimizer state", b.optimizerState);
    row("saved activations", b.savedActivations);
    row("recompute working set", b.recomputeWorkingSet);
    row("logits and loss", b.logitsAndLoss);
    row("fixed overhead", b.fixedOverhead);
    row("peak", rank.peakBytes);
    os << "  peak during: " << rank.peakPhase << "\n";
  }
  os << "capacity " << formatBytes(hardware.memoryBytes) << ": "
     << (fits() ? "fits" : "DOES NOT FIT") << ", headroom "
     << formatBytes(headroomBytes());
  if (ranks.size() > 1)
    os << " on the most loaded rank (" << ranks[peakRank].rankKind << ")";
  os << "\n";
}

void mlir::parc::recordPrediction(ModelOp model, const MemoryReport &report,
                                  const MemoryOptions &options) {
  Builder b(model.getContext());
  model->setAttr("parc.predicted_peak_bytes",
                 b.getI64IntegerAttr(report.peakBytes()));
  model->setAttr("parc.predicted_peak_phase",
                 b.getStringAttr(report.ranks[report.peakRank].peakPhase));
  model->setAttr("parc.predicted_fits", b.getBoolAttr(report.fits()));
  model->setAttr("parc.predicted_hardware", b.getStringAttr(options.hardware));
  model->setAttr("parc.predicted_seq_len", b.getI64IntegerAttr(report.seqLen));
  model->setAttr("parc.predicted_micro_batch",
                 b.getI64IntegerAttr(report.microBatch));
  // One rank kind per pipeline stage, in stage order.
  if (report.ranks.size() > 1) {
    SmallVector<int64_t> peaks;
    for (const RankMemory &rank : report.ranks)
      peaks.push_back(rank.peakBytes);
    model->setAttr("parc.predicted_stage_peak_bytes",
                   b.getDenseI64ArrayAttr(peaks));
  } else {
    model->removeAttr("parc.predicted_stage_peak_bytes");
  }
}
