//===- MemoryEstimate.cpp - replay one training step per rank -------------===//
//
// The estimate is a replay, not a sum of maxima: it walks each rank kind's
// parc.program (the step parc-run executes, in its order) and keeps a
// running breakdown of live bytes, so the peak is the largest total that
// exists at one moment and the phase it happens in is known. Activation bytes come from the model's own op graph: each op saves
// what its autograd backward needs (a linear its input, attention q, k, v and
// its output, a norm its input), shared tensors counted once.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/MemoryEstimate.h"

#include "parc/Analysis/ForwardWalk.h"
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


/// What one forward (a layer, or the root's own ops) keeps for backward.
/// Tensors are numbered; a tensor passed down through parc.call keeps its
/// number so that two ops saving it count it once.
struct ForwardTrace {
  std::vector<int64_t> elements;
  /// Bytes per element of each tensor; 0 for the activation dtype (the
  /// unit's compute dtype), 4 for what a kernel keeps in fp32 whatever the
  /// compute dtype (eager softmax probabilities, an eager norm's products).
  std::vector<int64_t> widths;
  /// Tensors some op's backward needs.
  llvm::DenseSet<int> saved;
  /// What op-level checkpointing (selective remat) stores: the tensors the
  /// backward of each op it does not recompute needs (matmuls, attention),
  /// and what each recomputed op reads from outside the recomputed ops
  /// (a checkpointed group keeps its inputs).
  llvm::DenseSet<int> kept;
  /// Results of recomputed ops, and the statistics bytes they save (which
  /// selective remat rebuilds rather than keeps).
  llvm::DenseSet<int> recomputedResults;
  int64_t recomputedStatisticsBytes = 0;
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
      total += elements[id] * (widths[id] ? widths[id] : elementBytes);
    return total;
  }
};

class ForwardTracer : public ForwardWalker<ForwardTracer, int> {
public:
  ForwardTracer(int64_t batch, int64_t tokens, bool stopAtLayers,
                TpPlan tp = {}, KernelProfile kernels = {},
                int64_t elementBytes = 2)
      : ForwardWalker(stopAtLayers), batch(batch), tokens(tokens), tp(tp),
        kernels(kernels), elementBytes(elementBytes) {}

  ForwardTrace trace(func::FuncOp forward) {
    SmallVector<int> args;
    for (BlockArgument arg : forward.getArguments())
      args.push_back(newTensor(arg.getType()));
    if (!args.empty())
      result.input = args.front();
    // A layer's input is the residual stream, which sequence parallelism
    // splits over the sequence (Megatron's [s/tp, b, h]): what full remat
    // saves per layer is 1/tp of it.
    if (!args.empty() && !stopAtLayers && tp.size > 1 &&
        tp.sequenceParallel)
      result.elements[result.input] /= tp.size;
    walk(forward, args);
    return std::move(result);
  }

