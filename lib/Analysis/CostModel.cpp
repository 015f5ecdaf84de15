//===- CostModel.cpp - per-step time from FLOPs and collectives -----------===//
//
// FLOPs come from the model's own op graph, traced like the memory replay
// traces it: each layer's forward is inlined through parc.call at the run's
// micro-batch and sequence, and every op contributes its forward FLOPs, its
// backward FLOPs (the gradients that are actually needed: a frozen weight
// has no weight gradient, an input nothing trainable precedes has no input
// gradient) and, under remat, the forward backward reruns. Communication
// comes from the FSDP units: the bytes every all-gather and reduce-scatter
// moves over a ring. A two-stream timeline of one micro-batch (compute on
// one stream, collectives in issue order on the other) gives the exposed
// communication. docs/cost-model.md states every convention.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CostModel.h"

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/LayerStacks.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

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

namespace {

/// Forward FLOPs per output element of the elementwise ops: ignorable next
/// to the matmuls, but counted.
constexpr double kAddFlops = 1, kMulFlops = 1, kRmsNormFlops = 4,
                 kLayerNormFlops = 7, kRopeFlops = 3, kSoftcapFlops = 3,
                 kCrossEntropyFlops = 4, kPoolFlops = 1;

double activationFlops(ActivationKind kind) {
  switch (kind) {
  case ActivationKind::Silu:
    return 4; // exp, add, divide, multiply
  case ActivationKind::GeluTanh:
  case ActivationKind::Gelu:
    return 8;
  case ActivationKind::Relu:
    return 1;
  }
  return 1;
}

/// (query, key) pairs one sequence of `queries` attends under the mask: a
/// causal row i sees min(i + 1, window) keys; a bidirectional row
/// min(keys, window).
double attendedPairs(int64_t queries, int64_t keys, bool causal,
                     std::optional<int64_t> window) {
  if (!causal) {
    double seen = window ? std::min(keys, *window) : keys;
    return double(queries) * seen;
  }
  double s = double(queries);
  double w = window ? std::min<double>(*window, s) : s;
  return w * (w + 1) / 2 + (s - w) * w;
}

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
  FlopTracer(int64_t batch, int64_t tokens, bool stopAtLayers, StringRef remat)
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
  bool isTrainable(Operation *op, SymbolRefAttr ref) {
    if (!ref)
      return false;
    auto param = tables.lookupNearestSymbolFrom<ParamOp>(op, ref);
    return param && !isFrozen(param);
  }

  SmallVector<Tensor> traceOp(Operation &op, ArrayRef<Tensor> operands) {
    auto weight = op.getAttrOfType<SymbolRefAttr>("weight");
    auto bias = op.getAttrOfType<SymbolRefAttr>("bias");
    bool weightGrad = isTrainable(&op, weight);
    bool biasGrad = isTrainable(&op, bias);
    bool inputGrad = anyGrad(operands);
    bool outputGrad = inputGrad || weightGrad || biasGrad;
    SmallVector<Tensor> results;
    for (Value value : op.getResults())
      results.push_back(newTensor(value.getType(), outputGrad));
    double out = results.empty() ? 0 : results.front().elements();

    double forward = 0, backward = 0;
    llvm::TypeSwitch<Operation *>(&op)
        .Case<LinearOp, MatmulOp, PatchEmbeddingOp>([&](auto) {
          // 2 x rows x in x out: each output element is an in-long dot
          // product, and the weight holds in x out elements.
          auto param = tables.lookupNearestSymbolFrom<ParamOp>(&op, weight);
          double in =
              param
                  ? double(param.getNumElements()) /
                        double(std::max<int64_t>(1, results.front().lastDim()))
                  : 0;
          double matmul = 2 * out * in;
          result.matmulForward += matmul;
          forward = matmul + (bias ? out : 0);
          // Backward: the weight gradient (x^T dy) and the input gradient
          // (dy W) are each a matmul of the forward's size.
          backward = matmul * ((weightGrad ? 1 : 0) + (inputGrad ? 1 : 0)) +
                     (biasGrad ? out : 0);
        })
        .Case([&](AttentionOp attention) {
          const Tensor &query = operands[0], &key = operands[1];
          int64_t queries =
              query.shape.size() >= 2 ? query.shape[query.shape.size() - 2] : 1;
          int64_t keys =
              key.shape.size() >= 2 ? key.shape[key.shape.size() - 2] : 1;
          double sequences =
              query.elements() /
              std::max<double>(1, double(query.lastDim()) * double(queries));
          double pairs =
              sequences * attendedPairs(queries, keys, attention.getCausal(),
                                        attention.getSlidingWindow());
          // q k^T and p v: 2 FLOPs per pair, head and head dim each.
          forward = 4 * pairs * double(attention.getNumHeads()) *
                    double(attention.getHeadDim());
          result.attentionForward += forward;
          // dv = p^T do, dp = do v^T, dq = ds k, dk = ds^T q.
          backward = inputGrad ? 2 * forward : 0;
        })
        .Case([&](EmbeddingOp) {
          // A gather: no arithmetic (the scale, where there is one, is an
          // elementwise multiply).
          forward = op.hasAttr("scale") ? out : 0;
          backward = 0;
        })
        .Default([&](Operation *) {
          double perElement =
              llvm::TypeSwitch<Operation *, double>(&op)
                  .Case([](AddOp) { return kAddFlops; })
                  .Case([](MulOp) { return kMulFlops; })
                  .Case([](ActivationOp activation) {
                    return activationFlops(activation.getKind());
                  })
                  .Case([](RmsNormOp) { return kRmsNormFlops; })
                  .Case([](LayerNormOp) { return kLayerNormFlops; })
                  .Case([](RopeOp) { return kRopeFlops; })
                  .Case([](SoftcapOp) { return kSoftcapFlops; })
                  .Case([](PositionEmbeddingOp) { return kAddFlops; })
                  .Default([](Operation *) { return 0.0; });
          double elements = out;
          if (isa<CrossEntropyOp>(op)) {
            perElement = kCrossEntropyFlops;
            elements = operands[0].elements();
          } else if (isa<AvgPoolTokensOp>(op)) {
            perElement = kPoolFlops;
            elements = operands[0].elements();
          }
          forward = perElement * elements;
          // By convention twice the forward, like the matmuls.
          backward = outputGrad ? 2 * forward : 0;
        });
    result.forward += forward;
    result.backward += backward;
    if (remat == "full" ||
        (remat == "selective" && op.hasAttr("parc.recompute")))
      result.recompute += forward;
    return results;
  }

