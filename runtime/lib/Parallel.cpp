//===- Parallel.cpp - TP and PP of a compiled forward ---------------------===//
//
// Tensor parallelism: which value of each forward is split how (over
// features, the vocabulary or the sequence), checked against the plan's
// per-parameter TP roles, and where the collectives go. Pipeline
// parallelism: which layers run on which (virtual) stage and which values
// cross each boundary. Both form their c10d subgroups here.
//
//===----------------------------------------------------------------------===//

#include "ExecutorInternals.h"
#include "parc/runtime/PlanFile.h"

#include <set>
#include <sstream>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;

/// What TP makes of each value of a forward: replicated on every rank,
/// split over features (between a column- and a row-parallel linear), over
/// the vocabulary (logits of a vocab linear), or, under sequence parallel,
/// over the sequence (the residual stream between the TP regions).
enum class TpValue { Full = 0, Features, Vocab, Sequence };

bool Executor::compileTp(CompiledForward &fwd, const std::vector<int> &args,
                         std::vector<int> &returned, std::string &error) {
  std::string where = "TP " + std::to_string(layout.tp) + ": forward of '" +
                      fwd.module + "'";
  // A module is analysed once, for the split of its arguments at its call.
  auto seen = tpArgs.find(fwd.module);
  if (seen != tpArgs.end()) {
    if (seen->second != args) {
      error = where + ": called with differently split arguments; parc-run "
              "analyses each module for one call";
      return false;
    }
    returned = tpResults[fwd.module];
    return true;
  }
  tpArgs[fwd.module] = args;
  std::vector<TpValue> state(fwd.numValues, TpValue::Full);
  for (size_t i = 0; i < args.size() && i < state.size(); ++i)
    state[i] = TpValue(args[i]);
  bool sp = layout.sequenceParallel;
  for (CompiledOp &op : fwd.ops) {
    if (op.weight >= 0)
      op.weightSplit = paramSlots[op.weight].tp;
    bool features = false, full = false, sequence = false;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      TpValue v = state[op.operands[i]];
      bool keepsVocab = (op.kind == OpKind::Softcap && i == 0) ||
                        (op.kind == OpKind::CrossEntropy && i == 0 &&
                         layout.lossParallel);
      if (v == TpValue::Vocab && !keepsVocab) {
        op.gatherOperand[i] = true;
        v = TpValue::Full;
      }
      if (v == TpValue::Features)
        features = true;
      else if (v == TpValue::Sequence)
        sequence = true;
      else if (v == TpValue::Full && !(op.kind == OpKind::CrossEntropy && i))
        full = true;
    }
    std::string what = "'" + op.name + "'" +
                       (op.weight >= 0
                            ? " on '" + paramSlots[op.weight].path + "'"
                            : std::string());
    auto refuse = [&](const std::string &why) {
      error = where + ": " + what + " " + why;
      return false;
    };
    if (sequence && (features || full) && op.kind != OpKind::Call)
      return refuse("mixes sequence-parallel values with others");
    TpValue result = TpValue::Full;
    switch (op.kind) {
    case OpKind::Linear:
      if (op.weightSplit == TpSplit::Colwise ||
          op.weightSplit == TpSplit::Vocab) {
        if (features)
          return refuse("is column-parallel on an input that is already "
                        "split over TP ranks");
        // Sequence parallel: all-gather the sequence shards first (its
        // backward reduce-scatters); otherwise the replicated input's
        // gradient is all-reduced.
        op.seqGatherInput = sequence;
        op.tpCopyInput = !sequence;
        result = op.weightSplit == TpSplit::Vocab ? TpValue::Vocab
                                                  : TpValue::Features;
      } else if (op.weightSplit == TpSplit::Rowwise) {
        if (!features)
          return refuse("is row-parallel on an input that is not split over "
                        "TP ranks");
        op.tpReduceOutput = !sp;
        op.seqScatterOutput = sp;
        result = sp ? TpValue::Sequence : TpValue::Full;
      } else if (features || sequence) {
        return refuse("is replicated on an input split over TP ranks");
      }
      if (op.bias >= 0 && paramSlots[op.bias].tp != TpSplit::Replicated &&
          op.weightSplit == TpSplit::Rowwise)
        return refuse("has a split bias after a row-parallel linear");
      if (op.bias >= 0 && op.weightSplit == TpSplit::Rowwise && sp)
        return refuse("has a bias after a sequence-parallel reduce-scatter, "
                      "which parc-run does not run");
      break;
    case OpKind::Embedding:
      if (op.weightSplit == TpSplit::Colwise ||
          op.weightSplit == TpSplit::Rowwise)
        return refuse("is an embedding split " +
                      std::string(op.weightSplit == TpSplit::Colwise
                                      ? "colwise"
                                      : "rowwise") +
                      "; parc-run splits embeddings over the vocabulary");
      if (sp && op.weightSplit != TpSplit::Vocab)
        return refuse("is a replicated embedding under sequence parallel; "
                      "parc-run starts the sequence shards at a vocab-parallel "
                      "embedding");
      op.tpReduceOutput = op.weightSplit == TpSplit::Vocab && !sp;
      op.seqScatterOutput = op.weightSplit == TpSplit::Vocab && sp;
      result = sp ? TpValue::Sequence : TpValue::Full;
      break;
    case OpKind::Matmul:
      if (op.weightSplit != TpSplit::Replicated || features || sequence)
        return refuse("is a TP-split matmul, which parc-run does not run");
      break;
    case OpKind::RmsNorm:
    case OpKind::LayerNorm:
      if (op.weightSplit != TpSplit::Replicated)
        return refuse("is a norm with a TP-split weight");
      if (features || sequence) {
        // Per-head norms on local heads, or norms on sequence shards: each
        // rank's weight gradient sums its own part only.
        op.tpWeightGrad = true;
        result = state[op.operands[0]];
      }
      break;
    case OpKind::Rope:
    case OpKind::Attention:
      if (sequence)
        return refuse("needs the whole sequence but gets a sequence shard");
      if (op.kind == OpKind::Attention && features && full)
        return refuse("mixes values split over TP ranks with replicated ones");
      result = features ? TpValue::Features : TpValue::Full;
      break;
    case OpKind::Activation:
    case OpKind::Softcap:
      result = state[op.operands[0]];
      if (op.gatherOperand[0])
        result = TpValue::Full;
      break;
    case OpKind::Add:
    case OpKind::Mul:
      if (features && full)
        return refuse("mixes values split over TP ranks with replicated ones");
      result = features ? TpValue::Features
                        : sequence ? TpValue::Sequence : TpValue::Full;
      break;
    case OpKind::CrossEntropy:
      if (features || sequence)
        return refuse("takes logits split over features or the sequence");
      op.vocabParallelLoss = !op.gatherOperand[0] &&
                             state[op.operands[0]] == TpValue::Vocab;
      break;
    case OpKind::Call: {
      if (features)
        return refuse("passes values split over TP ranks to '" + op.callee +
                      "'; parc-run keeps TP-split values inside one module");
      std::vector<int> in, out;
      for (size_t i = 0; i < op.operands.size(); ++i)
        in.push_back(op.gatherOperand[i] ? int(TpValue::Full)
                                         : int(state[op.operands[i]]));
      if (!compileTp(*forwards.at(op.callee), in, out, error))
        return false;
      for (size_t i = 0; i < op.results.size() && i < out.size(); ++i)
        state[op.results[i]] = TpValue(out[i]);
      continue;
    }
    }
    for (int id : op.results)
      state[id] = result;
  }
  returned.clear();
  for (int id : fwd.results) {
    if (state[id] == TpValue::Features || state[id] == TpValue::Vocab) {
      error = where + ": returns a value split over TP ranks (value " +
              std::to_string(id) + "); parc-run keeps TP-split values inside "
              "one module";
      return false;
    }
    returned.push_back(int(state[id]));
  }
  if (fwd.module.empty() && !returned.empty() &&
      returned[0] != int(TpValue::Full)) {
    error = where + ": the loss is split over the sequence";
    return false;
  }
  tpResults[fwd.module] = returned;
  return true;
}