  SmallVector<int> visitOp(Operation &op, ArrayRef<int> operands) {
    SmallVector<int> results;
    for (Value value : op.getResults())
      results.push_back(newTensor(value.getType()));
    if (tp.size > 1)
      shardResults(op, operands, results);
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
  /// What one TP rank holds of each result: a column-parallel linear's
  /// output and everything computed from it up to the row-parallel linear
  /// is split over the heads / FFN columns; under sequence parallelism the
  /// replicated residual stream is split over the sequence as well. The
  /// logits are split only under loss parallelism.
  void shardResults(Operation &op, ArrayRef<int> operands,
                    ArrayRef<int> results) {
    bool sharded = llvm::any_of(
        operands, [&](int id) { return tpSharded.contains(id); });
    bool logits = false;
    if (auto linear = dyn_cast<LinearOp>(op)) {
      auto param =
          tables.lookupNearestSymbolFrom<ParamOp>(&op, linear.getWeight());
      auto kind = param ? param->getAttrOfType<StringAttr>("parc.tp")
                        : StringAttr();
      StringRef plan = kind ? kind.getValue() : "replicated";
      if (plan == "colwise")
        sharded = true;
      else if (plan == "rowwise")
        sharded = false;
      else if (plan == "vocab") {
        sharded = tp.lossParallel;
        logits = true;
      }
    } else if (isa<EmbeddingOp, CrossEntropyOp>(op)) {
      sharded = false;
    }
    for (int id : results) {
      if (sharded)
        tpSharded.insert(id);
      if (sharded || (tp.sequenceParallel && !logits))
        result.elements[id] /= tp.size;
    }
  }

  int newTensor(Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    int64_t count = 1;
    if (tensor)
      for (auto [dim, extent] : llvm::enumerate(tensor.getShape()))
        count *= ShapedType::isDynamic(extent) ? (dim == 0 ? batch : tokens)
                                               : extent;
    return newBuffer(tensor ? count : 0, /*width=*/0);
  }

  /// A tensor a kernel allocates and saves that is no value of the IR (an
  /// eager kernel's intermediates); `width` 0 is the activation dtype.
  /// What a linear saves of its input `id`: under sequence parallelism a
  /// column-parallel linear all-gathers its sequence shard first and keeps
  /// the whole sequence (one gather for the linears sharing it, q/k/v or
  /// gate/up), as DTensor's and parc-run's sequence parallel do.
  int sequenceGathered(LinearOp linear, int id) {
    if (tp.size <= 1 || !tp.sequenceParallel || tpSharded.contains(id))
      return id;
    auto param = tables.lookupNearestSymbolFrom<ParamOp>(linear.getOperation(),
                                                         linear.getWeight());
    auto kind = param ? param->getAttrOfType<StringAttr>("parc.tp")
                      : StringAttr();
    if (!kind || kind.getValue() != "colwise")
      return id;
    auto [it, inserted] = gatheredInputs.try_emplace(id, -1);
    if (inserted)
      it->second = newBuffer(result.elements[id] * tp.size, result.widths[id]);
    return it->second;
  }

  int newBuffer(int64_t elements, int64_t width) {
    result.elements.push_back(elements);
    result.widths.push_back(width);
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

    // What this op's backward needs, its kernel's own buffers included
    // (eager attention's probabilities, ...): kept with the op when
    // selective remat does not recompute it, rebuilt with it when it does.
    llvm::DenseSet<int> saved;
    bool recomputed = op.hasAttr("parc.recompute");
    int64_t statisticsBefore = result.statisticsBytes;
    llvm::scope_exit account([&] {
      result.saved.insert(saved.begin(), saved.end());
      if (!recomputed) {
        result.kept.insert(saved.begin(), saved.end());
        return;
      }
      result.recomputedStatisticsBytes +=
          result.statisticsBytes - statisticsBefore;
      for (int id : operands)
        if (!result.recomputedResults.contains(id))
          result.kept.insert(id);
      result.recomputedResults.insert(results.begin(), results.end());
    });
    int64_t rows = operands.empty()
                       ? 0
                       : result.elements[operands[0]] /
                             std::max<int64_t>(1, lastDim(op.getOperand(0)));
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](LinearOp linear) {
          saved.insert(sequenceGathered(linear, operands[0]));
        })
        .Case<MatmulOp, PatchEmbeddingOp>(
            [&](auto) { saved.insert(operands[0]); })
        .Case([&](AttentionOp attention) {
          if (kernels.eagerAttention)
            return saveEagerAttention(attention, operands, saved);
          saved.insert(operands.begin(), operands.end());
          saved.insert(results[0]);
          // Flash attention keeps one fp32 logsumexp per query and head.
          result.statisticsBytes += rows * attention.getNumHeads() * 4;
        })
        .Case([&](RmsNormOp norm) {
          int64_t groupSize = getNormSize(norm, norm.getWeight());
          result.statisticsBytes +=
              rows * (lastDim(norm.getInput()) / groupSize) * 4;
          if (!kernels.eagerNorm)
            return (void)saved.insert(operands[0]);
          // The composite x.float() * rsqrt(mean(x^2) + eps) * w keeps the
          // fp32 input (for pow and the rstd product: the input itself in
          // fp32), x^2 (mean's backward keeps its input in LibTorch 1.13)
          // and x * rstd (for the weight gradient), all fp32.
          int64_t size = result.elements[operands[0]];
          if (elementBytes == 4)
            saved.insert(operands[0]);
          else
            saved.insert(newBuffer(size, 4));
          saved.insert(newBuffer(size, 4));
          saved.insert(newBuffer(size, 4));
        })
        .Case([&](LayerNormOp norm) {
          saved.insert(operands[0]);
          int64_t groupSize = getNormSize(norm, norm.getWeight());
          result.statisticsBytes +=
              rows * (lastDim(norm.getInput()) / groupSize) * 4;
        })
        .Case([&](ActivationOp) { saved.insert(operands[0]); })
        .Case([&](MulOp) { saved.insert(operands.begin(), operands.end()); })
        .Case([&](SoftcapOp) {
          result.softcaps += 1;
          // Fused, the backward uses the output; eager tanh(x / c) * c
          // keeps tanh's output, a tensor of the same size.
          saved.insert(kernels.eagerLoss
                           ? newBuffer(result.elements[results[0]], 0)
                           : results[0]);
        })
        .Case([&](EmbeddingOp) {
          // The int64 ids, in bytes of the compute dtype they stand beside.
          result.statisticsBytes += result.elements[operands[0]] * 8;
        })
        .Case([&](CrossEntropyOp) {
          result.logitsElements = result.elements[operands[0]];
        });
  }

  /// Eager attention (q k^T, mask, softmax, p v in LibTorch) keeps, per
  /// layer: q, K and V as contiguous [b, H, s, d] copies (the batched
  /// matmul's reshape of the transposed heads, or repeat_interleave to every
  /// query head under GQA), the softmax probabilities in fp32 (and their
  /// compute-dtype copy for p v when that is narrower), the tanh of a
  /// score softcap and the s x s boolean mask. Neither the operands nor the
  /// output (a reshaped copy) are kept by attention itself: they stay only
  /// where another op saves them (o_proj keeps the output as its input).
  void saveEagerAttention(AttentionOp attention, ArrayRef<int> operands,
                          llvm::DenseSet<int> &saved) {
    int64_t headDim = std::max<int64_t>(1, attention.getHeadDim());
    int64_t heads = attention.getNumHeads();
    int64_t kvHeads = std::max<int64_t>(1, attention.getNumKvHeads());
    int64_t query = result.elements[operands[0]];
    saved.insert(newBuffer(query, 0));
    for (int id : {operands[1], operands[2]})
      saved.insert(newBuffer(result.elements[id] * heads / kvHeads, 0));
    // [b, H, s, s]: one score per query row, head and key.
    int64_t probabilities = query / headDim * tokens;
    saved.insert(newBuffer(probabilities, 4));
    if (elementBytes != 4)
      saved.insert(newBuffer(probabilities, 0));
    if (attention.getSoftcap().has_value())
      saved.insert(newBuffer(probabilities, 0));
    if (attention.getCausal() || attention.getSlidingWindow().has_value())
      result.statisticsBytes += tokens * tokens;
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
  TpPlan tp;
  KernelProfile kernels;
  int64_t elementBytes;
  llvm::DenseSet<int> tpSharded;
  /// Sequence-parallel inputs and the gathered tensor their linears save.
  llvm::DenseMap<int, int> gatheredInputs;
  ForwardTrace result;
};

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
    // Op-level checkpointing stores the layer input, what the ops it does
    // not recompute save for their backward and what each recomputed group
    // reads from outside it; backward rebuilds every other saved tensor.
    llvm::DenseSet<int> kept = trace.kept;
    kept.insert(trace.input);
    result.saved = trace.bytes(kept, elementBytes) + trace.statisticsBytes -
                   trace.recomputedStatisticsBytes;
    llvm::DenseSet<int> rebuilt;
    for (int id : all)
      if (!kept.contains(id))
        rebuilt.insert(id);
    result.recomputed =
        trace.bytes(rebuilt, elementBytes) + trace.recomputedStatisticsBytes;
  } else {
    result.saved = everything;
  }
  return result;
}

} // namespace