  int64_t batch, tokens;
  StringRef remat;
  llvm::DenseMap<Operation *, bool> trainableModules;
  FlopCount result;
};

/// One FSDP unit (or a stage's part of the root) as the cost model sees it,
/// per rank.
struct UnitCost : FsdpUnitPlace {
  double gatherBytes = 0;    // unsharded, compute dtype
  double reduceBytes = 0;    // unsharded gradients, reduce dtype
  double optimizerBytes = 0; // AdamW traffic over this rank's shard
  FlopCount flops;           // one micro-batch, on one TP rank
  /// TP collectives on the critical path of one micro-batch: the forward's,
  /// their conjugates in backward, and the forward's again under full
  /// recompute.
  double tpForwardSeconds = 0, tpBackwardSeconds = 0;
  double tpBytes = 0;
};

UnitCost getUnitCost(const FsdpUnitSize &size, int64_t shards) {
  UnitCost unit;
  static_cast<FsdpUnitPlace &>(unit) = size;
  unit.gatherBytes = double(size.elements) * double(size.computeBytes);
  unit.reduceBytes = double(size.trainableElements) * double(size.reduceBytes);
  // AdamW reads the parameter, its gradient and both moments and writes the
  // parameter and both moments back.
  unit.optimizerBytes = double(size.trainableElements) / double(shards) *
                        double(3 * size.masterBytes + 4 * size.optimBytes);
  return unit;
}

/// Bytes per token of the TP collectives `--apply-tp` recorded, by kind.
struct TpTraffic {
  double allReduce = 0, gatherOrScatter = 0;
};

/// The communication stream: collectives run one after another in the
/// order they are issued, each from when it is issued.
struct CommStream {
  double free = 0, busy = 0;
  /// Where to record each collective; null for nowhere.
  std::vector<TimedStep> *timeline = nullptr;
  double issue(double ready, double seconds, StringRef name = "",
               double bytes = 0) {
    double start = std::max(ready, free);
    free = start + seconds;
    busy += seconds;
    if (timeline) {
      TimedStep step;
      step.name = name.str();
      step.stream = TimedStep::Communication;
      step.start = start;
      step.duration = seconds;
      step.issued = ready;
      step.bytes = bytes;
      timeline->push_back(std::move(step));
    }
    return free;
  }
};

