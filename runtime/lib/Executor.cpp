//===- Executor.cpp - a plan's forward on LibTorch, with FSDP and remat ---===//
//
// The forward ops of plan.bin become ATen calls; autograd builds the
// backward. Three custom autograd functions carry the plan into it:
//  - GatherUnit: all-gathers a unit's shards before its forward; its
//    backward runs once every gradient of the unit's parameters is in, and
//    reduce-scatters them into the shards' grads.
//  - PreBackward: an identity on a resharded unit's output whose backward
//    re-gathers the unit's parameters before the unit's backward needs them.
//  - Recompute: a checkpoint; keeps only its inputs and re-runs the module
//    (remat "full") or the op (selective remat's parc.recompute) in backward.
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Executor.h"
#include "parc/runtime/PlanFile.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace parc::runtime {

enum class OpKind {
  Embedding,
  Linear,
  Matmul,
  RmsNorm,
  LayerNorm,
  Rope,
  Attention,
  Add,
  Mul,
  Activation,
  Softcap,
  CrossEntropy,
  Call,
};

enum class Activation { Silu, GeluTanh, Gelu, Relu };

/// A forward op with its attributes read once, before any work.
struct CompiledOp {
  OpKind kind;
  std::string name;
  std::string module;
  std::vector<int> operands;
  std::vector<int> results;
  int weight = -1;
  int bias = -1;
  std::string callee;
  double eps = 0, scale = 1, theta = 10000, cap = 0;
  bool hasScale = false, unitOffset = false, causal = false;
  int64_t window = 0, heads = 0, kvHeads = 0, headDim = 0;
  Activation activation = Activation::Silu;
  /// Rope scaling: "" (none), "linear" or "llama3".
  std::string ropeType;
  double ropeFactor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPositions = 8192;
  bool recompute = false;
};

struct CompiledForward {
  std::string module;
  int numArgs = 0;
  int numValues = 0;
  std::vector<CompiledOp> ops;
  std::vector<int> results;
};

} // namespace parc::runtime

