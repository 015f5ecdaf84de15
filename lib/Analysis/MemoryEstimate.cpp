//===- MemoryEstimate.cpp - replay one training step per rank -------------===//
//
// The estimate is a replay, not a sum of maxima: it walks the step in the
// order FSDP runs it and keeps a running breakdown of live bytes, so the peak
// is the largest total that exists at one moment and the phase it happens in
// is known. Activation bytes come from the model's own op graph: each op saves
// what its autograd backward needs (a linear its input, attention q, k, v and
// its output, a norm its input), shared tensors counted once.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/MemoryEstimate.h"

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/LayerStacks.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

int64_t bytesOf(Type type) { return (type.getIntOrFloatBitWidth() + 7) / 8; }

/// What one forward (a layer, or the root's own ops) keeps for backward.
/// Tensors are numbered; a tensor passed down through parc.call keeps its
/// number so that two ops saving it count it once.
struct ForwardTrace {
  std::vector<int64_t> elements;
  /// Tensors some op's backward needs.
  llvm::DenseSet<int> saved;
  /// Results of ops that selective remat does not recompute (matmuls and
  /// attention): what op-level checkpointing stores.
  llvm::DenseSet<int> keptOutputs;
  /// fp32 statistics ops save beside tensors (attention logsumexp, norm
  /// rstd), in bytes.
  int64_t statisticsBytes = 0;
  /// The largest single op's operands plus result, in elements: the
  /// transient working set while the forward runs.
  int64_t largestOpElements = 0;
  int input = -1;
  /// Logits entering the loss, and how many logit-sized tensors the
  /// softcap/loss path keeps (root only).
  int64_t logitsElements = 0;
  int64_t softcaps = 0;

  int64_t bytes(const llvm::DenseSet<int> &ids, int64_t elementBytes) const {
    int64_t total = 0;
    for (int id : ids)
      total += elements[id] * elementBytes;
    return total;
  }
};

class ForwardTracer : public ForwardWalker<ForwardTracer, int> {
public:
  ForwardTracer(int64_t batch, int64_t tokens, bool stopAtLayers)
      : ForwardWalker(stopAtLayers), batch(batch), tokens(tokens) {}

  ForwardTrace trace(func::FuncOp forward) {
    SmallVector<int> args;
    for (BlockArgument arg : forward.getArguments())
      args.push_back(newTensor(arg.getType()));
    if (!args.empty())
      result.input = args.front();
    walk(forward, args);
    return std::move(result);
  }

  SmallVector<int> visitOp(Operation &op, ArrayRef<int> operands) {
    SmallVector<int> results;
    for (Value value : op.getResults())
      results.push_back(newTensor(value.getType()));
    recordSaves(op, operands, results);
    return results;
  }

  SmallVector<int> visitOpaqueCall(CallOp call, NNModuleOp, ArrayRef<int>) {
    SmallVector<int> results;
    for (Value value : call.getResults())
      results.push_back(newTensor(value.getType()));
    return results;
  }

private:
  int newTensor(Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    int64_t count = 1;
    if (tensor)
      for (auto [dim, extent] : llvm::enumerate(tensor.getShape()))
        count *= ShapedType::isDynamic(extent) ? (dim == 0 ? batch : tokens)
                                               : extent;
    result.elements.push_back(tensor ? count : 0);
    return result.elements.size() - 1;
  }

  void recordSaves(Operation &op, ArrayRef<int> operands,
                   ArrayRef<int> results) {
    int64_t touched = 0;
    for (int id : operands)
      touched += result.elements[id];
    for (int id : results)
      touched += result.elements[id];
    result.largestOpElements = std::max(result.largestOpElements, touched);

    auto &saved = result.saved;
    if (!op.hasAttr("parc.recompute"))
      result.keptOutputs.insert(results.begin(), results.end());
    int64_t rows = operands.empty()
                       ? 0
                       : result.elements[operands[0]] /
                             std::max<int64_t>(1, lastDim(op.getOperand(0)));
    llvm::TypeSwitch<Operation *>(&op)
        .Case<LinearOp, MatmulOp, PatchEmbeddingOp>(
            [&](auto) { saved.insert(operands[0]); })
        .Case([&](AttentionOp attention) {
          saved.insert(operands.begin(), operands.end());
          saved.insert(results[0]);
          // Flash attention keeps one fp32 logsumexp per query and head.
          result.statisticsBytes += rows * attention.getNumHeads() * 4;
        })
        .Case<RmsNormOp, LayerNormOp>([&](auto norm) {
          saved.insert(operands[0]);
          int64_t groupSize = getNormSize(norm, norm.getWeight());
          result.statisticsBytes +=
              rows * (lastDim(norm.getInput()) / groupSize) * 4;
        })
        .Case([&](ActivationOp) { saved.insert(operands[0]); })
        .Case([&](MulOp) { saved.insert(operands.begin(), operands.end()); })
        .Case([&](SoftcapOp) {
          result.softcaps += 1;
          saved.insert(results[0]);
        })
        .Case([&](EmbeddingOp) {
          // The int64 ids, in bytes of the compute dtype they stand beside.
          result.statisticsBytes += result.elements[operands[0]] * 8;
        })
        .Case([&](CrossEntropyOp) {
          result.logitsElements = result.elements[operands[0]];
        });
  }

