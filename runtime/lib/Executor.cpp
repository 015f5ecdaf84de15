//===- Executor.cpp - compiling a plan's forward for LibTorch -------------===//
//
// Reads plan.bin once into the executor's tables: parameter slots and FSDP
// units with their dtypes, each module's forward as compiled ops (operands,
// results, the ATen kernel and its attributes), the selective-remat groups,
// and the rank layout. TP and PP (Parallel.cpp) refine the forwards and form
// the process groups; Parameters.cpp owns the FSDP shards and their
// collectives; Forward.cpp runs the compiled ops; Interpreter.cpp runs the
// rank's program over all of them.
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

at::ScalarType scalarType(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::BF16:
    return at::kBFloat16;
  case plan::DType::F16:
    return at::kHalf;
  default:
    return at::kFloat;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Building the executor
//===----------------------------------------------------------------------===//

Executor::Executor(const plan::Plan &plan, Collectives &comm)
    : plan(plan), comm(comm), tpComm(&comm), fsdpComm(&comm), ppComm(&comm) {}
Executor::~Executor() = default;

std::unique_ptr<Executor> Executor::create(const plan::Plan &plan,
                                           Collectives &comm,
                                           std::string &error) {
  std::unique_ptr<Executor> exec(new Executor(plan, comm));
  if (!exec->compile(error))
    return nullptr;
  return exec;
}

namespace {

/// The kernel of each forward op plan.bin names.
const std::map<std::string, OpKind> &opKinds() {
  static const std::map<std::string, OpKind> kinds = {
      {"parc.embedding", OpKind::Embedding},
      {"parc.linear", OpKind::Linear},
      {"parc.matmul", OpKind::Matmul},
      {"parc.rms_norm", OpKind::RmsNorm},
      {"parc.rms_normalize", OpKind::RmsNormalize},
      {"parc.layer_norm", OpKind::LayerNorm},
      {"parc.rope", OpKind::Rope},
      {"parc.attention", OpKind::Attention},
      {"parc.add", OpKind::Add},
      {"parc.mul", OpKind::Mul},
      {"parc.activation", OpKind::Activation},
      {"parc.softcap", OpKind::Softcap},
      {"parc.cross_entropy", OpKind::CrossEntropy},
      {"parc.call", OpKind::Call},
  };
  return kinds;
}

} // namespace

/// Parameter slots: this rank's shard of each parameter, its TP split, its
/// tie.
bool Executor::compileParameters(std::string &error) {
  if (plan.ties())
    for (const plan::Tie *tie : *plan.ties())
      if (tie->params() && tie->params()->size() > 1)
        for (unsigned i = 1; i < tie->params()->size(); ++i)
          tiedTo[tie->params()->Get(i)->str()] = tie->params()->Get(0)->str();
  auto splitOf = [&](const plan::Param *param, TpSplit &split) {
    std::string tp = str(param->tp());
    if (tp == "colwise")
      split = TpSplit::Colwise;
    else if (tp == "rowwise")
      split = TpSplit::Rowwise;
    else if (tp == "vocab")
      split = TpSplit::Vocab;
    else if (tp == "replicated" || tp == "sequence" || tp.empty())
      // "sequence": a norm weight on sequence shards, whole on every rank.
      split = TpSplit::Replicated;
    else {
      error = "parameter '" + std::string(str(param->path())) +
              "' has TP split '" + tp +
              "' this runtime does not know (colwise, rowwise, vocab, "
              "replicated, sequence)";
      return false;
    }
    return true;
  };
  if (plan.params())
    for (const plan::Param *param : *plan.params()) {
      std::string path = str(param->path());
      if (tiedTo.count(path))
        continue;
      ParamSlot slot;
      slot.path = path;
      if (param->shape())
        slot.fullShape.assign(param->shape()->begin(), param->shape()->end());
      if (slot.fullShape.empty())
        slot.fullShape.push_back(1);
      slot.init = str(param->init());
      slot.frozen = param->frozen();
      slot.stages = {param->pp_stage()};
      if (slot.init != "ones" && slot.init != "zeros" &&
          slot.init.rfind("normal(", 0) != 0) {
        error = "parameter '" + path + "' has initialisation '" + slot.init +
                "' this runtime does not know (ones, zeros, normal(std))";
        return false;
      }
      if (!splitOf(param, slot.tp))
        return false;
      slot.shape = slot.fullShape;
      int tp = layout.tp;
      if (tp > 1) {
        int dim = slot.tp == TpSplit::Rowwise ? 1 : 0;
        if (slot.tp == TpSplit::Vocab) {
          slot.tpPaddedDim0 = param->tp_padded_dim0() ? param->tp_padded_dim0()
                                                      : slot.fullShape[0];
          if (slot.tpPaddedDim0 < slot.fullShape[0] || slot.tpPaddedDim0 % tp) {
            error = "parameter '" + path + "': vocab padded to " +
                    std::to_string(slot.tpPaddedDim0) +
                    " rows, which does not cover its " +
                    std::to_string(slot.fullShape[0]) +
                    " rows in a multiple of TP " + std::to_string(tp);
            return false;
          }
          slot.shape[0] = slot.tpPaddedDim0 / tp;
        } else if (slot.tp != TpSplit::Replicated) {
          if (int(slot.fullShape.size()) <= dim || slot.fullShape[dim] % tp) {
            error = "parameter '" + path + "' is split " + str(param->tp()) +
                    " over TP " + std::to_string(tp) + ", but its dim " +
                    std::to_string(dim) + " is not a multiple of it";
            return false;
          }
          slot.shape[dim] /= tp;
        }
      }
      slotByPath[path] = paramSlots.size();
      paramSlots.push_back(std::move(slot));
    }
  // A tie whose members sit on different stages is one copy per stage.
  if (plan.params())
    for (const plan::Param *param : *plan.params()) {
      auto alias = tiedTo.find(str(param->path()));
      if (alias == tiedTo.end())
        continue;
      auto owner = slotByPath.find(alias->second);
      if (owner == slotByPath.end()) {
        error = "tie of '" + alias->first + "' names unknown parameter '" +
                alias->second + "'";
        return false;
      }
      ParamSlot &slot = paramSlots[owner->second];
      TpSplit split;
      if (!splitOf(param, split))
        return false;
      if (layout.tp > 1 && split != slot.tp) {
        error = "tied parameters '" + alias->second + "' and '" + alias->first +
                "' are split differently by TP";
        return false;
      }
      if (std::find(slot.stages.begin(), slot.stages.end(),
                    param->pp_stage()) == slot.stages.end())
        slot.stages.push_back(param->pp_stage());
    }
  for (ParamSlot &slot : paramSlots) {
    std::sort(slot.stages.begin(), slot.stages.end());
    for (int stage : slot.stages)
      if (stage < 0 || stage >= layout.pp) {
        error = "parameter '" + slot.path + "' is placed on stage " +
                std::to_string(stage) + " of a " + std::to_string(layout.pp) +
                "-stage pipeline";
        return false;
      }
    if (slot.stages.size() > 2 ||
        (slot.stages.size() == 2 &&
         (slot.stages[0] != 0 || slot.stages[1] != layout.pp - 1))) {
      error = "parameter '" + slot.path +
              "' is tied across stages other than the first and the last; "
              "parc-run all-reduces tied copies between those two only";
      return false;
    }
    slot.local =
        layout.pp == 1 || std::find(slot.stages.begin(), slot.stages.end(),
                                    layout.ppIndex) != slot.stages.end();
  }

  return true;
}

/// The FSDP units over the slots: each unit's dtypes and policy, its
/// parameters; what no unit shards is the root's.
bool Executor::compileUnits(std::string &error) {
  int shards = layout.fsdp;
  if (plan.fsdp_units())
    for (const plan::FsdpUnit *entry : *plan.fsdp_units()) {
      FsdpUnit unit;
      unit.name = str(entry->name());
      unit.path = str(entry->path());
      unit.compute = scalarType(entry->compute_dtype());
      unit.reduce = scalarType(entry->reduce_dtype());
      if (entry->params())
        for (const plan::ShardedParam *sp : *entry->params()) {
          std::string path = str(sp->path());
          if (tiedTo.count(path))
            path = tiedTo[path];
          auto it = slotByPath.find(path);
          if (it == slotByPath.end()) {
            error = "FSDP unit '" + unit.name + "' shards unknown parameter '" +
                    path + "'";
            return false;
          }
          ParamSlot &slot = paramSlots[it->second];
          if (slot.unit >= 0)
            continue;
          if (sp->padded_dim0() % shards != 0 ||
              sp->padded_dim0() < slot.shape[0]) {
            error = "parameter '" + path + "': padded dim 0 " +
                    std::to_string(sp->padded_dim0()) +
                    " is not a multiple of the FSDP size " +
                    std::to_string(shards) + " covering its TP-local dim 0 " +
                    std::to_string(slot.shape[0]);
            return false;
          }
          slot.paddedDim0 = sp->padded_dim0();
          slot.unit = fsdpUnits.size();
          if (slot.local)
            unit.slots.push_back(it->second);
        }
      unitByPath[unit.path] = fsdpUnits.size();
      fsdpUnits.push_back(std::move(unit));
    }
  // Parameters no unit shards belong to the root, gathered for the whole
  // step (a plan without FSDP is one root unit).
  for (size_t i = 0; i < paramSlots.size(); ++i) {
    ParamSlot &slot = paramSlots[i];
    if (slot.unit >= 0)
      continue;
    if (!unitByPath.count("")) {
      FsdpUnit root;
      root.name = "root";
      unitByPath[""] = fsdpUnits.size();
      fsdpUnits.push_back(std::move(root));
    }
    slot.unit = unitByPath[""];
    slot.paddedDim0 = (slot.shape[0] + shards - 1) / shards * shards;
    if (slot.local)
      fsdpUnits[slot.unit].slots.push_back(i);
  }
  if (!unitByPath.count("")) {
    FsdpUnit root;
    root.name = "root";
    unitByPath[""] = fsdpUnits.size();
    fsdpUnits.push_back(std::move(root));
  }

  return true;
}

/// Each module's forward as compiled ops.
bool Executor::compileForwards(std::string &error) {
  // A remat this build does not run is refused, never run as another.
  if (plan.modules())
    for (const plan::Module *module : *plan.modules())
      if (module->remat() && module->remat()->size()) {
        std::string remat = str(module->remat());
        if (remat != "full" && remat != "selective" && remat != "op") {
          error = "module '" + printable(str(module->path())) +
                  "' has remat '" + printable(remat) +
                  "', not full, selective or op";
          return false;
        }
        rematByPath[str(module->path())] = remat;
      }

  if (!plan.forwards() || plan.forwards()->size() == 0) {
    error = "plan has no forwards (exported before parc-translate carried "
            "them); re-export it";
    return false;
  }
  for (const plan::Forward *fwd : *plan.forwards())
    if (!compileForward(*fwd, error))
      return false;
  return true;
}

/// Reads the rope scaling dictionary of `attr` into `op`, refusing a scaling
/// the kernel does not implement.
static bool readRopeScaling(const plan::OpAttr &attr, const std::string &where,
                            CompiledOp &op, std::string &error) {
  for (const plan::OpAttr *entry : *attr.children()) {
    std::string key = str(entry->name());
    double value = entry->kind() == plan::AttrKind::Int
                       ? double(entry->int_value())
                       : entry->float_value();
    if (key == "rope_type" || key == "type")
      op.ropeType = str(entry->string_value());
    else if (key == "factor")
      op.ropeFactor = value;
    else if (key == "low_freq_factor")
      op.lowFreqFactor = value;
    else if (key == "high_freq_factor")
      op.highFreqFactor = value;
    else if (key == "original_max_position_embeddings")
      op.originalMaxPositions = int64_t(value);
  }
  if (op.ropeType == "default")
    op.ropeType.clear();
  if (!op.ropeType.empty() && op.ropeType != "linear" &&
      op.ropeType != "llama3") {
    error = where + ": rope scaling '" + op.ropeType +
            "' is not supported by parc-run (default, linear, llama3)";
    return false;
  }
  return true;
}

/// The shape facts the kernels divide by or index with, checked once.
static bool checkCompiledOp(const CompiledOp &op, const std::string &where,
                            std::string &error) {
  if (op.kind == OpKind::Rope && (op.headDim <= 0 || op.headDim % 2)) {
    error = where + ": rope needs an even head_dim";
    return false;
  }
  if (op.kind == OpKind::Attention &&
      (op.heads <= 0 || op.kvHeads <= 0 || op.heads % op.kvHeads)) {
    error = where + ": attention heads " + std::to_string(op.heads) +
            " are not a multiple of KV heads " + std::to_string(op.kvHeads);
    return false;
  }
  if ((op.kind == OpKind::Embedding || op.kind == OpKind::Linear ||
       op.kind == OpKind::Matmul || op.kind == OpKind::RmsNorm ||
       op.kind == OpKind::LayerNorm) &&
      op.weight < 0) {
    error = where + ": op '" + op.name + "' has no weight";
    return false;
  }
  if (op.kind == OpKind::Rope &&
      (op.rotatedPairs < 0 || op.rotatedPairs > op.headDim / 2)) {
    error = where + ": rope rotates " + std::to_string(op.rotatedPairs) +
            " pairs of a " + std::to_string(op.headDim) + "-wide head";
    return false;
  }
  if (op.kind == OpKind::RmsNormalize && op.groupSize <= 0) {
    error = where + ": rms_normalize needs a positive group_size";
    return false;
  }
  if (op.rematSave && (op.kind == OpKind::Call || op.results.size() != 1)) {
    error = where + ": op '" + op.name +
            "' is marked parc.remat_save but is not one kernel with one "
            "result";
    return false;
  }
  return true;
}

bool Executor::readOpAttrs(const plan::ForwardOp &entry,
                           const std::string &where, CompiledOp &op,
                           std::string &error) {
  bool failedRef = false;
  auto slotOf = [&](const plan::OpAttr *attr) {
    std::string path = str(attr->string_value());
    if (tiedTo.count(path))
      path = tiedTo[path];
    auto it = slotByPath.find(path);
    if (it == slotByPath.end()) {
      error = where + ": op '" + op.name + "' refers to unknown parameter '" +
              path + "'";
      failedRef = true;
      return -1;
    }
    return it->second;
  };
  if (entry.attrs())
    for (const plan::OpAttr *attr : *entry.attrs()) {
      std::string name = str(attr->name());
      if (name == "weight")
        op.weight = slotOf(attr);
      else if (name == "bias")
        op.bias = slotOf(attr);
      else if (name == "callee")
        op.callee = str(attr->string_value());
      else if (name == "eps")
        op.eps = attr->float_value();
      else if (name == "scale") {
        op.scale = attr->float_value();
        op.hasScale = true;
      } else if (name == "unit_offset")
        op.unitOffset = true;
      else if (name == "causal")
        op.causal = true;
      else if (name == "sliding_window")
        op.window = attr->int_value();
      else if (name == "softcap" || name == "cap")
        op.cap = attr->float_value();
      else if (name == "num_heads")
        op.heads = attr->int_value();
      else if (name == "num_kv_heads")
        op.kvHeads = attr->int_value();
      else if (name == "head_dim")
        op.headDim = attr->int_value();
      else if (name == "group_size")
        op.groupSize = attr->int_value();
      else if (name == "rotated_pairs")
        op.rotatedPairs = attr->int_value();
      else if (name == "theta")
        op.theta = attr->float_value();
      else if (name == "parc.recompute")
        op.recompute = true;
      else if (name == "parc.remat_save")
        op.rematSave = true;
      else if (name == "kind" && op.kind == OpKind::Activation) {
        static const std::map<int64_t, Activation> acts = {
            {0, Activation::Silu},
            {1, Activation::GeluTanh},
            {2, Activation::Gelu},
            {3, Activation::Relu}};
        auto act = acts.find(attr->int_value());
        if (act == acts.end()) {
          error = where + ": unknown activation " +
                  std::to_string(attr->int_value());
          return false;
        }
        op.activation = act->second;
      } else if (name == "scaling" && attr->children()) {
        if (!readRopeScaling(*attr, where, op, error))
          return false;
      }
    }
  return !failedRef;
}

bool Executor::compileOp(const plan::ForwardOp &entry,
                         const std::string &module, int &numValues,
                         CompiledOp &op, std::string &error) {
  const std::map<std::string, OpKind> &kinds = opKinds();
  std::string where = "forward of '" + module + "'";
  op.name = str(entry.name());
  op.module = module;
  auto kind = kinds.find(op.name);
  if (kind == kinds.end()) {
    error = where + ": op '" + op.name +
            "' is not supported by parc-run (it runs the language-model "
            "ops: embedding, linear, norms, rope, attention, "
            "elementwise, softcap, cross-entropy, call)";
    return false;
  }
  op.kind = kind->second;
  if (entry.operands())
    op.operands.assign(entry.operands()->begin(), entry.operands()->end());
  if (entry.results())
    op.results.assign(entry.results()->begin(), entry.results()->end());
  for (int id : op.operands)
    if (id < 0 || id >= numValues) {
      error = where + ": op '" + op.name + "' reads undefined value " +
              std::to_string(id);
      return false;
    }
  for (int id : op.results)
    numValues = std::max(numValues, id + 1);
  if (!readOpAttrs(entry, where, op, error) ||
      !checkCompiledOp(op, where, error))
    return false;
  if (op.kind == OpKind::Embedding)
    vocab = std::max(vocab, paramSlots[op.weight].fullShape[0]);
  op.gatherOperand.assign(op.operands.size(), false);
  if (const plan::TpShards *tp = entry.tp()) {
    op.hasTp = true;
    if (tp->values())
      op.tpValues.assign(tp->values()->begin(), tp->values()->end());
    if (tp->comms())
      op.tpComms.assign(tp->comms()->begin(), tp->comms()->end());
    // plan::verifyPlan checked the indices against the op's operands.
    if (tp->gather())
      for (int i : *tp->gather())
        op.gatherOperand[i] = true;
  }
  return true;
}

/// One forward: its ops with their operands, results, kernel and attributes
/// read once, so that running it looks nothing up by name.
bool Executor::compileForward(const plan::Forward &fwd, std::string &error) {
  auto compiled = std::make_unique<CompiledForward>();
  compiled->module = str(fwd.path());
  compiled->numArgs = fwd.arg_types() ? fwd.arg_types()->size() : 0;
  int numValues = compiled->numArgs;
  if (fwd.ops())
    for (const plan::ForwardOp *entry : *fwd.ops()) {
      CompiledOp op;
      if (!compileOp(*entry, compiled->module, numValues, op, error))
        return false;
      compiled->ops.push_back(std::move(op));
    }
  compiled->numValues = numValues;
  if (fwd.results())
    compiled->results.assign(fwd.results()->begin(), fwd.results()->end());
  if (const plan::TpShards *tp = fwd.arg_tp()) {
    compiled->hasArgTp = true;
    if (tp->values())
      compiled->argTp.assign(tp->values()->begin(), tp->values()->end());
  }
  forwards[compiled->module] = std::move(compiled);
  return true;
}

bool Executor::compile(std::string &error) {
  if (!readRankLayout(plan, layout, error))
    return false;
  if (layout.world != comm.size()) {
    error = "the plan is for " + std::to_string(layout.world) +
            " ranks, this run has " + std::to_string(comm.size());
    return false;
  }
  layout.place(comm.rank());
  if (!compileParameters(error) || !compileUnits(error) ||
      !compileForwards(error))
    return false;
  for (auto &[path, fwd] : forwards)
    for (const CompiledOp &op : fwd->ops)
      if (op.kind == OpKind::Call && !forwards.count(op.callee)) {
        error = "forward of '" + path + "' calls '" + op.callee +
                "', which has no forward in the plan";
        return false;
      }
  if (!forwards.count("")) {
    error = "plan has no forward for the model itself";
    return false;
  }
  if (vocab == 0) {
    error = "plan's model has no token embedding; parc-run trains language "
            "models";
    return false;
  }
  if (layout.tp > 1 && !compileTp(error))
    return false;
  for (auto &[path, fwd] : forwards)
    groupRecomputes(*fwd);
  return compilePipeline(error) && buildInterpreter(error);
}

void Executor::groupRecomputes(CompiledForward &fwd) {
  size_t n = fwd.ops.size();
  fwd.recomputeGroupAt.assign(n, -1);
  auto groupable = [&](const CompiledOp &op) {
    return op.recompute && op.kind != OpKind::Call && op.results.size() == 1;
  };
  // Union-find over ops: a member joins the unsealed groups of its operands;
  // a group is sealed once an op outside it reads one of its results.
  std::vector<int> parent(n), producer(fwd.numValues, -1);
  std::vector<bool> sealed(n, false);
  std::function<int(int)> find = [&](int k) {
    return parent[k] == k ? k : parent[k] = find(parent[k]);
  };
  for (size_t k = 0; k < n; ++k) {
    parent[k] = k;
    const CompiledOp &op = fwd.ops[k];
    if (!groupable(op)) {
      for (int id : op.operands)
        if (producer[id] >= 0)
          sealed[find(producer[id])] = true;
      continue;
    }
    for (int id : op.operands)
      if (producer[id] >= 0 && !sealed[find(producer[id])])
        parent[find(producer[id])] = k;
    producer[op.results[0]] = k;
  }
  std::map<int, RecomputeGroup> groups;
  for (size_t k = 0; k < n; ++k)
    if (groupable(fwd.ops[k]))
      groups[find(k)].members.push_back(k);
  for (auto &[root, group] : groups) {
    std::set<int> defined, inputs, outputs;
    std::set<size_t> members(group.members.begin(), group.members.end());
    for (size_t k : group.members) {
      for (int id : fwd.ops[k].operands)
        if (!defined.count(id))
          inputs.insert(id);
      defined.insert(fwd.ops[k].results[0]);
    }
    for (size_t k = 0; k < n; ++k)
      if (!members.count(k))
        for (int id : fwd.ops[k].operands)
          if (defined.count(id))
            outputs.insert(id);
    for (int id : fwd.results)
      if (defined.count(id))
        outputs.insert(id);
    group.inputs.assign(inputs.begin(), inputs.end());
    group.outputs.assign(outputs.begin(), outputs.end());
    for (size_t k : group.members)
      fwd.recomputeGroupAt[k] = -2;
    fwd.recomputeGroupAt[group.members.back()] = fwd.recomputeGroups.size();
    fwd.recomputeGroups.push_back(std::move(group));
  }
}