namespace {

const char *str(const flatbuffers::String *s) { return s ? s->c_str() : ""; }

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

int64_t intPtr(void *p) { return reinterpret_cast<int64_t>(p); }
template <typename T> T *fromInt(int64_t v) {
  return reinterpret_cast<T *>(v);
}

//===----------------------------------------------------------------------===//
// Autograd functions
//===----------------------------------------------------------------------===//

struct GatherUnit : torch::autograd::Function<GatherUnit> {
  static variable_list forward(AutogradContext *ctx, at::TensorList masters,
                               int64_t executor, int64_t unit) {
    ctx->saved_data["executor"] = executor;
    ctx->saved_data["unit"] = unit;
    auto *exec = fromInt<Executor>(executor);
    return exec->gather(exec->units()[unit]);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    FsdpUnit &unit = exec->units()[ctx->saved_data["unit"].toInt()];
    variable_list result = exec->reduceGrads(unit, grads);
    exec->release(unit);
    result.emplace_back();
    result.emplace_back();
    return result;
  }
};

struct PreBackward : torch::autograd::Function<PreBackward> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            int64_t executor, int64_t unit) {
    ctx->saved_data["executor"] = executor;
    ctx->saved_data["unit"] = unit;
    return x;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    exec->regather(exec->units()[ctx->saved_data["unit"].toInt()]);
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

/// What a Recompute checkpoint re-runs.
struct RecomputeRegion {
  Executor *exec = nullptr;
  /// A module (remat "full"), or a single op when `op` is set.
  std::string module;
  const CompiledOp *op = nullptr;
  /// The FSDP unit the module is, whose shards are the checkpoint's
  /// parameter inputs; -1 when the parameter inputs are gathered tensors.
  int unit = -1;
  std::vector<int> slots;
  int numActivations = 0;
};

/// Runs a region: a module forward, or one op whose last inputs are its
/// weight and bias. A module that is not a unit of its own takes the
/// gathered tensors of its parameters (`slots`) as its last inputs, so that
/// their gradients leave the checkpoint.
variable_list runRegion(const RecomputeRegion &region,
                        const variable_list &inputs) {
  Executor &exec = *region.exec;
  std::vector<at::Tensor> acts(inputs.begin(),
                               inputs.begin() + region.numActivations);
  if (region.op) {
    size_t next = region.numActivations;
    at::Tensor weight = region.op->weight >= 0 ? inputs[next++] : at::Tensor();
    at::Tensor bias = region.op->bias >= 0 ? inputs[next++] : at::Tensor();
    return {exec.apply(*region.op, acts, weight, bias)};
  }
  if (region.unit >= 0)
    return exec.run(region.module, acts);
  std::vector<at::Tensor> previous;
  for (size_t i = 0; i < region.slots.size(); ++i) {
    at::Tensor &full = exec.slots()[region.slots[i]].full;
    previous.push_back(full);
    full = inputs[region.numActivations + i];
  }
  variable_list out = exec.run(region.module, acts);
  for (size_t i = 0; i < region.slots.size(); ++i)
    exec.slots()[region.slots[i]].full = previous[i];
  return out;
}

/// Points the unit's slots at gathered tensors for the length of a region.
void bindUnit(Executor &exec, FsdpUnit &unit, const std::vector<at::Tensor> &fulls) {
  for (size_t i = 0; i < unit.slots.size(); ++i)
    exec.slots()[unit.slots[i]].full =
        i < fulls.size() ? fulls[i] : at::Tensor();
}

struct Recompute : torch::autograd::Function<Recompute> {
  static variable_list forward(AutogradContext *ctx, at::TensorList inputs,
                               int64_t regionPtr) {
    auto *region = fromInt<RecomputeRegion>(regionPtr);
    ctx->saved_data["region"] = regionPtr;
    ctx->save_for_backward(inputs.vec());
    variable_list in = inputs.vec();
    if (region->unit >= 0) {
      FsdpUnit &unit = region->exec->units()[region->unit];
      bindUnit(*region->exec, unit, region->exec->gather(unit));
      variable_list out = runRegion(*region, in);
      bindUnit(*region->exec, unit, {});
      region->exec->release(unit);
      return out;
    }
    return runRegion(*region, in);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *region = fromInt<RecomputeRegion>(ctx->saved_data["region"].toInt());
    Executor &exec = *region->exec;
    variable_list saved = ctx->get_saved_variables();
    variable_list leaves;
    for (const at::Tensor &t : saved)
      leaves.push_back(t.detach().requires_grad_(t.requires_grad()));
    FsdpUnit *unit = region->unit >= 0 ? &exec.units()[region->unit] : nullptr;
    variable_list outputs, wrt, paramLeaves;
    {
      at::AutoGradMode enable(true);
      if (unit) {
        std::vector<at::Tensor> fulls = exec.gather(*unit);
        for (size_t i = 0; i < unit->slots.size(); ++i) {
          ParamSlot &slot = exec.slots()[unit->slots[i]];
          slot.full = fulls[i].detach().requires_grad_(!slot.frozen);
          paramLeaves.push_back(slot.full);
        }
      }
      outputs = runRegion(*region, leaves);
    }
    variable_list outs, gradOuts;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].requires_grad() && grads[i].defined()) {
        outs.push_back(outputs[i]);
        gradOuts.push_back(grads[i]);
      }
    std::vector<size_t> wrtIndex;
    // A unit's shard inputs get their gradients from the reduce-scatter.
    size_t differentiable = unit ? region->numActivations : leaves.size();
    for (size_t i = 0; i < differentiable; ++i)
      if (leaves[i].requires_grad()) {
        wrt.push_back(leaves[i]);
        wrtIndex.push_back(i);
      }
    size_t firstParam = wrt.size();
    for (const at::Tensor &p : paramLeaves)
      if (p.requires_grad())
        wrt.push_back(p);
    variable_list computed;
    if (!outs.empty() && !wrt.empty())
      computed = torch::autograd::grad(outs, wrt, gradOuts,
                                       /*retain_graph=*/false,
                                       /*create_graph=*/false,
                                       /*allow_unused=*/true);
    variable_list result(saved.size());
    for (size_t i = 0; i < wrtIndex.size(); ++i)
      result[wrtIndex[i]] = computed.empty() ? at::Tensor() : computed[i];
    if (unit) {
      std::vector<at::Tensor> paramGrads;
      size_t next = firstParam;
      for (int s : unit->slots)
        paramGrads.push_back(exec.slots()[s].frozen || computed.empty()
                                 ? at::Tensor()
                                 : computed[next++]);
      std::vector<at::Tensor> shardGrads = exec.reduceGrads(*unit, paramGrads);
      for (size_t i = 0; i < shardGrads.size(); ++i)
        result[region->numActivations + i] = shardGrads[i];
      for (int s : unit->slots)
        exec.slots()[s].full = at::Tensor();
      exec.release(*unit);
    }
    result.emplace_back();
    return result;
  }
};

