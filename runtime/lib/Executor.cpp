//===- Executor.cpp - a plan's forward on LibTorch, with FSDP and remat ---===//
//
// The forward ops of plan.bin become ATen calls; autograd builds the
// backward of each segment the program runs (Interpreter.cpp). Custom
// autograd functions carry tensor parallelism (Megatron's f and g, the
// sequence-parallel gathers and scatters, the vocab-parallel loss) and
// selective remat's op checkpoints (Recompute) into it. The FSDP gathers,
// frees and reduce-scatters are the program's own steps.
//
//===----------------------------------------------------------------------===//

#include "ExecutorInternals.h"
#include "parc/runtime/PlanFile.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;


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

int64_t intPtr(void *p) { return reinterpret_cast<int64_t>(p); }
template <typename T> T *fromInt(int64_t v) {
  return reinterpret_cast<T *>(v);
}

//===----------------------------------------------------------------------===//
// Autograd functions
//===----------------------------------------------------------------------===//

/// Megatron's f: identity forward; backward all-reduces the gradient over
/// the tp group (the input of a column-parallel linear is replicated, each
/// rank's gradient of it is partial).
struct TpCopy : torch::autograd::Function<TpCopy> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            int64_t executor) {
    ctx->saved_data["executor"] = executor;
    return x;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    at::Tensor grad = grads[0].contiguous().clone();
    exec->tpGroup().allReduceSum(grad);
    return {grad, at::Tensor()};
  }
};

/// Megatron's g: all-reduces partial outputs over the tp group; the
/// gradient passes through (every rank's output is the same sum).
struct TpReduce : torch::autograd::Function<TpReduce> {
  static at::Tensor forward(AutogradContext *, const at::Tensor &x,
                            int64_t executor) {
    auto *exec = fromInt<Executor>(executor);
    at::Tensor sum = x.contiguous().clone();
    exec->tpGroup().allReduceSum(sum);
    return sum;
  }
  static variable_list backward(AutogradContext *, variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

/// Vocab-sharded logits [..., V/tp] all-gathered into [..., V] (the padding
/// of a padded vocabulary dropped); backward keeps this rank's columns.
struct TpGatherVocab : torch::autograd::Function<TpGatherVocab> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            int64_t executor, int64_t vocab) {
    auto *exec = fromInt<Executor>(executor);
    Collectives &tp = exec->tpGroup();
    int64_t local = x.size(-1);
    ctx->saved_data["executor"] = executor;
    ctx->saved_data["local"] = local;
    at::Tensor flat = x.contiguous().reshape({1, -1});
    at::Tensor buffer = at::empty({tp.size(), flat.size(1)}, x.options());
    tp.allGather(flat, buffer);
    std::vector<int64_t> shape = x.sizes().vec();
    shape.insert(shape.begin(), tp.size());
    std::vector<int64_t> out = x.sizes().vec();
    out.back() = tp.size() * local;
    return buffer.view(shape).movedim(0, -2).reshape(out).narrow(-1, 0,
                                                                  vocab);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    int64_t local = ctx->saved_data["local"].toInt();
    int64_t begin = exec->tpGroup().rank() * local;
    const at::Tensor &grad = grads[0];
    int64_t vocab = grad.size(-1);
    std::vector<int64_t> shape = grad.sizes().vec();
    shape.back() = local;
    at::Tensor mine = at::zeros(shape, grad.options());
    int64_t end = std::min(begin + local, vocab);
    if (end > begin)
      mine.narrow(-1, 0, end - begin).copy_(grad.narrow(-1, begin, end - begin));
    return {mine, at::Tensor(), at::Tensor()};
  }
};

/// Sequence parallel: [b, s/tp, ...] shards all-gathered into [b, s, ...];
/// backward reduce-scatters the (partial) gradient over the sequence.
at::Tensor gatherSequence(Collectives &tp, const at::Tensor &x) {
  at::Tensor rows = x.transpose(0, 1).contiguous();
  std::vector<int64_t> shape = rows.sizes().vec();
  shape[0] *= tp.size();
  at::Tensor full = at::empty(shape, rows.options());
  tp.allGather(rows, full);
  // Contiguous once here: a transposed view would make every linear that
  // reads it (q, k, v) copy it for its matmul and save its own copy.
  return full.transpose(0, 1).contiguous();
}