LayerActivationBytes mlir::parc::estimateLayerActivations(
    NNModuleOp layer, StringRef remat, int64_t batch, int64_t tokens,
    int64_t elementBytes, TpPlan tp, KernelProfile kernels) {
  ForwardTrace trace =
      ForwardTracer(batch, tokens, /*stopAtLayers=*/false, tp, kernels,
                    elementBytes)
          .trace(layer.getForward());
  LayerActivations acts = activationsOf(trace, remat, elementBytes);
  return {acts.saved, acts.recomputed, acts.working};
}

namespace {

/// The loss path of the root as the replay charges it: the logits and what
/// the loss keeps, what exists only while the forward ends, and what its
/// backward holds.
struct LossBytes {
  int64_t logits = 0; // logit elements
  int64_t rootSaved = 0, kept = 0, transient = 0, gradients = 0;
};

LossBytes getLossBytes(ModelOp model, int64_t batch, int64_t seq, TpPlan tp,
                       KernelProfile kernels, int64_t computeBytes) {
  ForwardTrace rootTrace =
      ForwardTracer(batch, seq, /*stopAtLayers=*/true, tp, kernels,
                    computeBytes)
          .trace(cast<func::FuncOp>(
              SymbolTable::lookupSymbolIn(model, "forward")));
  LossBytes loss;
  // The logits path is counted as the loss spike, not as saved activations;
  // the root's other saved tensors (the final norm's input, lm_head's) are
  // held where the loss is, on the last stage.
  int64_t logits = loss.logits = rootTrace.logitsElements;
  loss.rootSaved = activationsOf(rootTrace, "none", computeBytes).saved -
                   rootTrace.softcaps * logits * computeBytes;
  // Logits, softcap output and the fp32 log-softmax the loss keeps.
  loss.kept = logits * (computeBytes * (1 + rootTrace.softcaps) + 4);
  // The fp32 logit gradients its backward holds beside what it keeps.
  loss.gradients = logits * 4;
  if (kernels.eagerLoss) {
    // Eager: backward keeps each softcap's tanh and the fp32 log-softmax.
    // The logits and each softcap's output are freed when the model's
    // forward returns (the executor holds a module's values until then),
    // with the fp32 copy cross-entropy makes of narrower logits.
    loss.kept = logits * (computeBytes * rootTrace.softcaps + 4);
    loss.transient = logits * (computeBytes * (1 + rootTrace.softcaps) +
                               (computeBytes != 4 ? 4 : 0));
    // nll_loss's gradient and log_softmax's, both fp32, live together.
    loss.gradients = 2 * logits * 4;
  }
  // Vocab-parallel logits gathered for a replicated loss: the gather's
  // backward cuts this rank's slice out of the logits gradient as a tensor
  // of its own while the loss's gradients are still alive.
  if (tp.size > 1 && !tp.lossParallel)
    loss.gradients += logits / tp.size * computeBytes;
  return loss;
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
                const llvm::DenseMap<Operation *, LayerActivations> &acts,
                const LossBytes &loss, int64_t lateRootGradients,
                bool accumulate)
      : rank(rank), root(root), acts(acts), loss(loss),
        lateRootGradients(lateRootGradients), accumulate(accumulate) {
    for (const UnitFootprint &unit : layers)
      byPath[unit.path] = &unit;
  }