/// Regions live as long as the executor; the autograd graph points at them.
std::vector<std::unique_ptr<RecomputeRegion>> &regions() {
  static std::vector<std::unique_ptr<RecomputeRegion>> all;
  return all;
}

} // namespace

//===----------------------------------------------------------------------===//
// Building the executor
//===----------------------------------------------------------------------===//

Executor::Executor(const plan::Plan &plan, Collectives &comm)
    : plan(plan), comm(comm) {}

Executor::~Executor() = default;

std::unique_ptr<Executor> Executor::create(const plan::Plan &plan,
                                           Collectives &comm,
                                           std::string &error) {
  std::unique_ptr<Executor> exec(new Executor(plan, comm));
  if (!exec->compile(error))
    return nullptr;
  return exec;
}

bool Executor::compile(std::string &error) {
  int world = comm.size();
  if (plan.ties())
    for (const plan::Tie *tie : *plan.ties())
      if (tie->params() && tie->params()->size() > 1)
        for (unsigned i = 1; i < tie->params()->size(); ++i)
          tiedTo[tie->params()->Get(i)->str()] = tie->params()->Get(0)->str();
  if (plan.params())
    for (const plan::Param *param : *plan.params()) {
      std::string path = str(param->path());
      if (tiedTo.count(path))
        continue;
      ParamSlot slot;
      slot.path = path;
      if (param->shape())
        slot.shape.assign(param->shape()->begin(), param->shape()->end());
      if (slot.shape.empty())
        slot.shape.push_back(1);
      slot.init = str(param->init());
      slot.frozen = param->frozen();
      if (slot.init != "ones" && slot.init != "zeros" &&
          slot.init.rfind("normal(", 0) != 0) {
        error = "parameter '" + path + "' has initialisation '" + slot.init +
                "' this runtime does not know (ones, zeros, normal(std))";
        return false;
      }
      slotByPath[path] = paramSlots.size();
      paramSlots.push_back(std::move(slot));
    }

  if (plan.fsdp_units())
    for (const plan::FsdpUnit *entry : *plan.fsdp_units()) {
      FsdpUnit unit;
      unit.name = str(entry->name());
      unit.path = str(entry->path());
      unit.reshardAfterForward = entry->reshard_after_forward();
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
          if (sp->padded_dim0() % world != 0 ||
              sp->padded_dim0() < slot.shape[0]) {
            error = "parameter '" + path + "': padded dim 0 " +
                    std::to_string(sp->padded_dim0()) +
                    " is not a multiple of the world size " +
                    std::to_string(world) + " covering dim 0 " +
                    std::to_string(slot.shape[0]);
            return false;
          }
          slot.paddedDim0 = sp->padded_dim0();
          slot.unit = fsdpUnits.size();
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
      root.reshardAfterForward = false;
      unitByPath[""] = fsdpUnits.size();
      fsdpUnits.push_back(std::move(root));
    }
    slot.unit = unitByPath[""];
    slot.paddedDim0 = (slot.shape[0] + world - 1) / world * world;
    fsdpUnits[slot.unit].slots.push_back(i);
  }
  if (!unitByPath.count("")) {
    FsdpUnit root;
    root.name = "root";
    root.reshardAfterForward = false;
    unitByPath[""] = fsdpUnits.size();
    fsdpUnits.push_back(std::move(root));
  }

  if (plan.modules())
    for (const plan::Module *module : *plan.modules())
      if (module->remat() && module->remat()->size())
        rematByPath[str(module->path())] = str(module->remat());

  if (!plan.forwards() || plan.forwards()->size() == 0) {
    error = "plan has no forwards (exported before parc-translate carried "
            "them); re-export it";
    return false;
  }
  static const std::map<std::string, OpKind> kinds = {
      {"parc.embedding", OpKind::Embedding},
      {"parc.linear", OpKind::Linear},
      {"parc.matmul", OpKind::Matmul},
      {"parc.rms_norm", OpKind::RmsNorm},
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
  for (const plan::Forward *fwd : *plan.forwards()) {
    auto compiled = std::make_unique<CompiledForward>();
    compiled->module = str(fwd->path());
    std::string where = "forward of '" + compiled->module + "'";
    compiled->numArgs = fwd->arg_types() ? fwd->arg_types()->size() : 0;
    int numValues = compiled->numArgs;
    if (fwd->ops())
      for (const plan::ForwardOp *entry : *fwd->ops()) {
        CompiledOp op;
        op.name = str(entry->name());
        op.module = compiled->module;
        auto kind = kinds.find(op.name);
        if (kind == kinds.end()) {
          error = where + ": op '" + op.name +
                  "' is not supported by parc-run (it runs the language-model "
                  "ops: embedding, linear, norms, rope, attention, "
                  "elementwise, softcap, cross-entropy, call)";
          return false;
        }
        op.kind = kind->second;
        if (entry->operands())
          op.operands.assign(entry->operands()->begin(),
                             entry->operands()->end());
        if (entry->results())
          op.results.assign(entry->results()->begin(), entry->results()->end());
        for (int id : op.operands)
          if (id < 0 || id >= numValues) {
            error = where + ": op '" + op.name + "' reads undefined value " +
                    std::to_string(id);
            return false;
          }
        for (int id : op.results)
          numValues = std::max(numValues, id + 1);
        bool failedRef = false;
        auto slotOf = [&](const plan::OpAttr *attr) {
          std::string path = str(attr->string_value());
          if (tiedTo.count(path))
            path = tiedTo[path];
          auto it = slotByPath.find(path);
          if (it == slotByPath.end()) {
            error = where + ": op '" + op.name +
                    "' refers to unknown parameter '" + path + "'";
            failedRef = true;
            return -1;
          }
          return it->second;
        };
        if (entry->attrs())
          for (const plan::OpAttr *attr : *entry->attrs()) {
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
            else if (name == "theta")
              op.theta = attr->float_value();
            else if (name == "parc.recompute")
              op.recompute = true;
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
              for (const plan::OpAttr *entry : *attr->children()) {
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
                        "' is not supported by parc-run (default, linear, "
                        "llama3)";
                return false;
              }
            }
          }
        if (failedRef)
          return false;
        if (op.kind == OpKind::Rope && (op.headDim <= 0 || op.headDim % 2)) {
          error = where + ": rope needs an even head_dim";
          return false;
        }
        if (op.kind == OpKind::Attention &&
            (op.heads <= 0 || op.kvHeads <= 0 || op.heads % op.kvHeads)) {
          error = where + ": attention heads " + std::to_string(op.heads) +
                  " are not a multiple of KV heads " +
                  std::to_string(op.kvHeads);
          return false;
        }
        if ((op.kind == OpKind::Embedding || op.kind == OpKind::Linear ||
             op.kind == OpKind::Matmul || op.kind == OpKind::RmsNorm ||
             op.kind == OpKind::LayerNorm) &&
            op.weight < 0) {
          error = where + ": op '" + op.name + "' has no weight";
          return false;
        }
        if (op.kind == OpKind::Embedding)
          vocab = std::max(vocab, paramSlots[op.weight].shape[0]);
        compiled->ops.push_back(std::move(op));
      }
    compiled->numValues = numValues;
    if (fwd->results())
      compiled->results.assign(fwd->results()->begin(), fwd->results()->end());
    forwards[compiled->module] = std::move(compiled);
  }
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
  return true;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

