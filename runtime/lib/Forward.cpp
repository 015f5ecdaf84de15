//===- Forward.cpp - a compiled forward on ATen, with TP and remat
//---------===//
//
// The forward ops of plan.bin become ATen calls; autograd builds the
// backward of each segment the program runs (Interpreter.cpp). Custom
// autograd functions carry tensor parallelism (Megatron's f and g, the
// sequence-parallel gathers and scatters, the vocab-parallel loss) and
// selective remat's op checkpoints (Recompute) into it.
//
//===----------------------------------------------------------------------===//

#include "ExecutorInternals.h"
#include "parc/runtime/PlanFile.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

int64_t intPtr(void *p) { return reinterpret_cast<int64_t>(p); }
template <typename T>
T *fromInt(int64_t v) {
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
    return buffer.view(shape).movedim(0, -2).reshape(out).narrow(-1, 0, vocab);
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
      mine.narrow(-1, 0, end - begin)
          .copy_(grad.narrow(-1, begin, end - begin));
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
    throw std::runtime_error("forward of '" + module +
                             "': sequence parallel "
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
/// followed by each member's weight and bias. Layers with remat "full" are the
/// program's recompute steps (Interpreter.cpp).
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

/// A kept op of remat "op" in backward's rerun: its output is the one the
/// forward kept; its inputs (the rerun's tensors, its weight and bias) are
/// saved for its backward, which is the op's own: a linear's two matmuls, or
/// for any other op (attention, a linear that communicates) its forward
/// replayed under autograd, as flash attention's backward recomputes its
/// probabilities.
struct KeptOutput : torch::autograd::Function<KeptOutput> {
  static variable_list forward(AutogradContext *ctx, at::TensorList inputs,
                               at::Tensor kept, int64_t executor,
                               int64_t compiledOp) {
    ctx->saved_data["executor"] = executor;
    ctx->saved_data["op"] = compiledOp;
    ctx->save_for_backward(inputs.vec());
    return {kept};
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto *exec = fromInt<Executor>(ctx->saved_data["executor"].toInt());
    const auto &op = *fromInt<const CompiledOp>(ctx->saved_data["op"].toInt());
    variable_list saved = ctx->get_saved_variables();
    variable_list result(saved.size());
    size_t operands = op.operands.size();
    at::Tensor weight = op.weight >= 0 ? saved[operands] : at::Tensor();
    at::Tensor bias =
        op.bias >= 0 ? saved[operands + (op.weight >= 0)] : at::Tensor();
    bool plainLinear =
        op.kind == OpKind::Linear && operands == 1 && weight.defined() &&
        !op.tpCopyInput && !op.seqGatherInput && !op.seqScatterOutput &&
        !op.tpReduceOutput &&
        std::none_of(op.gatherOperand.begin(), op.gatherOperand.end(),
                     [](bool gather) { return gather; });
    if (grads[0].defined() && plainLinear) {
      const at::Tensor &g = grads[0];
      at::Tensor rows = g.reshape({-1, weight.size(0)});
      if (saved[0].requires_grad())
        result[0] = g.matmul(weight);
      if (weight.requires_grad())
        result[1] = rows.t()
                        .mm(saved[0].reshape({-1, weight.size(1)}))
                        .to(weight.scalar_type());
      if (bias.defined() && bias.requires_grad())
        result[2] = rows.sum(0).to(bias.scalar_type());
    } else if (grads[0].defined()) {
      variable_list leaves;
      for (const at::Tensor &t : saved)
        leaves.push_back(t.is_floating_point()
                             ? t.detach().requires_grad_(t.requires_grad())
                             : t);
      at::Tensor out;
      {
        at::AutoGradMode enable(true);
        std::vector<at::Tensor> in(leaves.begin(), leaves.begin() + operands);
        in = exec->gatherVocabOperands(op, std::move(in));
        out = exec->apply(
            op, in, op.weight >= 0 ? leaves[operands] : at::Tensor(),
            op.bias >= 0 ? leaves[operands + (op.weight >= 0)] : at::Tensor());
      }
      variable_list wrt;
      std::vector<size_t> wrtIndex;
      for (size_t i = 0; i < leaves.size(); ++i)
        if (leaves[i].requires_grad()) {
          wrt.push_back(leaves[i]);
          wrtIndex.push_back(i);
        }
      if (out.requires_grad() && !wrt.empty()) {
        variable_list computed = torch::autograd::grad(
            {out}, wrt, {grads[0]}, /*retain_graph=*/false,
            /*create_graph=*/false, /*allow_unused=*/true);
        for (size_t i = 0; i < wrtIndex.size(); ++i)
          result[wrtIndex[i]] = computed[i];
      }
    }
    // The kept tensor and the two handles take no gradient.
    result.resize(saved.size() + 3);
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
// Running forwards
//===----------------------------------------------------------------------===//

void Executor::sendValue(const at::Tensor &value, int peer, int tag) {
  at::Tensor data = value.detach().contiguous();
  if (data.dim() > 7)
    throw std::runtime_error("PP: cannot send a " + std::to_string(data.dim()) +
                             "-d value");
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
std::vector<at::Tensor>
Executor::callModule(const std::string &callee,
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
      std::cerr << "  " << module << " " << op.name << " " << op.callee << ": +"
                << memoryProbe() - before << " bytes\n";
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

at::Tensor Executor::replayKept(const CompiledOp &op,
                                const std::vector<at::Tensor> &operands) {
  KeptOutputs &kept = *keptOutputs;
  if (kept.next >= kept.tensors.size())
    throw std::runtime_error(
        "remat op: backward's rerun of '" + op.module + "' reaches '" +
        op.name + "' after taking back all " +
        std::to_string(kept.tensors.size()) + " outputs its forward kept");
  at::Tensor output = kept.tensors[kept.next++];
  std::vector<at::Tensor> inputs = operands;
  if (op.weight >= 0)
    inputs.push_back(param(op.weight, op));
  if (op.bias >= 0)
    inputs.push_back(param(op.bias, op));
  return KeptOutput::apply(at::TensorList(inputs), output, intPtr(this),
                           intPtr(const_cast<CompiledOp *>(&op)))[0];
}

std::vector<at::Tensor> Executor::runOp(const CompiledOp &op,
                                        std::vector<at::Tensor> operands) {
  if (op.rematSave && keptOutputs && keptOutputs->replay)
    return {replayKept(op, operands)};
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
  if (op.rematSave && keptOutputs)
    keptOutputs->tensors.push_back(outputs[0]);
  return outputs;
}

at::Tensor Executor::ropeTables(int64_t seq, const CompiledOp &op, bool sine) {
  std::ostringstream key;
  key << seq << "/" << op.headDim << "/" << op.theta << "/" << op.ropeType
      << "/" << op.ropeFactor << "/" << op.rotatedPairs << "/" << sine;
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
    at::Tensor scaled =
        at::where(wavelen > lowWavelen, invFreq / op.ropeFactor, invFreq);
    at::Tensor smooth = (op.originalMaxPositions / wavelen - op.lowFreqFactor) /
                        (op.highFreqFactor - op.lowFreqFactor);
    at::Tensor smoothed =
        (1 - smooth) * scaled / op.ropeFactor + smooth * scaled;
    at::Tensor medium = (wavelen >= highWavelen) & (wavelen <= lowWavelen);
    invFreq = at::where(medium, smoothed, scaled);
  }
  // Proportional RoPE: the frequencies past the rotated pairs are zero
  // (cos 1, sin 0), so those channels pass through.
  if (op.rotatedPairs > 0 && op.rotatedPairs < half)
    invFreq.slice(0, op.rotatedPairs).zero_();
  at::Tensor positions = at::arange(seq, at::kDouble);
  at::Tensor freqs = at::outer(positions, invFreq).to(at::kFloat);
  at::Tensor emb = at::cat({freqs, freqs}, -1).view({1, seq, 1, op.headDim});
  at::Tensor table = sine ? emb.sin() : emb.cos();
  ropeCache[key.str()] = table;
  return table;
}

namespace {

/// The rows of a vocab-parallel embedding shard: this rank looks up the ids
/// that fall in its rows (from `rank` x rows) and zeros the others.
at::Tensor vocabShardEmbedding(const at::Tensor &weight, const at::Tensor &ids,
                               int64_t rank) {
  int64_t rows = weight.size(0);
  at::Tensor local = ids - rank * rows;
  at::Tensor mine = (local >= 0) & (local < rows);
  return at::embedding(weight, local.masked_fill(~mine, 0)) *
         mine.unsqueeze(-1).to(weight.scalar_type());
}

/// `x` in fp32 with its last dimension split into groups of `group` (the
/// whole vector, or one head), the shape a per-group norm reduces over.
at::Tensor fp32Groups(const CompiledOp &op, const at::Tensor &x,
                      int64_t group) {
  std::vector<int64_t> grouped = x.sizes().vec();
  int64_t last = grouped.back();
  if (last % group != 0)
    throw std::runtime_error("forward of '" + op.module + "': " + op.name +
                             " of a last dimension of " + std::to_string(last) +
                             " in groups of " + std::to_string(group));
  grouped.back() = last / group;
  grouped.push_back(group);
  return x.to(at::kFloat).reshape(grouped);
}

/// Normalises each group of the weight's size along the last dimension
/// (the whole vector, or one head for q/k norms), in fp32.
at::Tensor rmsNorm(const CompiledOp &op, const at::Tensor &x,
                   const at::Tensor &weight) {
  at::Tensor xf = fp32Groups(op, x, weight.numel());
  at::Tensor normed =
      xf * at::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true) + op.eps);
  at::Tensor scale =
      op.unitOffset ? weight.to(at::kFloat) + 1.0 : weight.to(at::kFloat);
  return (normed * scale).reshape(x.sizes()).to(x.scalar_type());
}

/// Gemma4RMSNorm(with_scale=False): each group of `groupSize` along the last
/// dimension normalised in fp32, as x * pow(mean(x^2) + eps, -0.5).
at::Tensor rmsNormalize(const CompiledOp &op, const at::Tensor &x) {
  at::Tensor xf = fp32Groups(op, x, op.groupSize);
  at::Tensor normed =
      xf * at::pow(xf.pow(2).mean({-1}, /*keepdim=*/true) + op.eps, -0.5);
  return normed.reshape(x.sizes()).to(x.scalar_type());
}

/// Rotary embedding of every head of `x` with the tables of its sequence.
at::Tensor rotate(const CompiledOp &op, const at::Tensor &x,
                  const at::Tensor &cosTable, const at::Tensor &sinTable) {
  int64_t b = x.size(0), s = x.size(1);
  at::Tensor heads = x.view({b, s, -1, op.headDim});
  at::Tensor cos = cosTable.to(x.scalar_type());
  at::Tensor sin = sinTable.to(x.scalar_type());
  int64_t half = op.headDim / 2;
  at::Tensor rotated =
      at::cat({-heads.narrow(-1, half, half), heads.narrow(-1, 0, half)}, -1);
  return (heads * cos + rotated * sin).view(x.sizes());
}

/// Eager attention (grouped-query, causal or sliding-window, soft-capped)
/// on the heads q, k and v hold: under TP, this rank's.
at::Tensor attention(const CompiledOp &op, const at::Tensor &q,
                     const at::Tensor &k, const at::Tensor &v) {
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
        std::to_string(q.size(-1)) + ", " + std::to_string(k.size(-1)) + ", " +
        std::to_string(v.size(-1)));
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
    scores =
        scores.masked_fill(masked, -std::numeric_limits<float>::infinity());
  }
  at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs, vh).transpose(1, 2).reshape({b, s, heads * d});
}

} // namespace