at::Tensor scatterSequence(Collectives &tp, const at::Tensor &x,
                           const std::string &module) {
  if (x.size(1) % tp.size())
    throw std::runtime_error("forward of '" + module + "': sequence parallel "
                             "splits the sequence of " +
                             std::to_string(x.size(1)) + " tokens over " +
                             std::to_string(tp.size()) +
                             " TP ranks; use a multiple of it");
  return tp.reduceScatterSum(x.transpose(0, 1).contiguous()).transpose(0, 1);
}

struct TpGatherSequence : torch::autograd::Function<TpGatherSequence> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            int64_t executor) {
    ctx->saved_data["executor"] = executor;
    return gatherSequence(fromInt<Executor>(executor)->tpGroup(), x);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    return {scatterSequence(exec->tpGroup(), grads[0], "backward"),
            at::Tensor()};
  }
};

/// Sequence parallel: partial [b, s, ...] outputs reduce-scattered into this
/// rank's [b, s/tp, ...] sum; backward all-gathers the gradient.
struct TpScatterSequence : torch::autograd::Function<TpScatterSequence> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            int64_t executor, const std::string &module) {
    ctx->saved_data["executor"] = executor;
    return scatterSequence(fromInt<Executor>(executor)->tpGroup(), x, module);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    return {gatherSequence(exec->tpGroup(), grads[0]).contiguous(),
            at::Tensor(), at::Tensor()};
  }
};