void Executor::materialise(uint64_t seed) {
  int world = comm.size(), rank = comm.rank();
  for (ParamSlot &slot : paramSlots) {
    at::Tensor full;
    if (slot.init == "ones")
      full = at::ones(slot.shape, at::kFloat);
    else if (slot.init == "zeros")
      full = at::zeros(slot.shape, at::kFloat);
    else {
      double std = std::stod(slot.init.substr(7));
      at::Generator gen =
          at::make_generator<at::CPUGeneratorImpl>(fnv1a(slot.path, seed));
      full = at::normal(0.0, std, slot.shape, gen);
    }
    int64_t rows = slot.rowsPerRank(world);
    std::vector<int64_t> shardShape = slot.shape;
    shardShape[0] = rows;
    at::Tensor shard = at::zeros(shardShape, at::kFloat);
    int64_t begin = rank * rows;
    int64_t end = std::min<int64_t>(begin + rows, slot.shape[0]);
    if (end > begin)
      shard.narrow(0, 0, end - begin).copy_(full.narrow(0, begin, end - begin));
    slot.master = shard.requires_grad_(!slot.frozen);
    slot.expAvg = at::zeros_like(shard);
    slot.expAvgSq = at::zeros_like(shard);
  }
}

std::vector<int> Executor::moduleSlots(const std::string &module) {
  std::vector<int> slots;
  std::string prefix = module.empty() ? "" : module + ".";
  for (size_t i = 0; i < paramSlots.size(); ++i)
    if (paramSlots[i].path.rfind(prefix, 0) == 0)
      slots.push_back(i);
  return slots;
}