/// One micro-batch of the FSDP step on two streams; returns its length.
/// Forward: unit i's pre-forward (when the previous unit's compute ends)
/// all-gathers i .. i + prefetch not yet gathered, and its compute waits for
/// its own all-gather (and the root's). The root's own compute (final norm,
/// lm_head, loss and their backward) runs after the last layer. Backward in
/// reverse: the pre-backward all-gathers again the resharded units i ..
/// i - prefetch, the compute (recompute + backward) waits for it, and the
/// reduce-scatter is issued when it ends; the root reduce-scatters last.
double simulateMicroBatch(ArrayRef<UnitCost> units,
                          llvm::function_ref<double(double)> commSeconds,
                          double achievedFlops,
                          std::vector<TimedStep> *timeline = nullptr) {
  size_t n = units.size();
  CommStream comm;
  comm.timeline = timeline;
  std::vector<double> gathered(n, -1), regathered(n, -1);
  double t = 0;
  auto seconds = [&](double flops) { return flops / achievedFlops; };
  // Records compute [start, end) under `name`; the replay's own arithmetic
  // is left as it is.
  auto compute = [&](std::string name, double start, double end, double flops) {
    if (!timeline)
      return;
    TimedStep step;
    step.name = std::move(name);
    step.start = start;
    step.duration = end - start;
    step.flops = flops;
    timeline->push_back(std::move(step));
  };
  auto nameOf = [&](size_t k) {
    return units[k].layer ? units[k].path : std::string("root");
  };
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = i; k <= i + size_t(units[i].prefetch) && k < n; ++k)
      if (gathered[k] < 0)
        gathered[k] =
            comm.issue(t, commSeconds(units[k].gatherBytes),
                       "all-gather " + nameOf(k), units[k].gatherBytes);
    if (i == 0)
      continue;
    t = std::max({t, gathered[i], gathered[0]});
    double start = t;
    t += seconds(units[i].flops.forward) + units[i].tpForwardSeconds;
    compute("forward " + units[i].path, start, t, units[i].flops.forward);
  }
  t = std::max(t, gathered[0]);
  {
    const FlopCount &root = units[0].flops;
    double start = t;
    t += seconds(root.forward + root.backward + root.recompute) +
         units[0].tpForwardSeconds + units[0].tpBackwardSeconds;
    double split =
        std::min(t, start + seconds(root.forward) + units[0].tpForwardSeconds);
    compute("forward loss", start, split, root.forward);
    compute("backward loss", split, t, root.backward + root.recompute);
  }
  for (size_t i = n; i-- > 1;) {
    for (size_t k = i, ahead = 0; k >= 1 && ahead <= size_t(units[i].prefetch);
         --k, ++ahead)
      if (regathered[k] < 0)
        regathered[k] =
            units[k].reshardAfterForward
                ? comm.issue(t, commSeconds(units[k].gatherBytes),
                             "all-gather " + nameOf(k), units[k].gatherBytes)
                : gathered[k];
    t = std::max(t, regathered[i]);
    double start = t;
    t += seconds(units[i].flops.backward + units[i].flops.recompute) +
         units[i].tpBackwardSeconds;
    double split = start;
    if (units[i].flops.recompute > 0) {
      split = std::min(t, start + seconds(units[i].flops.recompute));
      compute("recompute " + units[i].path, start, split,
              units[i].flops.recompute);
    }
    compute("backward " + units[i].path, split, t, units[i].flops.backward);
    if (units[i].reduceBytes > 0)
      comm.issue(t, commSeconds(units[i].reduceBytes),
                 "reduce-scatter " + units[i].path, units[i].reduceBytes);
  }
  if (units[0].reduceBytes > 0)
    comm.issue(t, commSeconds(units[0].reduceBytes), "reduce-scatter root",
               units[0].reduceBytes);
  return std::max(t, comm.free);
}

} // namespace

FlopCount mlir::parc::countLayerFlops(NNModuleOp layer, StringRef remat,
                                      int64_t batch, int64_t tokens,
                                      bool inputRequiresGrad) {
  return FlopTracer(batch, tokens, /*stopAtLayers=*/false, remat)
      .trace(layer.getForward(), inputRequiresGrad);
}

RootFlops mlir::parc::countRootFlops(ModelOp model, int64_t batch,
                                     int64_t tokens) {
  RootFlops flops;
  auto forward =
      dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward"));
  if (!forward)
    return flops;
  FlopTracer tracer(batch, tokens, /*stopAtLayers=*/true, "none");
  FlopCount total = tracer.trace(forward, /*argsRequireGrad=*/false);
  flops.head = tracer.beforeLastLayer;
  flops.tail.forward = total.forward - flops.head.forward;
  flops.tail.backward = total.backward - flops.head.backward;
  flops.tail.recompute = total.recompute - flops.head.recompute;
  flops.tail.matmulForward = total.matmulForward - flops.head.matmulForward;
  flops.tail.attentionForward =
      total.attentionForward - flops.head.attentionForward;
  return flops;
}