bool Executor::compilePipeline(std::string &error) {
  pipeline = std::make_unique<Pipeline>();
  Pipeline &pipe = *pipeline;
  std::map<std::string, int> &layerStage = pipe.layerStage;
  int pp = layout.pp;
  pipe.virtualStages = pp * layout.chunks;
  if (plan.modules())
    for (const plan::Module *module : *plan.modules())
      if (module->layer_index() >= 0) {
        if (module->pp_chunk() < 0 || module->pp_chunk() >= layout.chunks) {
          error = "PP: layer '" + std::string(str(module->path())) +
                  "' is in chunk " + std::to_string(module->pp_chunk()) +
                  " of " + std::to_string(layout.chunks);
          return false;
        }
        layerStage[str(module->path())] =
            module->pp_chunk() * pp + module->pp_stage();
      }
  // Flatten: inline every call but a layer's.
  std::function<bool(const std::string &, const std::vector<int> &,
                     std::vector<int> &)>
      flatten = [&](const std::string &module, const std::vector<int> &args,
                    std::vector<int> &results) {
        const CompiledForward &fwd = *forwards.at(module);
        std::vector<int> ids(fwd.numValues, -1);
        std::copy(args.begin(), args.end(), ids.begin());
        for (const CompiledOp &op : fwd.ops) {
          std::vector<int> operands;
          for (int id : op.operands)
            operands.push_back(ids[id]);
          if (op.kind == OpKind::Call && !layerStage.count(op.callee)) {
            auto unit = unitByPath.find(op.callee);
            if (unit != unitByPath.end() && !op.callee.empty()) {
              error = "PP: module '" + op.callee +
                      "' is an FSDP unit but not a layer; parc-run pipelines "
                      "plans whose units are the layers and the root";
              return false;
            }
            if (rematByPath.count(op.callee)) {
              error = "PP: module '" + op.callee +
                      "' has remat but is not a layer";
              return false;
            }
            std::vector<int> out;
            if (!flatten(op.callee, operands, out))
              return false;
            for (size_t i = 0; i < op.results.size(); ++i)
              ids[op.results[i]] = out[i];
            continue;
          }
          Pipeline::Step step;
          step.op = &op;
          step.operands = operands;
          for (int id : op.results) {
            ids[id] = pipe.numValues++;
            step.results.push_back(ids[id]);
          }
          pipe.steps.push_back(std::move(step));
        }
        for (int id : fwd.results)
          results.push_back(ids[id]);
        return true;
      };
  std::vector<int> rootResults;
  if (!flatten("", {0, 1}, rootResults))
    return false;
  pipe.lossValue = rootResults.empty() ? -1 : rootResults[0];
  // Stages: a layer runs on its stage; the ops before the first layer on
  // the first layer's stage, every other op on the stage of the layer
  // before it.
  int current = -1;
  for (Pipeline::Step &step : pipe.steps)
    if (step.op->kind == OpKind::Call && layerStage.count(step.op->callee)) {
      current = layerStage[step.op->callee];
      break;
    }
  if (current != 0) {
    error = "PP: the first layer of the model runs on virtual stage " +
            std::to_string(current) + ", not 0";
    return false;
  }
  for (Pipeline::Step &step : pipe.steps) {
    if (step.op->kind == OpKind::Call && layerStage.count(step.op->callee)) {
      int stage = layerStage[step.op->callee];
      if (stage < current) {
        error = "PP: layer '" + step.op->callee + "' runs on virtual stage " +
                std::to_string(stage) + " after a layer of virtual stage " +
                std::to_string(current);
        return false;
      }
      current = stage;
    }
    step.stage = current;
    for (int slot : {step.op->weight, step.op->bias})
      if (slot >= 0) {
        const ParamSlot &p = paramSlots[slot];
        if (std::find(p.stages.begin(), p.stages.end(), current % pp) ==
            p.stages.end()) {
          error = "PP: '" + step.op->name + "' in the forward of '" +
                  step.op->module + "' runs on stage " +
                  std::to_string(current % pp) + " but the plan holds '" +
                  p.path + "' on stage " + std::to_string(p.stages[0]);
          return false;
        }
      }
  }
  if (current != pipe.virtualStages - 1) {
    error = "PP: the loss is computed on virtual stage " +
            std::to_string(current) + ", not the last one " +
            std::to_string(pipe.virtualStages - 1);
    return false;
  }
  // What crosses each boundary.
  std::vector<int> definedOn(pipe.numValues, -1), lastUse(pipe.numValues, -1);
  for (const Pipeline::Step &step : pipe.steps) {
    for (int id : step.results)
      definedOn[id] = step.stage;
    for (int id : step.operands)
      lastUse[id] = std::max(lastUse[id], step.stage);
  }
  pipe.crossing.resize(pipe.virtualStages - 1);
  for (int b = 0; b + 1 < pipe.virtualStages; ++b)
    for (int id = 2; id < pipe.numValues; ++id)
      if (definedOn[id] >= 0 && definedOn[id] <= b && lastUse[id] > b)
        pipe.crossing[b].push_back(id);
  return true;
}