std::vector<at::Tensor> Executor::gather(FsdpUnit &unit) {
  int world = comm.size();
  std::vector<at::Tensor> fulls;
  unit.storages.clear();
  for (int s : unit.slots) {
    ParamSlot &slot = paramSlots[s];
    at::Tensor shard = slot.master.detach();
    if (world == 1 && unit.compute == at::kFloat) {
      // One rank: the master is the compute tensor; nothing to gather.
      fulls.push_back(shard);
      unit.storages.emplace_back();
      continue;
    }
    shard = shard.to(unit.compute);
    std::vector<int64_t> padded = slot.shape;
    padded[0] = slot.paddedDim0;
    at::Tensor buffer = at::empty(padded, shard.options());
    comm.allGather(shard, buffer);
    at::Tensor full = buffer;
    if (slot.paddedDim0 != slot.shape[0])
      // Same storage, not a view: the storage is freed and refilled whole.
      full = at::empty({0}, buffer.options())
                 .set_(buffer.storage(), 0, slot.shape,
                       c10::contiguous_strides(slot.shape));
    unit.storages.push_back(buffer.storage());
    fulls.push_back(full);
  }
  unit.gathered = true;
  return fulls;
}

void Executor::release(FsdpUnit &unit) {
  for (c10::Storage &storage : unit.storages)
    if (storage)
      storage.unsafeGetStorageImpl()->reset();
  unit.gathered = false;
}

void Executor::regather(FsdpUnit &unit) {
  int world = comm.size();
  for (size_t i = 0; i < unit.slots.size(); ++i) {
    c10::Storage &target = unit.storages[i];
    if (!target)
      continue;
    ParamSlot &slot = paramSlots[unit.slots[i]];
    at::Tensor shard = slot.master.detach().to(unit.compute);
    std::vector<int64_t> padded = slot.shape;
    padded[0] = slot.paddedDim0;
    at::Tensor buffer = at::empty(padded, shard.options());
    if (world == 1)
      buffer.copy_(shard);
    else
      comm.allGather(shard, buffer);
    // Move the data under the storage autograd saved, without bumping any
    // version counter.
    c10::StorageImpl *source = buffer.storage().unsafeGetStorageImpl();
    size_t bytes = source->nbytes();
    at::DataPtr data = source->set_data_ptr(at::DataPtr());
    source->set_nbytes(0);
    target.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(data));
    target.unsafeGetStorageImpl()->set_nbytes(bytes);
  }
  unit.gathered = true;
}

std::vector<at::Tensor>
Executor::reduceGrads(FsdpUnit &unit, const std::vector<at::Tensor> &grads) {
  int world = comm.size();
  std::vector<at::Tensor> shards;
  for (size_t i = 0; i < unit.slots.size(); ++i) {
    ParamSlot &slot = paramSlots[unit.slots[i]];
    at::Tensor grad = i < grads.size() ? grads[i] : at::Tensor();
    if (slot.frozen) {
      shards.emplace_back();
      continue;
    }
    if (!grad.defined())
      grad = at::zeros(slot.shape, slot.master.options());
    if (world == 1) {
      shards.push_back(grad.to(at::kFloat));
      continue;
    }
    at::Tensor flat = grad.to(unit.reduce);
    if (slot.paddedDim0 != slot.shape[0]) {
      std::vector<int64_t> padShape = slot.shape;
      padShape[0] = slot.paddedDim0 - slot.shape[0];
      flat = at::cat({flat, at::zeros(padShape, flat.options())}, 0);
    }
    at::Tensor mine = comm.reduceScatterSum(flat.contiguous());
    // Data parallel: each rank's loss is the mean over its own tokens.
    shards.push_back(mine.to(at::kFloat).div_(world));
  }
  return shards;
}

