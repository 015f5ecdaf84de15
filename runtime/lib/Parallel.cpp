//===- Parallel.cpp - TP and PP of a compiled forward ---------------------===//
//
// Tensor parallelism: plan.bin's record of how each op is split (over
// features, the vocabulary or the sequence) and which collectives it runs,
// read into the kernels' flags and checked against what they execute. Pipeline
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

namespace {

/// The collectives the kernel of `kind` runs (docs/runtime.md), and which
/// weight split each needs: a plan.bin asking for another is refused.
bool runsComm(OpKind kind, plan::TpComm comm, TpSplit weight) {
  bool splitIn = weight == TpSplit::Colwise || weight == TpSplit::Vocab;
  switch (comm) {
  case plan::TpComm::CopyInput:
  case plan::TpComm::GatherSequence:
    return kind == OpKind::Linear && splitIn;
  case plan::TpComm::Reduce:
  case plan::TpComm::ScatterSequence:
    return (kind == OpKind::Linear && weight == TpSplit::Rowwise) ||
           (kind == OpKind::Embedding && weight == TpSplit::Vocab);
  case plan::TpComm::WeightGrad:
  case plan::TpComm::BiasGrad:
    return (kind == OpKind::Linear || kind == OpKind::RmsNorm ||
            kind == OpKind::LayerNorm) &&
           weight == TpSplit::Replicated;
  case plan::TpComm::VocabLoss:
    return kind == OpKind::CrossEntropy;
  }
  return false;
}

} // namespace

/// Reads plan.bin's TP record of every op (parc's #parc.tp_shards, decided
/// once by apply-tp) into the kernels' flags, refusing a record parc-run
/// cannot execute: a missing one, a collective the op's kernel does not run,
/// or a call that passes its callee other shards than the callee's record
/// says it receives.
bool Executor::compileTp(std::string &error) {
  using plan::TpComm;
  using plan::TpShard;
  for (auto &[path, fwd] : forwards) {
    std::string where = "TP " + std::to_string(layout.tp) +
                        ": forward of '" + path + "'";
    if (!fwd->hasArgTp || int(fwd->argTp.size()) != fwd->numArgs) {
      error = where + " has no TP shards for its arguments in plan.bin; "
              "re-plan it with this build's parc-plan";
      return false;
    }
    std::vector<TpShard> shard(fwd->numValues, TpShard::Full);
    for (int i = 0; i < fwd->numArgs; ++i)
      shard[i] = fwd->argTp[i];
    for (CompiledOp &op : fwd->ops) {
      std::string what = "'" + op.name + "'" +
                         (op.weight >= 0
                              ? " on '" + paramSlots[op.weight].path + "'"
                              : std::string());
      if (!op.hasTp || op.tpValues.size() != op.results.size()) {
        error = where + ": " + what + " has no TP shards for its " +
                std::to_string(op.results.size()) +
                " results in plan.bin; re-plan it with this build's "
                "parc-plan";
        return false;
      }
      if (op.weight >= 0)
        op.weightSplit = paramSlots[op.weight].tp;
      for (TpComm comm : op.tpComms) {
        if (!runsComm(op.kind, comm, op.weightSplit)) {
          error = where + ": " + what + " asks for TP collective " +
                  plan::EnumNameTpComm(comm) + ", which parc-run's kernel for it does "
                  "not run on this weight";
          return false;
        }
        op.tpCopyInput |= comm == TpComm::CopyInput;
        op.seqGatherInput |= comm == TpComm::GatherSequence;
        op.tpReduceOutput |= comm == TpComm::Reduce;
        op.seqScatterOutput |= comm == TpComm::ScatterSequence;
        op.tpWeightGrad |= comm == TpComm::WeightGrad;
        op.tpBiasGrad |= comm == TpComm::BiasGrad;
        op.vocabParallelLoss |= comm == TpComm::VocabLoss;
      }
      if ((op.tpCopyInput && op.seqGatherInput) ||
          (op.tpReduceOutput && op.seqScatterOutput)) {
        error = where + ": " + what + " asks for two collectives where its "
                "kernel runs one";
        return false;
      }
      if (op.kind == OpKind::Call) {
        const CompiledForward &callee = *forwards.at(op.callee);
        for (size_t i = 0; i < op.operands.size(); ++i) {
          TpShard passed =
              op.gatherOperand[i] ? TpShard::Full : shard[op.operands[i]];
          if (i < callee.argTp.size() && callee.argTp[i] != passed) {
            error = where + ": passes '" + op.callee + "' argument " +
                    std::to_string(i) + " as " +
                    plan::EnumNameTpShard(passed) + ", but its forward "
                    "receives it as " + plan::EnumNameTpShard(callee.argTp[i]);
            return false;
          }
        }
      }
      for (size_t i = 0; i < op.results.size(); ++i)
        shard[op.results[i]] = op.tpValues[i];
    }
    if (path.empty() && !fwd->results.empty() &&
        shard[fwd->results[0]] != TpShard::Full) {
      error = where + ": the loss is split over TP ranks";
      return false;
    }
  }
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