  void run(ProgramOp program) {
    pipelined = !program.getCovers().empty();
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
    return pipelined ? " (micro-batch " + std::to_string(microBatch) + ")"
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
          if (auto grad = bufferOf(scatter.getInput(), BufferKind::Gradient))
            reduced(grad.getOf(), scatter.getInput().getDefiningOp<BufferOp>()
                                      .getMicroBatch());
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
      return p.unit->path == path;
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
      note("gradients " + p.unit->path + suffix(p.microBatch));
      live.gradients -= p.unit->unshardedGradients;
    }
    pending.clear();
  }

  struct PendingGradient {
    const UnitFootprint *unit;
    int64_t microBatch;
  };

  RankMemory &rank;
  const UnitFootprint &root;
  const llvm::DenseMap<Operation *, LayerActivations> &acts;
  const LossBytes &loss;
  int64_t lateRootGradients;
  bool accumulate, pipelined = false;
  llvm::StringMap<const UnitFootprint *> byPath;
  /// Gathered units and saved activations: their bytes, and whether saved.
  llvm::DenseMap<Value, std::pair<int64_t, bool>> allocated;
  SmallVector<PendingGradient> pending;
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
  llvm::DenseMap<Operation *, LayerActivations> activations;
  for (auto &stageUnits : units->layers)
    for (UnitFootprint &unit : stageUnits) {
      ForwardTrace trace =
          ForwardTracer(batch, tokensOf(unit.layer), /*stopAtLayers=*/false,
                        tp, hardware->kernels, unit.computeBytes)
              .trace(unit.layer.getForward());
      auto remat = unit.layer->getAttrOfType<StringAttr>("parc.remat");
      activations[unit.layer] = activationsOf(
          trace, remat ? remat.getValue() : "none", unit.computeBytes);
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