  static int64_t lastDim(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    int64_t extent = type.getShape().back();
    return ShapedType::isDynamic(extent) ? 1 : extent;
  }

  int64_t getNormSize(Operation *norm, SymbolRefAttr weight) {
    auto param = tables.lookupNearestSymbolFrom<ParamOp>(norm, weight);
    return param ? std::max<int64_t>(1, param.getTensorType().getDimSize(0))
                 : 1;
  }

  int64_t batch, tokens;
  ForwardTrace result;
};

/// One FSDP unit as the replay sees it, in bytes per rank.
struct UnitFootprint {
  std::string path;
  NNModuleOp layer; // null for the root
  bool reshardAfterForward = true;
  int64_t prefetch = 1;
  int64_t unshardedParameters = 0; // compute dtype, whole unit
  int64_t shardedParameters = 0;   // master dtype, this rank's shard
  int64_t shardedGradients = 0;
  int64_t unshardedGradients = 0; // compute dtype (+ reduce copy)
  int64_t optimizerState = 0;
  int64_t computeBytes = 2; // bytes per activation element
};

FailureOr<SmallVector<UnitFootprint>> collectUnits(ModelOp model) {
  SmallVector<UnitFootprint> units;
  int64_t shards = getFsdpShardCount(model);
  if (shards <= 0)
    return mlir::emitError(model->getLoc())
           << "estimate-memory needs an FSDP plan: run "
              "--apply-fsdp (with shards=1 for a single rank)";

  llvm::StringMap<NNModuleOp> layerByPath = getLayersByPath(model);
  // Cached symbol tables: a nested reference walks the layer container,
  // and there is one per parameter.
  SymbolTableCollection tables;
  for (FsdpUnitOp unitOp : model.getBody()->getOps<FsdpUnitOp>()) {
    UnitFootprint unit;
    unit.path = unitOp.getPath().str();
    unit.layer = layerByPath.lookup(unit.path);
    unit.reshardAfterForward = unitOp.getReshardAfterForward();
    unit.prefetch = unitOp.getPrefetch();
    int64_t compute = bytesOf(unitOp.getComputeDtype());
    int64_t master = bytesOf(unitOp.getMasterDtype());
    int64_t reduce = bytesOf(unitOp.getReduceDtype());
    int64_t optim = bytesOf(unitOp.getOptimDtype());
    unit.computeBytes = compute;
    for (ShardParamOp shard : unitOp.getBody()->getOps<ShardParamOp>()) {
      auto param =
          cast<ParamOp>(tables.lookupSymbolIn(model, shard.getParam()));
      int64_t dim0 = param.getTensorType().getDimSize(0);
      int64_t padded = param.getNumElements() / dim0 * shard.getPaddedDim0();
      int64_t perRank = padded / shards;
      unit.unshardedParameters += padded * compute;
      unit.shardedParameters += perRank * master;
      if (shard->hasAttr("frozen"))
        continue;
      unit.shardedGradients += perRank * master;
      // Gradients are produced unsharded in the compute dtype and copied to
      // the reduce dtype for the reduce-scatter when the two differ.
      unit.unshardedGradients +=
          padded * (compute + (reduce != compute ? reduce : 0));
      // AdamW: first and second moments.
      unit.optimizerState += 2 * perRank * optim;
    }
    units.push_back(std::move(unit));
  }
  // Root first, then layers in execution order.
  SmallVector<NNModuleOp> order = getLayersInExecutionOrder(model);
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [index, layer] : llvm::enumerate(order))
    position[layer] = index + 1;
  llvm::stable_sort(units, [&](const UnitFootprint &a, const UnitFootprint &b) {
    return position.lookup(a.layer) < position.lookup(b.layer);
  });
  return units;
}