/// Megatron's vocab-parallel cross-entropy (mean over tokens) on logits
/// sharded over the vocabulary: the logit max, the sum of exponentials and
/// the target logit are all-reduced over tp; the logits never are.
struct VocabParallelLoss : torch::autograd::Function<VocabParallelLoss> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &logits,
                            const at::Tensor &labels, int64_t executor,
                            int64_t vocab) {
    auto *exec = fromInt<Executor>(executor);
    Collectives &tp = exec->tpGroup();
    int64_t local = logits.size(-1);
    int64_t begin = tp.rank() * local;
    at::Tensor x = logits.reshape({-1, local}).to(at::kFloat);
    if (begin + local > vocab) {
      // Padding columns of a padded vocabulary take no probability.
      x = x.clone();
      x.narrow(1, std::max<int64_t>(0, vocab - begin),
               begin + local - std::max(vocab, begin))
          .fill_(-std::numeric_limits<float>::infinity());
    }
    at::Tensor max = std::get<0>(x.max(1)).contiguous();
    tp.allReduceMax(max);
    at::Tensor shifted = x - max.unsqueeze(1);
    at::Tensor exp = shifted.exp();
    at::Tensor target = labels.reshape({-1}) - begin;
    at::Tensor mine = (target >= 0) & (target < local);
    at::Tensor index = target.clamp(0, local - 1);
    at::Tensor targetLogit =
        shifted.gather(1, index.unsqueeze(1)).squeeze(1) * mine.to(at::kFloat);
    at::Tensor stats = at::stack({exp.sum(1), targetLogit}).contiguous();
    tp.allReduceSum(stats);
    at::Tensor loss = (stats[0].log() - stats[1]).mean();
    ctx->save_for_backward({exp / stats[0].unsqueeze(1), index, mine});
    ctx->saved_data["shape"] = logits.sizes().vec();
    ctx->saved_data["dtype"] = int64_t(logits.scalar_type());
    return loss;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    at::Tensor grad = saved[0].clone();
    grad.scatter_add_(1, saved[1].unsqueeze(1),
                      -saved[2].to(at::kFloat).unsqueeze(1));
    grad.mul_(grads[0] / double(grad.size(0)));
    auto shape = ctx->saved_data["shape"].toIntVector();
    auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grad.view(shape).to(dtype), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

/// What a Recompute checkpoint re-runs: a group of ops marked
/// parc.recompute (selective remat) whose inputs are the group's inputs
/// followed by each member's weight and bias. Layers with remat "full" are the program's
/// recompute steps (Interpreter.cpp).
struct RecomputeRegion {
  Executor *exec = nullptr;
  const CompiledForward *fwd = nullptr;
  const RecomputeGroup *group = nullptr;
};

variable_list runRegion(const RecomputeRegion &region,
                        const variable_list &inputs) {
  const RecomputeGroup &group = *region.group;
  std::vector<at::Tensor> local(region.fwd->numValues);
  for (size_t i = 0; i < group.inputs.size(); ++i)
    local[group.inputs[i]] = inputs[i];
  size_t next = group.inputs.size();
  for (size_t k : group.members) {
    const CompiledOp &op = region.fwd->ops[k];
    std::vector<at::Tensor> operands;
    for (int id : op.operands)
      operands.push_back(local[id]);
    operands = region.exec->gatherVocabOperands(op, std::move(operands));
    at::Tensor weight = op.weight >= 0 ? inputs[next++] : at::Tensor();
    at::Tensor bias = op.bias >= 0 ? inputs[next++] : at::Tensor();
    local[op.results[0]] = region.exec->apply(op, operands, weight, bias);
  }
  variable_list out;
  for (int id : group.outputs)
    out.push_back(local[id]);
  return out;
}

/// A checkpoint of a recompute group: keeps only its inputs and re-runs it
/// in backward.
struct Recompute : torch::autograd::Function<Recompute> {
  static variable_list forward(AutogradContext *ctx, at::TensorList inputs,
                               int64_t regionPtr) {
    auto *region = fromInt<RecomputeRegion>(regionPtr);
    ctx->saved_data["region"] = regionPtr;
    ctx->save_for_backward(inputs.vec());
    return runRegion(*region, inputs.vec());
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *region = fromInt<RecomputeRegion>(ctx->saved_data["region"].toInt());
    variable_list saved = ctx->get_saved_variables();
    variable_list leaves;
    for (const at::Tensor &t : saved)
      leaves.push_back(t.detach().requires_grad_(t.requires_grad()));
    variable_list outputs;
    {
      at::AutoGradMode enable(true);
      outputs = runRegion(*region, leaves);
    }
    variable_list outs, gradOuts, wrt;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].requires_grad() && grads[i].defined()) {
        outs.push_back(outputs[i]);
        gradOuts.push_back(grads[i]);
      }
    std::vector<size_t> wrtIndex;
    for (size_t i = 0; i < leaves.size(); ++i)
      if (leaves[i].requires_grad()) {
        wrt.push_back(leaves[i]);
        wrtIndex.push_back(i);
      }
    variable_list computed;
    if (!outs.empty() && !wrt.empty())
      computed = torch::autograd::grad(outs, wrt, gradOuts,
                                       /*retain_graph=*/false,
                                       /*create_graph=*/false,
                                       /*allow_unused=*/true);
    variable_list result(saved.size());
    for (size_t i = 0; i < wrtIndex.size(); ++i)
      result[wrtIndex[i]] = computed.empty() ? at::Tensor() : computed[i];
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

void parc::runtime::clearRecomputeRegions() { regions().clear(); }

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

bool Executor::compile(std::string &error) {
  if (!readRankLayout(plan, layout, error))
    return false;
  if (layout.world != comm.size()) {
    error = "the plan is for " + std::to_string(layout.world) +
            " ranks, this run has " + std::to_string(comm.size());
    return false;
  }
  layout.place(comm.rank());
  int shards = layout.fsdp;
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
      error = "parameter '" + std::string(str(param->path())) + "' has TP split '" + tp +
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
          slot.tpPaddedDim0 = param->tp_padded_dim0()
                                  ? param->tp_padded_dim0()
                                  : slot.fullShape[0];
          if (slot.tpPaddedDim0 < slot.fullShape[0] ||
              slot.tpPaddedDim0 % tp) {
            error = "parameter '" + path + "': vocab padded to " +
                    std::to_string(slot.tpPaddedDim0) +
                    " rows, which does not cover its " +
                    std::to_string(slot.fullShape[0]) +
                    " rows in a multiple of TP " + std::to_string(tp);
            return false;
          }
          slot.shape[0] = slot.tpPaddedDim0 / tp;
        } else if (slot.tp != TpSplit::Replicated) {
          if (int(slot.fullShape.size()) <= dim ||
              slot.fullShape[dim] % tp) {
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
        error = "tied parameters '" + alias->second + "' and '" +
                alias->first + "' are split differently by TP";
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
    slot.local = layout.pp == 1 ||
                 std::find(slot.stages.begin(), slot.stages.end(),
                           layout.ppIndex) != slot.stages.end();
  }

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
          vocab = std::max(vocab, paramSlots[op.weight].fullShape[0]);
        compiled->ops.push_back(std::move(op));
      }
    compiled->numValues = numValues;
    if (fwd->results())
      compiled->results.assign(fwd->results()->begin(), fwd->results()->end());
    for (CompiledOp &op : compiled->ops)
      op.gatherOperand.assign(op.operands.size(), false);
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
  if (layout.tp > 1) {
    std::vector<int> rootResults;
    if (!compileTp(*forwards.at(""), {0, 0}, rootResults, error))
      return false;
  }
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

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

void Executor::materialise(uint64_t seed) {
  int shards = layout.fsdp, shard = layout.fsdpIndex;
  int tp = layout.tp;
  for (ParamSlot &slot : paramSlots) {
    if (!slot.local)
      continue;
    at::Tensor full;
    if (slot.init == "ones")
      full = at::ones(slot.fullShape, at::kFloat);
    else if (slot.init == "zeros")
      full = at::zeros(slot.fullShape, at::kFloat);
    else {
      double std = std::stod(slot.init.substr(7));
      at::Generator gen =
          at::make_generator<at::CPUGeneratorImpl>(fnv1a(slot.path, seed));
      full = at::normal(0.0, std, slot.fullShape, gen);
    }
    // The TP slice of the world-1 tensor, then this rank's FSDP rows of it.
    if (tp > 1 && slot.tp != TpSplit::Replicated) {
      if (slot.tp == TpSplit::Vocab && slot.tpPaddedDim0 > full.size(0)) {
        std::vector<int64_t> pad = slot.fullShape;
        pad[0] = slot.tpPaddedDim0 - full.size(0);
        full = at::cat({full, at::zeros(pad, full.options())}, 0);
      }
      int dim = slot.tp == TpSplit::Rowwise ? 1 : 0;
      full = full.chunk(tp, dim)[layout.tpIndex].contiguous();
    }
    int64_t rows = slot.rowsPerRank(shards);
    std::vector<int64_t> shardShape = slot.shape;
    shardShape[0] = rows;
    at::Tensor mine = at::zeros(shardShape, at::kFloat);
    int64_t begin = shard * rows;
    int64_t end = std::min<int64_t>(begin + rows, slot.shape[0]);
    if (end > begin)
      mine.narrow(0, 0, end - begin).copy_(full.narrow(0, begin, end - begin));
    slot.master = mine.requires_grad_(!slot.frozen);
    slot.expAvg = at::zeros_like(mine);
    slot.expAvgSq = at::zeros_like(mine);
  }
}

void Executor::reduceReplicas(FsdpUnit &unit) {
  int replicas = dpComm->size();
  if (replicas == 1)
    return;
  // The unit's trainable shard gradients flattened into one buffer, summed
  // over the replicas and averaged (each replica's loss is the mean over its
  // own tokens, as each FSDP shard's is).
  std::vector<at::Tensor> grads;
  for (int s : unit.slots) {
    ParamSlot &slot = paramSlots[s];
    if (!slot.local || slot.frozen)
      continue;
    if (!slot.master.grad().defined())
      slot.master.mutable_grad() = at::zeros_like(slot.master);
    grads.push_back(slot.master.grad());
  }
  if (grads.empty())
    return;
  std::vector<at::Tensor> flat;
  for (const at::Tensor &g : grads)
    flat.push_back(g.reshape({-1}));
  at::Tensor buffer = at::cat(flat);
  dpComm->allReduceSum(buffer);
  buffer.div_(replicas);
  int64_t offset = 0;
  for (at::Tensor &g : grads) {
    g.copy_(buffer.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

void Executor::reduceTiedCopy(const std::string &path) {
  auto alias = tiedTo.find(path);
  auto it = slotByPath.find(alias == tiedTo.end() ? path : alias->second);
  if (it == slotByPath.end())
    throw std::runtime_error("tied-copy all-reduce of '" + path +
                             "', which is no parameter of the plan");
  ParamSlot &slot = paramSlots[it->second];
  if (!tiedComm || slot.stages.size() < 2 || !slot.local || slot.frozen)
    return;
  if (!slot.master.grad().defined())
    slot.master.mutable_grad() = at::zeros_like(slot.master);
  at::Tensor grad = slot.master.grad();
  tiedComm->allReduceSum(grad);
}

double Executor::gradSquares() {
  double sum = 0;
  // Data-parallel replicas hold the same (all-reduced) gradients: the first
  // counts them.
  if (layout.dpIndex != 0)
    return sum;
  for (ParamSlot &slot : paramSlots) {
    if (!slot.local || slot.frozen || !slot.master.grad().defined())
      continue;
    // Replicated over TP: every TP rank holds the same gradient.
    if (slot.tp == TpSplit::Replicated && layout.tpIndex != 0)
      continue;
    // A tie spanning stages: both copies hold the all-reduced gradient.
    if (slot.stages.size() > 1 && layout.ppIndex != slot.stages[0])
      continue;
    // Σ g² without a copy of the gradient: fp32 dot products over slices,
    // added in double (a double copy and its square would be a transient of
    // four times the largest gradient).
    at::Tensor flat = slot.master.grad().reshape({-1});
    constexpr int64_t kSlice = int64_t(1) << 20;
    for (int64_t at = 0; at < flat.numel(); at += kSlice) {
      at::Tensor part = flat.narrow(0, at, std::min(kSlice, flat.numel() - at));
      sum += at::dot(part, part).item<double>();
    }
  }
  return sum;
}

std::vector<int> Executor::moduleSlots(const std::string &module) {
  std::vector<int> slots;
  std::string prefix = module.empty() ? "" : module + ".";
  for (size_t i = 0; i < paramSlots.size(); ++i)
    if (paramSlots[i].path.rfind(prefix, 0) == 0)
      slots.push_back(i);
  return slots;
}

std::vector<at::Tensor> Executor::startGather(
    FsdpUnit &unit, std::vector<std::unique_ptr<PendingCollective>> &pending) {
  int world = fsdpComm->size();
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
    std::vector<int64_t> padded = slot.shape;
    padded[0] = slot.paddedDim0;
    at::Tensor buffer = at::empty(padded, shard.options().dtype(unit.compute));
    // This rank's shard goes straight into its slice, cast on the way: no
    // copy of the shard in the compute dtype exists besides.
    buffer.chunk(world, 0)[fsdpComm->rank()].copy_(shard);
    pending.push_back(fsdpComm->startAllGather(buffer));
    at::Tensor full = buffer;
    if (slot.paddedDim0 != slot.shape[0])
      // Same storage, not a view: the storage is freed and refilled whole.
      full = at::empty({0}, buffer.options())
                 .set_(buffer.storage(), 0, slot.shape,
                       c10::contiguous_strides(slot.shape));
    unit.storages.push_back(buffer.storage());
    fulls.push_back(full);
  }
  return fulls;
}

std::vector<at::Tensor>
Executor::reduceGrads(FsdpUnit &unit, const std::vector<at::Tensor> &grads) {
  int world = fsdpComm->size();
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
    at::Tensor mine = fsdpComm->reduceScatterSum(flat.contiguous());
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

void Executor::sendValue(const at::Tensor &value, int peer, int tag) {
  at::Tensor data = value.detach().contiguous();
  if (data.dim() > 7)
    throw std::runtime_error("PP: cannot send a " +
                             std::to_string(data.dim()) + "-d value");
  at::Tensor header = at::zeros({10}, at::kLong);
  auto *h = header.data_ptr<int64_t>();
  h[0] = data.dim();
  h[1] = int64_t(data.scalar_type());
  h[2] = value.requires_grad();
  for (int64_t d = 0; d < data.dim(); ++d)
    h[3 + d] = data.size(d);
  ppComm->send(header, peer, tag);
  ppComm->send(data, peer, tag + 1);
}

at::Tensor Executor::recvValue(int peer, int tag) {
  at::Tensor header = at::zeros({10}, at::kLong);
  ppComm->recv(header, peer, tag);
  auto *h = header.data_ptr<int64_t>();
  std::vector<int64_t> shape(h + 3, h + 3 + h[0]);
  at::Tensor data =
      at::empty(shape, at::TensorOptions().dtype(at::ScalarType(h[1])));
  ppComm->recv(data, peer, tag + 1);
  if (h[2])
    data.requires_grad_(true);
  return data;
}

/// A call inside a segment (docs/runtime.md): layers, the FSDP units and
/// the full-remat regions are the program's steps (Interpreter.cpp), so what
/// is called here is a plain module of a layer or of the root.
std::vector<at::Tensor> Executor::callModule(const std::string &callee,
                                             const std::vector<at::Tensor> &args) {
  if (unitByPath.count(callee) || rematByPath.count(callee))
    throw std::runtime_error("'" + callee +
                             "' is an FSDP unit or a remat region called "
                             "outside its program step");
  return run(callee, args);
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
  for (size_t index = 0; index < fwd.ops.size(); ++index) {
    const CompiledOp &op = fwd.ops[index];
    int group = fwd.recomputeGroupAt[index];
    bool checkpoint = at::GradMode::is_enabled();
    if (group == -2 && checkpoint)
      continue; // Runs inside its group, at the group's last member.
    if (group >= 0 && checkpoint) {
      const RecomputeGroup &g = fwd.recomputeGroups[group];
      auto region = std::make_unique<RecomputeRegion>();
      region->exec = this;
      region->fwd = &fwd;
      region->group = &g;
      variable_list inputs;
      for (int id : g.inputs)
        inputs.push_back(values[id]);
      for (size_t k : g.members) {
        const CompiledOp &member = fwd.ops[k];
        if (member.weight >= 0)
          inputs.push_back(param(member.weight, member));
        if (member.bias >= 0)
          inputs.push_back(param(member.bias, member));
      }
      RecomputeRegion *raw = region.get();
      regions().push_back(std::move(region));
      variable_list outputs =
          Recompute::apply(at::TensorList(inputs), intPtr(raw));
      for (size_t i = 0; i < g.outputs.size(); ++i)
        values[g.outputs[i]] = outputs[i];
      continue;
    }
    std::vector<at::Tensor> operands;
    for (int id : op.operands)
      operands.push_back(values[id]);
    int64_t before = memoryProbe ? memoryProbe() : 0;
    std::vector<at::Tensor> outputs = runOp(op, std::move(operands));
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

std::vector<at::Tensor>
Executor::gatherVocabOperands(const CompiledOp &op,
                              std::vector<at::Tensor> operands) {
  for (size_t i = 0; i < operands.size(); ++i)
    if (i < op.gatherOperand.size() && op.gatherOperand[i])
      operands[i] = TpGatherVocab::apply(operands[i], intPtr(this), vocab);
  return operands;
}

std::vector<at::Tensor> Executor::runOp(const CompiledOp &op,
                                        std::vector<at::Tensor> operands) {
  operands = gatherVocabOperands(op, std::move(operands));
  std::vector<at::Tensor> outputs;
  if (op.kind == OpKind::Call) {
    outputs = callModule(op.callee, operands);
  } else {
    at::Tensor weight = op.weight >= 0 ? param(op.weight, op) : at::Tensor();
    at::Tensor bias = op.bias >= 0 ? param(op.bias, op) : at::Tensor();
    outputs = {apply(op, operands, weight, bias)};
  }
  if (outputs.size() != op.results.size())
    throw std::runtime_error("forward of '" + op.module + "': '" + op.name +
                             "' produced " + std::to_string(outputs.size()) +
                             " values, the plan expects " +
                             std::to_string(op.results.size()));
  return outputs;
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
                           const at::Tensor &weightArg, const at::Tensor &bias) {
  // A replicated weight on TP-local features: its gradient is all-reduced.
  at::Tensor weight = op.tpWeightGrad && weightArg.defined()
                          ? TpCopy::apply(weightArg, intPtr(this))
                          : weightArg;
  switch (op.kind) {
  case OpKind::Embedding: {
    at::Tensor out;
    if (op.tpReduceOutput) {
      // Vocab-parallel: this rank looks up the ids in its rows, zeros the
      // others, and the all-reduce adds the ranks' rows.
      int64_t rows = weight.size(0);
      at::Tensor local = in[0] - tpComm->rank() * rows;
      at::Tensor mine = (local >= 0) & (local < rows);
      out = at::embedding(weight, local.masked_fill(~mine, 0)) *
            mine.unsqueeze(-1).to(weight.scalar_type());
      out = TpReduce::apply(out, intPtr(this));
    } else if (op.seqScatterOutput) {
      int64_t rows = weight.size(0);
      at::Tensor local = in[0] - tpComm->rank() * rows;
      at::Tensor mine = (local >= 0) & (local < rows);
      out = at::embedding(weight, local.masked_fill(~mine, 0)) *
            mine.unsqueeze(-1).to(weight.scalar_type());
      out = TpScatterSequence::apply(out, intPtr(this), op.module);
    } else {
      out = at::embedding(weight, in[0]);
    }
    return op.hasScale ? out * op.scale : out;
  }
  case OpKind::Linear: {
    at::Tensor x = in[0];
    if (op.tpCopyInput)
      x = TpCopy::apply(x, intPtr(this));
    else if (op.seqGatherInput) {
      // One gather of an input that several linears share (q, k, v).
      if (!sequenceGather.first.defined() ||
          sequenceGather.first.unsafeGetTensorImpl() != x.unsafeGetTensorImpl())
        sequenceGather = {x, TpGatherSequence::apply(x, intPtr(this))};
      x = sequenceGather.second;
    }
    if (op.seqScatterOutput)
      return TpScatterSequence::apply(at::linear(x, weight), intPtr(this),
                                      op.module);
    if (op.tpReduceOutput) {
      // Row-parallel: partial sums over this rank's input features; the
      // bias is added once, after the all-reduce.
      at::Tensor out = TpReduce::apply(at::linear(x, weight), intPtr(this));
      return bias.defined() ? out + bias : out;
    }
    return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
  }
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
    // Under TP the projections hold this rank's heads: count them.
    int64_t heads = q.size(-1) / d, kvHeads = k.size(-1) / d;
    if (heads * d != q.size(-1) || kvHeads * d != k.size(-1) ||
        v.size(-1) != k.size(-1) || kvHeads == 0 ||
        heads * op.kvHeads != kvHeads * op.heads)
      throw std::runtime_error(
          "forward of '" + op.module + "': attention of " +
          std::to_string(op.heads) + " heads / " + std::to_string(op.kvHeads) +
          " KV heads of " + std::to_string(d) + " gets q, k, v of width " +
          std::to_string(q.size(-1)) + ", " + std::to_string(k.size(-1)) +
          ", " + std::to_string(v.size(-1)));
    at::Tensor qh = q.view({b, s, heads, d}).transpose(1, 2);
    at::Tensor kh = k.view({b, s, kvHeads, d}).transpose(1, 2);
    at::Tensor vh = v.view({b, s, kvHeads, d}).transpose(1, 2);
    if (heads != kvHeads) {
      // Grouped-query attention: each KV head serves consecutive query heads.
      int64_t rep = heads / kvHeads;
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
    return at::matmul(probs, vh).transpose(1, 2).reshape({b, s, heads * d});
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
    if (op.vocabParallelLoss)
      return VocabParallelLoss::apply(logits, in[1], intPtr(this), vocab);
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