const at::Tensor &Executor::param(int slot, const CompiledOp &op) {
  const at::Tensor &t = paramSlots[slot].full;
  if (!t.defined())
    throw std::runtime_error("forward of '" + op.module + "': parameter '" +
                             paramSlots[slot].path +
                             "' is used while its FSDP unit is not gathered");
  return t;
}

//===----------------------------------------------------------------------===//
// Running forwards
//===----------------------------------------------------------------------===//

at::Tensor Executor::loss(const at::Tensor &ids, const at::Tensor &labels) {
  // The previous micro-batch's graph has been run backward: its regions go.
  regions().clear();
  FsdpUnit &root = units()[unitByPath[""]];
  std::vector<at::Tensor> masters;
  for (int s : root.slots)
    masters.push_back(paramSlots[s].master);
  variable_list fulls = GatherUnit::apply(at::TensorList(masters), intPtr(this),
                                          int64_t(unitByPath[""]));
  for (size_t i = 0; i < root.slots.size(); ++i)
    paramSlots[root.slots[i]].full = fulls[i];
  std::vector<at::Tensor> results = run("", {ids, labels});
  for (int s : root.slots)
    paramSlots[s].full = at::Tensor();
  if (results.size() != 1 || results[0].dim() != 0)
    throw std::runtime_error("the model's forward must return one scalar "
                             "loss; this plan's returns " +
                             std::to_string(results.size()) + " values");
  return results[0];
}

std::vector<at::Tensor> Executor::callModule(const std::string &callee,
                                             const std::vector<at::Tensor> &args) {
  auto unitIt = unitByPath.find(callee);
  auto rematIt = rematByPath.find(callee);
  bool full = rematIt != rematByPath.end() && rematIt->second == "full";
  bool isUnit = unitIt != unitByPath.end() && !callee.empty();
  if (full) {
    auto region = std::make_unique<RecomputeRegion>();
    region->exec = this;
    region->module = callee;
    region->numActivations = args.size();
    variable_list inputs(args.begin(), args.end());
    if (isUnit) {
      region->unit = unitIt->second;
      for (int s : fsdpUnits[unitIt->second].slots)
        inputs.push_back(paramSlots[s].master);
    } else {
      for (int s : moduleSlots(callee))
        if (paramSlots[s].full.defined()) {
          region->slots.push_back(s);
          inputs.push_back(paramSlots[s].full);
        }
    }
    RecomputeRegion *raw = region.get();
    regions().push_back(std::move(region));
    return Recompute::apply(at::TensorList(inputs), intPtr(raw));
  }
  if (!isUnit)
    return run(callee, args);
  int index = unitIt->second;
  FsdpUnit &unit = fsdpUnits[index];
  std::vector<at::Tensor> masters;
  for (int s : unit.slots)
    masters.push_back(paramSlots[s].master);
  variable_list fulls =
      GatherUnit::apply(at::TensorList(masters), intPtr(this), int64_t(index));
  for (size_t i = 0; i < unit.slots.size(); ++i)
    paramSlots[unit.slots[i]].full = fulls[i];
  std::vector<at::Tensor> outputs = run(callee, args);
  for (int s : unit.slots)
    paramSlots[s].full = at::Tensor();
  if (unit.reshardAfterForward && comm.size() > 1) {
    release(unit);
    for (at::Tensor &out : outputs)
      if (out.requires_grad())
        out = PreBackward::apply(out, intPtr(this), int64_t(index));
  }
  return outputs;
}