FailureOr<CostReport> mlir::parc::estimateCost(ModelOp model,
                                               const CostOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  if (options.seqLen <= 0 || options.microBatch <= 0 ||
      options.gradAccumulation <= 0 || options.imageTokens < 0 ||
      options.gpusPerNode < 0)
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs positive seq, mbs and gradient "
              "accumulation";
  if (!(options.computeEfficiency > 0 && options.computeEfficiency <= 1))
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs a compute efficiency in (0, 1], got "
           << options.computeEfficiency;
  std::optional<double> overlapFraction;
  if (options.overlap == "none") {
    overlapFraction = 0;
  } else if (options.overlap != "schedule") {
    double fraction = 0;
    if (StringRef(options.overlap).getAsDouble(fraction) || fraction < 0 ||
        fraction > 1)
      return mlir::emitError(model->getLoc())
             << "estimate-cost overlap must be 'schedule', 'none' or a "
                "fraction in [0, 1], got '"
             << options.overlap << "'";
    overlapFraction = fraction;
  }
  if (hardware->bf16Flops <= 0 || hardware->memoryBandwidth <= 0 ||
      hardware->intraNodeBandwidth <= 0 || hardware->interNodeBandwidth <= 0)
    return mlir::emitError(model->getLoc())
           << "hardware profile '" << hardware->name
           << "' needs positive FLOP/s and bandwidths for a cost estimate";

  CostReport report;
  report.hardware = *hardware;
  report.options = options;
  FailureOr<FsdpUnitSizes> sizes = getFsdpUnitSizes(model, "estimate-cost");
  if (failed(sizes))
    return failure();
  report.ranks = sizes->shards;
  TpPlan tp = getTpPlan(model);
  PpPlan pp = getPpPlan(model);
  int64_t stages = pp.stages;
  report.tpSize = tp.size;
  report.ppStages = stages;
  report.ppChunks = pp.chunks;
  report.ppSchedule = pp.schedule;
  // One micro-batch per step of the schedule; without PP, grad accumulation.
  int64_t microBatches =
      pp.isPipelined() ? pp.microbatches : options.gradAccumulation;
  report.microBatches = microBatches;

  SmallVector<UnitCost> roots;
  SmallVector<SmallVector<UnitCost>> layers(stages);
  for (const FsdpUnitSize &root : sizes->roots)
    roots.push_back(getUnitCost(root, sizes->shards));
  for (auto [stage, units] : llvm::enumerate(sizes->layers))
    for (const FsdpUnitSize &unit : units)
      layers[stage].push_back(getUnitCost(unit, sizes->shards));

  // FLOPs of one micro-batch: the root's own ops (the layers stopped at),
  // which also tells whether each layer's input needs a gradient, then
  // every layer at its stack's tokens under its remat decision. Under TP a
  // rank does 1/tp of them (the replicated norms are counted as split too).
  FlopTracer rootTracer(options.microBatch, options.seqLen,
                        /*stopAtLayers=*/true, "none");
  FlopCount rootFlops = rootTracer.trace(
      cast<func::FuncOp>(SymbolTable::lookupSymbolIn(model, "forward")),
      /*argsRequireGrad=*/false);
  FlopCount head = rootTracer.beforeLastLayer, tail = rootFlops;
  tail.forward -= head.forward;
  tail.backward -= head.backward;
  tail.recompute -= head.recompute;
  tail.matmulForward -= head.matmulForward;
  tail.attentionForward -= head.attentionForward;
  auto tokensOf = [&](NNModuleOp layer) {
    auto tag = getLayerTag(layer);
    return tag && StringRef(tag->first).starts_with("vision")
               ? options.imageTokens
               : options.seqLen;
  };
  FlopCount modelMicro = rootFlops; // the whole model, one micro-batch
  auto scale = [](FlopCount flops, double factor) {
    flops.forward *= factor;
    flops.backward *= factor;
    flops.recompute *= factor;
    flops.matmulForward *= factor;
    flops.attentionForward *= factor;
    return flops;
  };
  double perTpRank = 1.0 / double(tp.size);
  for (auto &stageUnits : layers)
    for (UnitCost &unit : stageUnits) {
      auto remat = unit.layer->getAttrOfType<StringAttr>("parc.remat");
      auto inputGrad = rootTracer.layerInputGrad.find(unit.layer);
      FlopCount flops = countLayerFlops(
          unit.layer, remat ? remat.getValue() : "none", options.microBatch,
          tokensOf(unit.layer),
          inputGrad == rootTracer.layerInputGrad.end() || inputGrad->second);
      modelMicro += flops;
      unit.flops = scale(flops, perTpRank);
    }
  for (int64_t stage = 0; stage < stages; ++stage) {
    FlopCount flops;
    if (stage == 0)
      flops += head;
    if (stage == stages - 1)
      flops += tail;
    roots[stage].flops = scale(flops, perTpRank);
  }

  int64_t gpusPerNode =
      options.gpusPerNode > 0 ? options.gpusPerNode : hardware->gpusPerNode;
  // Ranks are laid out TP innermost, then FSDP, then PP (as torchtitan's
  // device mesh): a group is intra-node when its span fits in a node.
  auto linkFor = [&](int64_t span, double &bandwidth, std::string &link) {
    bool intra = span <= gpusPerNode;
    link = intra ? "intra-node" : "inter-node";
    bandwidth =
        intra ? hardware->intraNodeBandwidth : hardware->interNodeBandwidth;
  };
  linkFor(report.ranks * tp.size, report.bandwidth, report.link);
  linkFor(tp.size, report.tpBandwidth, report.tpLink);
  double n = double(report.ranks);
  auto commSeconds = [&](double bytes) {
    return report.ranks > 1 ? (n - 1) / n * bytes / report.bandwidth : 0.0;
  };
  report.peakFlops = hardware->bf16Flops;
  report.achievedFlops = hardware->bf16Flops * options.computeEfficiency;

  // TP collectives: a ring all-reduce moves 2 (t - 1) / t of the tensor
  // through each link, an all-gather or reduce-scatter (t - 1) / t.
  if (tp.size > 1) {
    double t = double(tp.size);
    llvm::DenseMap<Operation *, UnitCost *> unitOfLayer;
    for (auto &stageUnits : layers)
      for (UnitCost &unit : stageUnits)
        unitOfLayer[unit.layer] = &unit;
    model.walk([&](Operation *op) {
      auto entries = op->getAttrOfType<ArrayAttr>("parc.tp_collectives");
      if (!entries)
        return;
      NNModuleOp layer;
      for (Operation *cur = op->getParentOp(); cur && !isa<ModelOp>(cur);
           cur = cur->getParentOp())
        if (auto module = dyn_cast<NNModuleOp>(cur); module && getLayerTag(module))
          layer = module;
      UnitCost *unit = layer ? unitOfLayer.lookup(layer)
                             : &roots[isa<EmbeddingOp>(op) ? 0 : stages - 1];
      if (!unit)
        return;
      double tokens = double(options.microBatch) *
                      double(layer ? tokensOf(layer) : options.seqLen);
      for (auto entry : entries.getAsRange<DictionaryAttr>()) {
        double bytes =
            double(entry.getAs<IntegerAttr>("bytes_per_token").getInt()) *
            tokens;
        bool allReduce = entry.getAs<StringAttr>("kind").getValue() ==
                         "all_reduce";
        double seconds = (allReduce ? 2 : 1) * (t - 1) / t * bytes /
                         report.tpBandwidth;
        unit->tpForwardSeconds += seconds;
        unit->tpBackwardSeconds += seconds;
        unit->tpBytes += 2 * bytes;
        auto remat =
            layer ? layer->getAttrOfType<StringAttr>("parc.remat") : nullptr;
        if (remat && remat.getValue() == "full") {
          unit->tpBackwardSeconds += seconds;
          unit->tpBytes += bytes;
        }
      }
    });
  }

  // One micro-batch of each stage on two streams (FSDP collectives
  // overlapping compute), and the totals of one micro-batch.
  struct StageMicro {
    FlopCount flops;
    double gatherBytes = 0, reduceBytes = 0, optimizerBytes = 0;
    int64_t gathers = 0, reduces = 0;
    double compute = 0, tpSeconds = 0, tpBytes = 0, seconds = 0;
    std::vector<TimedStep> timeline;
  };
  std::vector<StageMicro> micro(stages);
  for (int64_t stage = 0; stage < stages; ++stage) {
    SmallVector<UnitCost> units{roots[stage]};
    llvm::append_range(units, layers[stage]);
    StageMicro &m = micro[stage];
    for (const UnitCost &unit : units) {
      m.flops += unit.flops;
      bool regather = unit.layer && unit.reshardAfterForward;
      m.gatherBytes += unit.gatherBytes * (regather ? 2 : 1);
      m.gathers += regather ? 2 : 1;
      if (unit.reduceBytes > 0) {
        m.reduceBytes += unit.reduceBytes;
        ++m.reduces;
      }
      m.optimizerBytes += unit.optimizerBytes;
      m.tpSeconds += unit.tpForwardSeconds + unit.tpBackwardSeconds;
      m.tpBytes += unit.tpBytes;
    }
    m.compute = m.flops.total() / report.achievedFlops + m.tpSeconds;
    double comm = commSeconds(m.gatherBytes) + commSeconds(m.reduceBytes);
    m.seconds = overlapFraction
                    ? m.compute + comm - std::min(*overlapFraction * comm,
                                                  m.compute)
                    : simulateMicroBatch(units, commSeconds,
                                         report.achievedFlops, &m.timeline);
  }

  // The slowest stage sets the per-rank totals the report shows.
  for (int64_t stage = 1; stage < stages; ++stage)
    if (micro[stage].seconds > micro[report.slowestStage].seconds)
      report.slowestStage = stage;
  const StageMicro &slow = micro[report.slowestStage];
  double accum = double(microBatches);
  report.flops = scale(slow.flops, accum);
  // Tokens per GPU per step: each micro-batch is shared by tp x pp ranks.
  report.tokensPerStep = accum * double(options.microBatch) *
                         double(options.seqLen) / double(tp.size * stages);
  report.modelFlopsPerToken =
      modelMicro.model() /
      (double(options.microBatch) * double(options.seqLen));
  report.allGatherBytes = slow.gatherBytes * accum;
  report.reduceScatterBytes = slow.reduceBytes * accum;
  report.allGathers = slow.gathers * microBatches;
  report.reduceScatters = slow.reduces * microBatches;
  if (pp.isPipelined() && microBatches > 1) {
    // Through a pipeline's micro-batches the root stays gathered and its
    // gradient is reduced once, as the lowered programs do it.
    const UnitCost &root = roots[report.slowestStage];
    double repeats = accum - 1;
    report.allGatherBytes -= root.gatherBytes * repeats;
    if (root.gatherBytes > 0)
      report.allGathers -= microBatches - 1;
    report.reduceScatterBytes -= root.reduceBytes * repeats;
    if (root.reduceBytes > 0)
      report.reduceScatters -= microBatches - 1;
  }
  report.computeSeconds = slow.compute * accum;
  if (report.ranks == 1) {
    // One shard: FSDP gathers and scatters nothing (the lowered programs
    // hold no such collective either).
    report.allGatherBytes = report.reduceScatterBytes = 0;
    report.allGathers = report.reduceScatters = 0;
  }
  report.communicationSeconds = commSeconds(report.allGatherBytes) +
                                commSeconds(report.reduceScatterBytes);
  report.tpBytes = slow.tpBytes * accum;
  report.tpSeconds = slow.tpSeconds * accum;
  report.optimizerBytes = slow.optimizerBytes;
  report.optimizerSeconds = slow.optimizerBytes / hardware->memoryBandwidth;

  // Tied copies over PP: each holder all-reduces its copy's gradient shard
  // with the other holders, across the pipeline (the furthest-apart ranks).
  if (auto copies = model->getAttrOfType<ArrayAttr>(kPpTiedCopiesAttrName)) {
    int64_t reduceBytes = sizes->roots.front().reduceBytes;
    for (auto entry : copies.getAsRange<DictionaryAttr>()) {
      auto params = entry.getAs<ArrayAttr>("params");
      auto holders = entry.getAs<ArrayAttr>("stages");
      if (!params || params.empty() || !holders || holders.size() < 2)
        continue;
      auto owner = dyn_cast_or_null<ParamOp>(SymbolTable::lookupSymbolIn(
          model, cast<SymbolRefAttr>(params[0])));
      if (!owner || isFrozen(owner))
        continue;
      double h = double(holders.size());
      double bytes = double(ShapedType::getNumElements(
                         getTpLocalShape(owner, tp.size))) /
                     double(report.ranks) * double(reduceBytes);
      double bandwidth = 0;
      std::string link;
      linkFor(report.ranks * tp.size * stages, bandwidth, link);
      report.tiedBytes += bytes;
      report.tiedSeconds += 2 * (h - 1) / h * bytes / bandwidth;
    }
  }

  // HSDP: a ring all-reduce moves 2 (d - 1) / d of the gradient shard; the
  // replicas of one FSDP group are furthest apart of the data axes.
  report.dpReplicas = std::max<int64_t>(1, getGridSize(model, kDpGridName));
  if (report.dpReplicas > 1) {
    double d = double(report.dpReplicas);
    linkFor(report.ranks * tp.size * report.dpReplicas, report.dpBandwidth,
            report.dpLink);
    report.dpBytes = slow.reduceBytes / double(report.ranks);
    report.dpSeconds =
        2 * (d - 1) / d * report.dpBytes / report.dpBandwidth;
  }

  if (!pp.isPipelined()) {
    if (!overlapFraction) {
      report.microBatchTimeline = slow.timeline;
      report.microBatchSeconds = slow.seconds;
    }
    report.exposedCommunicationSeconds =
        std::max(0.0, slow.seconds - slow.compute) * accum;
    report.stepSeconds =
        slow.seconds * accum + report.dpSeconds + report.optimizerSeconds;
    return report;
  }

  // The pipeline: every stage runs its emitted steps in order; a forward
  // waits for the previous virtual stage's forward of that micro-batch and
  // the transfer of its activations, a backward for the next virtual
  // stage's backward (the last virtual stage's for its own forward).
  int64_t chunks = pp.chunks, virtualStages = stages * chunks;
  int64_t hidden = 0;
  if (!sizes->layers.front().empty())
    if (func::FuncOp forward = sizes->layers.front().front().layer.getForward())
      if (forward.getNumArguments() > 0)
        if (auto type =
                dyn_cast<RankedTensorType>(forward.getArgument(0).getType())) {
          hidden = type.getShape().back();
          report.p2pBytes = double(options.microBatch) *
                            double(options.seqLen) * double(hidden) *
                            double((type.getElementTypeBitWidth() + 7) / 8) /
                            (tp.sequenceParallel ? double(tp.size) : 1.0);
        }
  double p2pBandwidth = 0;
  std::string p2pLink;
  linkFor(report.ranks * tp.size * 2, p2pBandwidth, p2pLink);
  report.p2pSeconds = report.p2pBytes / p2pBandwidth;

  // Per (stage, chunk): forward and backward seconds of one micro-batch,
  // with the stage's exposed FSDP communication spread over them by
  // compute share.
  auto chunkUnits = [&](int64_t stage, int64_t chunk) {
    SmallVector<const UnitCost *> units;
    for (const UnitCost &unit : layers[stage])
      if (unit.chunk == chunk)
        units.push_back(&unit);
    return units;
  };
  auto forwardOf = [&](const UnitCost &unit) {
    return unit.flops.forward / report.achievedFlops + unit.tpForwardSeconds;
  };
  auto backwardOf = [&](const UnitCost &unit) {
    return (unit.flops.backward + unit.flops.recompute) /
               report.achievedFlops +
           unit.tpBackwardSeconds;
  };
  std::vector<double> stretch(stages, 1.0);
  for (int64_t stage = 0; stage < stages; ++stage)
    if (micro[stage].compute > 0)
      stretch[stage] = std::max(1.0, micro[stage].seconds / micro[stage].compute);

  struct Done {
    double forward = -1, backward = -1;
  };
  std::vector<std::vector<Done>> done(
      virtualStages, std::vector<Done>(microBatches));
  std::vector<size_t> next(stages, 0);
  std::vector<double> free(stages, 0), busy(stages, 0);
  report.stageTimelines.assign(stages, {});
  auto suffix = [](int64_t mb) {
    return " (micro-batch " + std::to_string(mb) + ")";
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t stage = 0; stage < stages; ++stage) {
      if (next[stage] >= pp.steps[stage].size())
        continue;
      const PipelineStep &step = pp.steps[stage][next[stage]];
      int64_t g = step.chunk * stages + stage, mb = step.microBatch;
      if (mb >= microBatches || g >= virtualStages) {
        ++next[stage];
        progress = true;
        continue;
      }
      double ready = 0;
      if (step.forward && g > 0) {
        if (done[g - 1][mb].forward < 0)
          continue;
        ready = done[g - 1][mb].forward + report.p2pSeconds;
      } else if (!step.forward) {
        double dep = g == virtualStages - 1 ? done[g][mb].forward
                                            : done[g + 1][mb].backward;
        if (dep < 0)
          continue;
        ready = dep + (g == virtualStages - 1 ? 0 : report.p2pSeconds);
      }
      double t = std::max(free[stage], ready);
      std::vector<TimedStep> &timeline = report.stageTimelines[stage];
      auto run = [&](std::string name, double seconds, double flops) {
        TimedStep timed;
        timed.name = std::move(name) + suffix(mb);
        timed.start = t;
        timed.duration = seconds * stretch[stage];
        timed.flops = flops;
        timed.microBatch = mb;
        t += timed.duration;
        timeline.push_back(std::move(timed));
      };
      SmallVector<const UnitCost *> units = chunkUnits(stage, step.chunk);
      const UnitCost &root = roots[stage];
      bool first = g == 0, last = g == virtualStages - 1;
      if (step.forward) {
        if (first)
          run("forward embedding", forwardOf(root), root.flops.forward);
        for (const UnitCost *unit : units)
          run("forward " + unit->path, forwardOf(*unit), unit->flops.forward);
        if (last)
          run("forward loss", forwardOf(root), root.flops.forward);
        done[g][mb].forward = t;
      } else {
        if (last)
          run("backward loss", backwardOf(root),
              root.flops.backward + root.flops.recompute);
        for (const UnitCost *unit : llvm::reverse(units))
          run("backward " + unit->path, backwardOf(*unit),
              unit->flops.backward + unit->flops.recompute);
        if (first)
          run("backward embedding", backwardOf(root),
              root.flops.backward + root.flops.recompute);
        done[g][mb].backward = t;
      }
      bool sends = step.forward ? !last : !first;
      if (sends) {
        TimedStep send;
        send.name = std::string(step.forward ? "send activations"
                                             : "send activation gradients") +
                    suffix(mb);
        send.stream = TimedStep::Communication;
        send.start = send.issued = t;
        send.duration = report.p2pSeconds;
        send.bytes = report.p2pBytes;
        send.microBatch = mb;
        timeline.push_back(std::move(send));
      }
      busy[stage] += t - std::max(free[stage], ready);
      free[stage] = t;
      ++next[stage];
      progress = true;
    }
  }
  for (int64_t stage = 0; stage < stages; ++stage)
    if (next[stage] < pp.steps[stage].size())
      return mlir::emitError(model->getLoc())
             << "estimate-cost: the pipeline schedule of stage " << stage
             << " cannot run: step " << next[stage]
             << " waits on a step no stage runs";
  report.pipelineSeconds = *llvm::max_element(free);
  double slowBusy = busy[report.slowestStage];
  report.bubbleFraction =
      slowBusy > 0 ? (report.pipelineSeconds - slowBusy) / slowBusy : 0;
  report.closedFormBubble =
      double(stages - 1) / (double(chunks) * double(microBatches));
  report.exposedCommunicationSeconds =
      std::max(0.0, slow.seconds - slow.compute) * accum;
  report.stepSeconds = report.pipelineSeconds + report.tiedSeconds +
                       report.dpSeconds + report.optimizerSeconds;
  return report;
}