at::Tensor Executor::apply(const CompiledOp &op,
                           const std::vector<at::Tensor> &in,
                           const at::Tensor &weightArg,
                           const at::Tensor &biasArg) {
  // A replicated weight (bias) on TP-local features or sequence shards: its
  // gradient is all-reduced.
  at::Tensor weight = op.tpWeightGrad && weightArg.defined()
                          ? TpCopy::apply(weightArg, intPtr(this))
                          : weightArg;
  at::Tensor bias = op.tpBiasGrad && biasArg.defined()
                        ? TpCopy::apply(biasArg, intPtr(this))
                        : biasArg;
  switch (op.kind) {
  case OpKind::Embedding: {
    // Vocab-parallel, the ranks' rows are added by the all-reduce (or the
    // reduce-scatter over the sequence).
    at::Tensor out;
    if (op.tpReduceOutput)
      out = TpReduce::apply(vocabShardEmbedding(weight, in[0], tpComm->rank()),
                            intPtr(this));
    else if (op.seqScatterOutput)
      out = TpScatterSequence::apply(
          vocabShardEmbedding(weight, in[0], tpComm->rank()), intPtr(this),
          op.module);
    else
      out = at::embedding(weight, in[0]);
    return op.hasScale ? out * op.scale : out;
  }
  case OpKind::Linear: {
    at::Tensor x = in[0];
    // One copy or gather of an input that several linears share (q, k, v).
    auto shared = [&](std::pair<at::Tensor, at::Tensor> &last, auto apply) {
      if (!last.first.defined() ||
          last.first.unsafeGetTensorImpl() != x.unsafeGetTensorImpl())
        last = {x, apply(x)};
      return last.second;
    };
    if (op.tpCopyInput)
      x = shared(tpCopy, [&](const at::Tensor &t) {
        return TpCopy::apply(t, intPtr(this));
      });
    else if (op.seqGatherInput)
      x = shared(sequenceGather, [&](const at::Tensor &t) {
        return TpGatherSequence::apply(t, intPtr(this));
      });
    if (op.seqScatterOutput || op.tpReduceOutput) {
      // Row-parallel: partial sums over this rank's input features; the
      // bias is added once, after the all-reduce (or to each sequence shard
      // after the reduce-scatter).
      at::Tensor out =
          op.seqScatterOutput
              ? TpScatterSequence::apply(at::linear(x, weight), intPtr(this),
                                         op.module)
              : TpReduce::apply(at::linear(x, weight), intPtr(this));
      return bias.defined() ? out + bias : out;
    }
    return at::linear(x, weight,
                      bias.defined() ? c10::optional<at::Tensor>(bias)
                                     : c10::nullopt);
  }
  case OpKind::Matmul:
    return at::matmul(in[0], weight);
  case OpKind::RmsNorm:
    return rmsNorm(op, in[0], weight);
  case OpKind::RmsNormalize:
    return rmsNormalize(op, in[0]);
  case OpKind::LayerNorm:
    return at::layer_norm(in[0], {weight.numel()}, weight,
                          bias.defined() ? c10::optional<at::Tensor>(bias)
                                         : c10::nullopt,
                          op.eps);
  case OpKind::Rope: {
    int64_t seq = in[0].size(1);
    at::Tensor cos = ropeTables(seq, op, false);
    at::Tensor sin = ropeTables(seq, op, true);
    return rotate(op, in[0], cos, sin);
  }
  case OpKind::Attention:
    return attention(op, in[0], in[1], in[2]);
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