std::vector<at::Tensor> Executor::run(const std::string &module,
                                      const std::vector<at::Tensor> &args) {
  const CompiledForward &fwd = *forwards.at(module);
  if (static_cast<int>(args.size()) != fwd.numArgs)
    throw std::runtime_error("forward of '" + module + "' takes " +
                             std::to_string(fwd.numArgs) + " arguments, got " +
                             std::to_string(args.size()));
  std::vector<at::Tensor> values(fwd.numValues);
  std::copy(args.begin(), args.end(), values.begin());
  for (const CompiledOp &op : fwd.ops) {
    std::vector<at::Tensor> operands;
    for (int id : op.operands)
      operands.push_back(values[id]);
    std::vector<at::Tensor> outputs;
    int64_t before = memoryProbe ? memoryProbe() : 0;
    if (op.kind == OpKind::Call) {
      outputs = callModule(op.callee, operands);
    } else if (op.recompute && at::GradMode::is_enabled()) {
      auto region = std::make_unique<RecomputeRegion>();
      region->exec = this;
      region->op = &op;
      region->numActivations = operands.size();
      variable_list inputs = operands;
      if (op.weight >= 0)
        inputs.push_back(param(op.weight, op));
      if (op.bias >= 0)
        inputs.push_back(param(op.bias, op));
      RecomputeRegion *raw = region.get();
      regions().push_back(std::move(region));
      outputs = Recompute::apply(at::TensorList(inputs), intPtr(raw));
    } else {
      at::Tensor weight = op.weight >= 0 ? param(op.weight, op) : at::Tensor();
      at::Tensor bias = op.bias >= 0 ? param(op.bias, op) : at::Tensor();
      outputs = {apply(op, operands, weight, bias)};
    }
    if (outputs.size() != op.results.size())
      throw std::runtime_error("forward of '" + module + "': '" + op.name +
                               "' produced " + std::to_string(outputs.size()) +
                               " values, the plan expects " +
                               std::to_string(op.results.size()));
    for (size_t i = 0; i < outputs.size(); ++i)
      values[op.results[i]] = std::move(outputs[i]);
    if (memoryProbe && at::GradMode::is_enabled())
      std::cerr << "  " << module << " " << op.name << " " << op.callee
                << ": +" << memoryProbe() - before << " bytes\n";
  }
  std::vector<at::Tensor> results;
  for (int id : fwd.results)
    results.push_back(values[id]);
  return results;
}

at::Tensor Executor::ropeTables(int64_t seq, const CompiledOp &op, bool sine) {
  std::ostringstream key;
  key << seq << "/" << op.headDim << "/" << op.theta << "/" << op.ropeType
      << "/" << op.ropeFactor << "/" << sine;
  auto it = ropeCache.find(key.str());
  if (it != ropeCache.end())
    return it->second;
  // Hugging Face's rotary embedding: inv_freq over even channels, the
  // rotation applied to the two halves of each head (rotate_half).
  int64_t half = op.headDim / 2;
  at::Tensor invFreq =
      1.0 / at::pow(op.theta, at::arange(0, op.headDim, 2, at::kDouble) /
                                  double(op.headDim));
  if (op.ropeType == "linear")
    invFreq = invFreq / op.ropeFactor;
  else if (op.ropeType == "llama3") {
    // transformers' _compute_llama3_parameters.
    double lowWavelen = op.originalMaxPositions / op.lowFreqFactor;
    double highWavelen = op.originalMaxPositions / op.highFreqFactor;
    at::Tensor wavelen = 2 * M_PI / invFreq;
    at::Tensor scaled = at::where(wavelen > lowWavelen,
                                  invFreq / op.ropeFactor, invFreq);
    at::Tensor smooth = (op.originalMaxPositions / wavelen - op.lowFreqFactor) /
                        (op.highFreqFactor - op.lowFreqFactor);
    at::Tensor smoothed =
        (1 - smooth) * scaled / op.ropeFactor + smooth * scaled;
    at::Tensor medium = (wavelen >= highWavelen) & (wavelen <= lowWavelen);
    invFreq = at::where(medium, smoothed, scaled);
  }
  (void)half;
  at::Tensor positions = at::arange(seq, at::kDouble);
  at::Tensor freqs = at::outer(positions, invFreq).to(at::kFloat);
  at::Tensor emb = at::cat({freqs, freqs}, -1).view({1, seq, 1, op.headDim});
  at::Tensor table = sine ? emb.sin() : emb.cos();
  ropeCache[key.str()] = table;
  return table;
}