/// After the last backward: the replicas' all-reduce (HSDP), then the
/// optimizer step.
static void appendStepEnd(const CostReport &report, double start,
                          std::vector<TimedStep> &steps) {
  auto allReduce = [&](const char *name, double seconds, double bytes) {
    if (seconds <= 0)
      return;
    TimedStep step;
    step.name = name;
    step.stream = TimedStep::Communication;
    step.start = step.issued = start;
    step.duration = seconds;
    step.bytes = bytes;
    step.microBatch = -1;
    steps.push_back(std::move(step));
    start += seconds;
  };
  allReduce("tied all-reduce", report.tiedSeconds, report.tiedBytes);
  allReduce("dp all-reduce", report.dpSeconds, report.dpBytes);
  TimedStep optimizer;
  optimizer.name = "optimizer step";
  optimizer.start = start;
  optimizer.duration = report.optimizerSeconds;
  optimizer.bytes = report.optimizerBytes;
  optimizer.microBatch = -1;
  steps.push_back(std::move(optimizer));
}

std::vector<TimedStep> CostReport::getStepTimeline(size_t stage) const {
  std::vector<TimedStep> steps;
  if (!stageTimelines.empty()) {
    if (stage < stageTimelines.size())
      steps = stageTimelines[stage];
    appendStepEnd(*this, pipelineSeconds, steps);
    return steps;
  }
  if (microBatchTimeline.empty())
    return steps;
  int64_t accum = options.gradAccumulation;
  steps.reserve(microBatchTimeline.size() * accum + 1);
  for (int64_t micro = 0; micro < accum; ++micro)
    for (const TimedStep &step : microBatchTimeline) {
      TimedStep copy = step;
      double offset = double(micro) * microBatchSeconds;
      copy.start += offset;
      copy.issued += offset;
      copy.microBatch = micro;
      steps.push_back(std::move(copy));
    }
  appendStepEnd(*this, double(accum) * microBatchSeconds, steps);
  return steps;
}