/// Running totals of one rank's replay.
class Replay {
public:
  explicit Replay(RankMemory &rank) : rank(rank) {}
  MemoryBreakdown live;

  void note(const std::string &phase) {
    rank.timeline.push_back({phase, live});
    if (live.total() > rank.peakBytes) {
      rank.peakBytes = live.total();
      rank.atPeak = live;
      rank.peakPhase = phase;
    }
  }

private:
  RankMemory &rank;
};

/// Activation bytes a layer keeps and recomputes under its remat decision.
struct LayerActivations {
  int64_t saved = 0, recomputed = 0, working = 0;
};

LayerActivations activationsOf(const ForwardTrace &trace, StringRef remat,
                               int64_t elementBytes) {
  const llvm::DenseSet<int> &all = trace.saved;
  LayerActivations result;
  result.working = trace.largestOpElements * elementBytes;
  int64_t everything = trace.bytes(all, elementBytes) + trace.statisticsBytes;
  int64_t input =
      trace.input >= 0 ? trace.elements[trace.input] * elementBytes : 0;
  if (remat == "full") {
    result.saved = input;
    result.recomputed = everything;
  } else if (remat == "selective") {
    // Op-level checkpointing stores the layer input and the outputs of the
    // ops it does not recompute; backward rebuilds every other saved tensor.
    llvm::DenseSet<int> kept = trace.keptOutputs;
    kept.insert(trace.input);
    result.saved = trace.bytes(kept, elementBytes) + trace.statisticsBytes;
    llvm::DenseSet<int> rebuilt;
    for (int id : all)
      if (!kept.contains(id))
        rebuilt.insert(id);
    result.recomputed = trace.bytes(rebuilt, elementBytes);
  } else {
    result.saved = everything;
  }
  return result;
}

} // namespace

LayerActivationBytes
mlir::parc::estimateLayerActivations(NNModuleOp layer, StringRef remat,
                                     int64_t batch, int64_t tokens,
                                     int64_t elementBytes) {
  ForwardTrace trace = ForwardTracer(batch, tokens, /*stopAtLayers=*/false)
                           .trace(layer.getForward());
  LayerActivations acts = activationsOf(trace, remat, elementBytes);
  return {acts.saved, acts.recomputed};
}