void Executor::connectGroups() {
  const RankLayout &l = layout;
  auto group = [&](const char *name, std::vector<int> ranks,
                   std::unique_ptr<Collectives> &owned) -> Collectives * {
    if (int(ranks.size()) == comm.size())
      return &comm;
    owned = comm.subgroup(ranks, name);
    return owned.get();
  };
  std::vector<int> tp, fsdp, pp, dp;
  for (int d = 0; d < l.dp; ++d)
    dp.push_back(l.rankAt(l.ppIndex, d, l.fsdpIndex, l.tpIndex));
  for (int t = 0; t < l.tp; ++t)
    tp.push_back(l.rankAt(l.ppIndex, l.dpIndex, l.fsdpIndex, t));
  for (int f = 0; f < l.fsdp; ++f)
    fsdp.push_back(l.rankAt(l.ppIndex, l.dpIndex, f, l.tpIndex));
  for (int p = 0; p < l.pp; ++p)
    pp.push_back(l.rankAt(p, l.dpIndex, l.fsdpIndex, l.tpIndex));
  tpComm = group("tp", tp, ownedTp);
  fsdpComm = group("fsdp", fsdp, ownedFsdp);
  ppComm = group("pp", pp, ownedPp);
  dpComm = group("dp", dp, ownedDp);
  bool tiedAcross = false;
  for (const ParamSlot &slot : paramSlots)
    tiedAcross |= slot.stages.size() > 1;
  if (l.pp > 1 && tiedAcross && (l.isFirstStage() || l.isLastStage())) {
    if (l.pp == 2)
      tiedComm = ppComm;
    else
      tiedComm = group("tied", {pp.front(), pp.back()}, ownedTied);
  }
}