void CostReport::print(llvm::raw_ostream &os) const {
  // The layout the step is timed on: FSDP shards alone, or every axis.
  os << "step time per rank (";
  if (dpReplicas > 1)
    os << "dp " << dpReplicas << " x ";
  os << "fsdp";
  if (tpSize > 1 || ppStages > 1 || dpReplicas > 1) {
    os << " " << ranks;
    if (tpSize > 1)
      os << " x tp " << tpSize;
    if (ppStages > 1)
      os << " x pp " << ppStages;
    os << ", " << dpReplicas * ranks * tpSize * ppStages;
  } else {
    os << ", " << ranks;
  }
  os << " ranks) on " << hardware.description << ":\n";
  auto flopsRow = [&](StringRef what, double value) {
    os << "  " << llvm::left_justify(what, 26) << llvm::format("%22.0f", value)
       << " FLOPs\n";
  };
  flopsRow("forward", flops.forward);
  flopsRow("backward", flops.backward);
  flopsRow("recompute", flops.recompute);
  flopsRow("total", flops.total());
  flopsRow("model FLOPs per token", modelFlopsPerToken);
  auto timeRow = [&](StringRef what, double seconds, const llvm::Twine &how) {
    os << "  " << llvm::left_justify(what, 26)
       << llvm::format("%14.6g s", seconds) << "  " << how << "\n";
  };
  std::string computeHow, commHow, optimHow;
  llvm::raw_string_ostream(computeHow)
      << "at " << llvm::format("%g", options.computeEfficiency * 100) << "% of "
      << llvm::format("%g", peakFlops / 1e12) << " TFLOP/s";
  llvm::raw_string_ostream(commHow)
      << allGathers << " all-gathers " << llvm::format("%.0f", allGatherBytes)
      << " B, " << reduceScatters << " reduce-scatters "
      << llvm::format("%.0f", reduceScatterBytes) << " B, ring over " << link
      << " " << llvm::format("%g", bandwidth / 1e9) << " GB/s";
  llvm::raw_string_ostream(optimHow)
      << llvm::format("%.0f", optimizerBytes) << " B at "
      << llvm::format("%g", hardware.memoryBandwidth / 1e9) << " GB/s";
  timeRow("compute", computeSeconds, computeHow);
  timeRow("communication", communicationSeconds, commHow);
  timeRow("exposed communication", exposedCommunicationSeconds,
          "overlap " + options.overlap);
  if (tpSize > 1)
    timeRow("TP collectives", tpSeconds,
            llvm::formatv("{0:F0} B on the critical path, ring over {1} "
                          "{2} GB/s",
                          tpBytes, tpLink, tpBandwidth / 1e9));
  if (ppStages > 1)
    timeRow("pipeline", pipelineSeconds,
            llvm::formatv("{0} x {1} stages{2}, {3} micro-batches; bubble "
                          "{4:F2}% (closed form {5:F2}%), slowest stage {6}",
                          ppSchedule, ppStages,
                          ppChunks > 1 ? llvm::formatv(" x {0} chunks",
                                                       ppChunks).str()
                                       : std::string(),
                          microBatches, bubbleFraction * 100,
                          closedFormBubble * 100, slowestStage));
  if (tiedSeconds > 0)
    timeRow("tied all-reduce", tiedSeconds,
            llvm::formatv("{0:F0} B of tied copies' gradients between the "
                          "first and last stage",
                          tiedBytes));
  if (dpReplicas > 1)
    timeRow("DP all-reduce", dpSeconds,
            llvm::formatv("{0:F0} B gradient shards over {1} replicas, ring "
                          "over {2} {3} GB/s (before the optimizer step)",
                          dpBytes, dpReplicas, dpLink, dpBandwidth / 1e9));
  timeRow("optimizer step", optimizerSeconds, optimHow);
  timeRow("step", stepSeconds,
          "x " + llvm::Twine(microBatches) + " micro-batches");
  os << "  " << llvm::left_justify("tokens/s/GPU", 26)
     << llvm::format("%14.6g", tokensPerSecondPerGpu()) << "\n";
  os << "  " << llvm::left_justify("MFU", 26)
     << llvm::format("%13.2f%%", mfu() * 100) << "\n";
}