FailureOr<MemoryReport>
mlir::parc::estimateMemory(ModelOp model, const MemoryOptions &options) {
  std::string dir = options.hardwareDir.empty() ? getDefaultHardwareDir()
                                                : options.hardwareDir;
  FailureOr<HardwareProfile> hardware =
      loadHardwareProfile(options.hardware, dir, model.getLoc());
  if (failed(hardware))
    return failure();
  if (options.seqLen <= 0 || options.microBatch <= 0 ||
      options.gradAccumulation <= 0)
    return mlir::emitError(model->getLoc())
           << "estimate-memory needs positive seq, mbs and "
              "gradient accumulation";
  FailureOr<SmallVector<UnitFootprint>> units = collectUnits(model);
  if (failed(units))
    return failure();

  MemoryReport report;
  report.hardware = *hardware;
  RankMemory &rank = report.ranks.emplace_back();
  rank.rankKind = "fsdp";
  rank.rankCount = getFsdpShardCount(model);
  Replay replay(rank);
  MemoryBreakdown &live = replay.live;

  // What lives through the whole step.
  live.fixedOverhead = hardware->fixedOverheadBytes;
  for (const UnitFootprint &unit : *units) {
    live.shardedParameters += unit.shardedParameters;
    live.optimizerState += unit.optimizerState;
    if (options.gradAccumulation > 1)
      live.gradients += unit.shardedGradients;
  }
  replay.note("start of step");

  auto tokensOf = [&](NNModuleOp layer) {
    auto tag = getLayerTag(layer);
    return tag && StringRef(tag->first).starts_with("vision")
               ? options.imageTokens
               : options.seqLen;
  };
  int64_t computeBytes = units->front().computeBytes;
  std::vector<LayerActivations> activations(units->size());
  for (auto [index, unit] : llvm::enumerate(*units)) {
    if (!unit.layer)
      continue;
    ForwardTrace trace = ForwardTracer(options.microBatch, tokensOf(unit.layer),
                                       /*stopAtLayers=*/false)
                             .trace(unit.layer.getForward());
    auto remat = unit.layer->getAttrOfType<StringAttr>("parc.remat");
    activations[index] = activationsOf(trace, remat ? remat.getValue() : "none",
                                       unit.computeBytes);
  }
  ForwardTrace rootTrace =
      ForwardTracer(options.microBatch, options.seqLen, /*stopAtLayers=*/true)
          .trace(cast<func::FuncOp>(
              SymbolTable::lookupSymbolIn(model, "forward")));
  // The logits path is counted as the loss spike, not as saved activations.
  int64_t logits = rootTrace.logitsElements;
  int64_t rootSaved = activationsOf(rootTrace, "none", computeBytes).saved -
                      rootTrace.softcaps * logits * computeBytes;

  std::vector<bool> gathered(units->size(), false);
  auto gather = [&](size_t index) {
    if (index < units->size() && !gathered[index]) {
      gathered[index] = true;
      live.unshardedParameters += (*units)[index].unshardedParameters;
    }
  };
  auto release = [&](size_t index) {
    if (gathered[index]) {
      gathered[index] = false;
      live.unshardedParameters -= (*units)[index].unshardedParameters;
    }
  };

  // Forward: the root stays gathered until its backward (FSDP2 does not
  // reshard the root after forward).
  for (size_t index = 0; index < units->size(); ++index) {
    const UnitFootprint &unit = (*units)[index];
    for (int64_t ahead = 0; ahead <= unit.prefetch; ++ahead)
      gather(index + ahead);
    if (!unit.layer) {
      replay.note("forward all-gather root");
      continue;
    }
    live.recomputeWorkingSet += activations[index].working;
    replay.note("forward " + unit.path);
    live.recomputeWorkingSet -= activations[index].working;
    live.savedActivations += activations[index].saved;
    if (unit.reshardAfterForward)
      release(index);
  }
  live.savedActivations += rootSaved;
  // Logits, softcap output and the fp32 log-softmax the loss keeps.
  live.logitsAndLoss = logits * (computeBytes * (1 + rootTrace.softcaps) + 4);
  replay.note("forward loss");

  // Backward of the loss: the fp32 gradient of the logits joins them.
  live.logitsAndLoss += logits * 4;
  replay.note("backward loss");
  // lm_head backward: the logits gradient in the compute dtype and the root's
  // unsharded gradients, reduce-scattered only when the root's backward ends.
  const UnitFootprint &root = units->front();
  live.logitsAndLoss = logits * computeBytes;
  live.gradients += root.unshardedGradients;
  replay.note("backward lm_head");
  live.logitsAndLoss = 0;
  live.savedActivations -= rootSaved;

  for (size_t index = units->size(); index-- > 1;) {
    const UnitFootprint &unit = (*units)[index];
    for (int64_t behind = 0; behind <= unit.prefetch && behind < int64_t(index);
         ++behind)
      gather(index - behind);
    const LayerActivations &acts = activations[index];
    live.recomputeWorkingSet += acts.recomputed + acts.working;
    live.gradients += unit.unshardedGradients;
    replay.note("backward " + unit.path);
    live.recomputeWorkingSet -= acts.recomputed + acts.working;
    live.savedActivations -= acts.saved;
    if (options.gradAccumulation == 1)
      live.gradients += unit.shardedGradients;
    replay.note("reduce-scatter " + unit.path);
    live.gradients -= unit.unshardedGradients;
    release(index);
  }
  if (options.gradAccumulation == 1)
    live.gradients += root.shardedGradients;
  replay.note("reduce-scatter root");
  live.gradients -= root.unshardedGradients;
  release(0);
  replay.note("optimizer step");
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
    os << "memory per rank (" << rank.rankKind << ", " << rank.rankCount
       << " ranks) on " << hardware.description << ":\n";
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
     << formatBytes(headroomBytes()) << "\n";
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
  model->setAttr("parc.predicted_seq_len", b.getI64IntegerAttr(options.seqLen));
  model->setAttr("parc.predicted_micro_batch",
                 b.getI64IntegerAttr(options.microBatch));
}