at::Tensor Executor::apply(const CompiledOp &op,
                           const std::vector<at::Tensor> &in,
                           const at::Tensor &weight, const at::Tensor &bias) {
  switch (op.kind) {
  case OpKind::Embedding: {
    at::Tensor out = at::embedding(weight, in[0]);
    return op.hasScale ? out * op.scale : out;
  }
  case OpKind::Linear:
    return at::linear(in[0], weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
  case OpKind::Matmul:
    return at::matmul(in[0], weight);
  case OpKind::RmsNorm: {
    // Normalise each group of the weight's size along the last dimension
    // (the whole vector, or one head for q/k norms), in fp32.
    const at::Tensor &x = in[0];
    int64_t group = weight.numel();
    std::vector<int64_t> grouped = x.sizes().vec();
    int64_t last = grouped.back();
    grouped.back() = last / group;
    grouped.push_back(group);
    at::Tensor xf = x.to(at::kFloat).reshape(grouped);
    at::Tensor normed =
        xf * at::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true) + op.eps);
    at::Tensor scale = op.unitOffset ? weight.to(at::kFloat) + 1.0
                                     : weight.to(at::kFloat);
    return (normed * scale).reshape(x.sizes()).to(x.scalar_type());
  }
  case OpKind::LayerNorm:
    return at::layer_norm(in[0], {weight.numel()}, weight,
                          bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt, op.eps);
  case OpKind::Rope: {
    const at::Tensor &x = in[0];
    int64_t b = x.size(0), s = x.size(1);
    at::Tensor heads = x.view({b, s, -1, op.headDim});
    at::Tensor cos = ropeTables(s, op, false).to(x.scalar_type());
    at::Tensor sin = ropeTables(s, op, true).to(x.scalar_type());
    int64_t half = op.headDim / 2;
    at::Tensor rotated = at::cat(
        {-heads.narrow(-1, half, half), heads.narrow(-1, 0, half)}, -1);
    return (heads * cos + rotated * sin).view(x.sizes());
  }
  case OpKind::Attention: {
    const at::Tensor &q = in[0], &k = in[1], &v = in[2];
    int64_t b = q.size(0), s = q.size(1), d = op.headDim;
    at::Tensor qh = q.view({b, s, op.heads, d}).transpose(1, 2);
    at::Tensor kh = k.view({b, s, op.kvHeads, d}).transpose(1, 2);
    at::Tensor vh = v.view({b, s, op.kvHeads, d}).transpose(1, 2);
    if (op.heads != op.kvHeads) {
      // Grouped-query attention: each KV head serves consecutive query heads.
      int64_t rep = op.heads / op.kvHeads;
      kh = kh.repeat_interleave(rep, 1);
      vh = vh.repeat_interleave(rep, 1);
    }
    at::Tensor scores = at::matmul(qh, kh.transpose(-2, -1)) * op.scale;
    if (op.cap > 0)
      scores = at::tanh(scores / op.cap) * op.cap;
    if (op.causal || op.window > 0) {
      at::Tensor i = at::arange(s, at::kLong).view({s, 1});
      at::Tensor j = at::arange(s, at::kLong).view({1, s});
      at::Tensor masked = at::zeros({s, s}, at::kBool);
      if (op.causal)
        masked = masked | (j > i);
      if (op.window > 0)
        masked = masked | (i - j >= op.window);
      scores = scores.masked_fill(masked, -std::numeric_limits<float>::infinity());
    }
    at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    return at::matmul(probs, vh).transpose(1, 2).reshape({b, s, op.heads * d});
  }
  case OpKind::Add:
    return in[0] + in[1];
  case OpKind::Mul:
    return in[0] * in[1];
  case OpKind::Activation:
    switch (op.activation) {
    case Activation::Silu:
      return at::silu(in[0]);
    case Activation::GeluTanh:
      return at::gelu(in[0], "tanh");
    case Activation::Gelu:
      return at::gelu(in[0]);
    case Activation::Relu:
      return at::relu(in[0]);
    }
    break;
  case OpKind::Softcap:
    return at::tanh(in[0] / op.cap) * op.cap;
  case OpKind::CrossEntropy: {
    const at::Tensor &logits = in[0];
    return at::cross_entropy_loss(
        logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
        in[1].reshape({-1}));
  }
  case OpKind::Call:
    break;
  }
  throw std::runtime_error("forward of '" + op.module + "': cannot run '" +
                           op.name + "' here");
}
