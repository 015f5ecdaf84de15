//===- ActivationTrace.cpp - what a forward keeps, traced -----------------===//
//
// Activation bytes come from the model's own op graph: each op saves what
// its autograd backward needs (a linear its input, attention q, k, v and its
// output, a norm its input), shared tensors counted once, under the remat
// decision of its layer, on one TP rank, with the kernels of the hardware
// profile. The lowering writes the results into the programs
// (parc.save, parc.recompute_step); the memory replay reads them there.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/StepMemory.h"

#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/MemoryEstimate.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

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
  /// What a save-list policy (remat op) keeps from the forward: the outputs
  /// of the ops marked parc.remat_save and the statistics they return
  /// (flash attention's logsumexp).
  llvm::DenseSet<int> savedOutputs;
  int64_t savedOutputStatisticsBytes = 0;
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
  /// This rank's elements of the softcaps' outputs: vocab shards when the
  /// loss gathers the logits after them.
  int64_t softcapElements = 0;

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
    // saves per layer is 1/tp of it. apply-tp records the split on the
    // forward.
    if (TpShardsAttr shards = tp.size > 1 ? getTpShards(forward) : nullptr)
      for (auto [id, shard] : llvm::zip(args, shards.getValues()))
        if (shard != TpShard::Full)
          result.elements[id] /= tp.size;
    walk(forward, args);
    return std::move(result);
  }

  SmallVector<int> visitOp(Operation &op, ArrayRef<int> operandIds) {
    SmallVector<int> operands(operandIds);
    SmallVector<int> results;
    for (Value value : op.getResults())
      results.push_back(newTensor(value.getType()));
    if (TpShardsAttr shards = tp.size > 1 ? getTpShards(&op) : nullptr)
      shardValues(shards, operands, results);
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
  /// What one TP rank holds, as apply-tp recorded it: a split result is
  /// 1/tp of the value; a vocab-split operand the op gathers is a new
  /// whole-vocabulary tensor; a sequence shard a linear gathers is the
  /// whole sequence, one gather for the linears sharing it (q/k/v,
  /// gate/up), kept for backward as DTensor's and parc-run's sequence
  /// parallel do.
  void shardValues(TpShardsAttr shards, MutableArrayRef<int> operands,
                   ArrayRef<int> results) {
    for (int32_t i : shards.getGather())
      operands[i] = newBuffer(result.elements[operands[i]] * tp.size,
                              result.widths[operands[i]]);
    if (shards.hasComm(TpComm::GatherSequence) && !operands.empty()) {
      auto [it, inserted] = gatheredInputs.try_emplace(operands[0], -1);
      if (inserted)
        it->second = newBuffer(result.elements[operands[0]] * tp.size,
                               result.widths[operands[0]]);
      operands[0] = it->second;
    }
    for (auto [id, shard] : llvm::zip(results, shards.getValues()))
      if (shard != TpShard::Full)
        result.elements[id] /= tp.size;
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
    int64_t statisticsBefore = result.statisticsBytes;
    if (auto autograd = dyn_cast<AutogradOpInterface>(op)) {
      Recorder recorder(*this, op, operands, results, saved);
      autograd.recordSaves(recorder);
    }
    result.saved.insert(saved.begin(), saved.end());
    if (op.hasAttr(kRematSaveAttrName)) {
      result.savedOutputs.insert(results.begin(), results.end());
      result.savedOutputStatisticsBytes +=
          result.statisticsBytes - statisticsBefore;
    }
    if (!op.hasAttr("parc.recompute")) {
      result.kept.insert(saved.begin(), saved.end());
      return;
    }
    result.recomputedStatisticsBytes +=
        result.statisticsBytes - statisticsBefore;
    for (int id : operands)
      if (!result.recomputedResults.contains(id))
        result.kept.insert(id);
    result.recomputedResults.insert(results.begin(), results.end());
  }

  /// Hands an op's saves to the trace: tensors by their number in the
  /// trace (so that two ops saving one tensor count it once), this TP
  /// rank's elements.
  class Recorder : public SaveRecorder {
  public:
    Recorder(ForwardTracer &tracer, Operation &op, ArrayRef<int> operands,
             ArrayRef<int> results, llvm::DenseSet<int> &saved)
        : tracer(tracer), op(op), operands(operands), results(results),
          saved(saved) {}

    void saveOperand(unsigned i) override { saved.insert(operands[i]); }
    void saveResult(unsigned i) override { saved.insert(results[i]); }
    void saveBuffer(int64_t elements, int64_t bytesPerElement) override {
      saved.insert(tracer.newBuffer(elements, bytesPerElement));
    }
    void saveStatistics(int64_t bytes) override {
      tracer.result.statisticsBytes += bytes;
    }
    void noteLossLogits(int64_t elements) override {
      tracer.result.logitsElements = elements;
    }
    void noteSoftcap() override {
      tracer.result.softcaps += 1;
      tracer.result.softcapElements += getResultElements(0);
    }
    int64_t getOperandElements(unsigned i) override {
      return tracer.result.elements[operands[i]];
    }
    int64_t getResultElements(unsigned i) override {
      return tracer.result.elements[results[i]];
    }
    int64_t getRows() override {
      return operands.empty()
                 ? 0
                 : getOperandElements(0) /
                       std::max<int64_t>(1, lastDim(op.getOperand(0)));
    }
    int64_t getTokens() override { return tracer.tokens; }
    int64_t getActivationBytes() override { return tracer.elementBytes; }
    const KernelProfile &getKernels() override { return tracer.kernels; }
    ParamOp lookupParam(SymbolRefAttr ref) override {
      return tracer.tables.lookupNearestSymbolFrom<ParamOp>(&op, ref);
    }

  private:
    ForwardTracer &tracer;
    Operation &op;
    ArrayRef<int> operands, results;
    llvm::DenseSet<int> &saved;
  };

  static int64_t lastDim(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    int64_t extent = type.getShape().back();
    return ShapedType::isDynamic(extent) ? 1 : extent;
  }

  int64_t batch, tokens;
  TpPlan tp;
  KernelProfile kernels;
  int64_t elementBytes;
  /// Sequence-parallel inputs and the gathered tensor their linears save.
  llvm::DenseMap<int, int> gatheredInputs;
  ForwardTrace result;
};

/// Activation bytes a layer keeps and recomputes under its remat decision.
struct LayerActivations {
  int64_t saved = 0, recomputed = 0, working = 0;
};

LayerActivations activationsOf(const ForwardTrace &trace, RematKind remat,
                               int64_t elementBytes) {
  const llvm::DenseSet<int> &all = trace.saved;
  LayerActivations result;
  result.working = trace.largestOpElements * elementBytes;
  int64_t everything = trace.bytes(all, elementBytes) + trace.statisticsBytes;
  int64_t input =
      trace.input >= 0 ? trace.elements[trace.input] * elementBytes : 0;
  if (remat == RematKind::Full) {
    result.saved = input;
    result.recomputed = everything;
  } else if (remat == RematKind::Op) {
    // The layer's input and the save list's outputs stay from the forward;
    // the rerun rebuilds every other tensor the backward needs.
    llvm::DenseSet<int> kept = trace.savedOutputs;
    kept.insert(trace.input);
    result.saved =
        trace.bytes(kept, elementBytes) + trace.savedOutputStatisticsBytes;
    llvm::DenseSet<int> rebuilt;
    for (int id : all)
      if (!kept.contains(id))
        rebuilt.insert(id);
    result.recomputed = trace.bytes(rebuilt, elementBytes) +
                        trace.statisticsBytes -
                        trace.savedOutputStatisticsBytes;
  } else if (remat == RematKind::Selective) {
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
    NNModuleOp layer, RematKind remat, int64_t batch, int64_t tokens,
    int64_t elementBytes, TpPlan tp, KernelProfile kernels) {
  ForwardTrace trace = ForwardTracer(batch, tokens, /*stopAtLayers=*/false, tp,
                                     kernels, elementBytes)
                           .trace(layer.getForward());
  LayerActivations acts = activationsOf(trace, remat, elementBytes);
  return {acts.saved, acts.recomputed, acts.working};
}

LossBytes mlir::parc::getLossBytes(ModelOp model, int64_t batch, int64_t seq,
                                   TpPlan tp, KernelProfile kernels,
                                   int64_t computeBytes) {
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
  loss.rootSaved =
      activationsOf(rootTrace, RematKind::None, computeBytes).saved -
      rootTrace.softcapElements * computeBytes;
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

  int64_t wide = logits * computeBytes;
  if (loss.rootSaved > 0)
    loss.forwardTensors.push_back(loss.rootSaved);
  auto make = [&](int64_t bytes, bool kept) {
    loss.forwardTensors.push_back(bytes);
    if (kept)
      loss.keptTensors.push_back(bytes);
  };
  make(wide, !kernels.eagerLoss);
  for (int64_t i = 0; i < rootTrace.softcaps; ++i) {
    if (kernels.eagerLoss)
      make(wide, true); // its tanh
    make(wide, !kernels.eagerLoss);
  }
  if (kernels.eagerLoss && computeBytes != 4)
    make(logits * 4, false);
  make(logits * 4, true);
  loss.gradientTensors.assign(kernels.eagerLoss ? 2 : 1, logits * 4);
  if (tp.size > 1 && !tp.lossParallel)
    loss.gradientTensors.push_back(logits / tp.size * computeBytes);
  return loss;
}
