//===- Interpreter.cpp - running a rank's program step by step ------------===//
//
// One optimizer step of this rank is its program in plan.bin
// (docs/schedule.md), executed in order and nothing else: the runtime has no
// schedule of its own. The model's forward is cut into segments at the
// layer calls: the root's head (the ops before the first layer), each layer
// (its call and any root ops after it), the root's tail (the ops after the
// last layer, the loss among them). Each segment runs with its inputs as
// autograd leaves, so a program's per-layer forward, recompute and backward
// steps can come in any order the lowering chose (gradient accumulation,
// GPipe, 1F1B, interleaved 1F1B): a backward step runs autograd from the
// segment's outputs with the gradients its consumers left, and leaves the
// gradients of its inputs for the segments that produced them.
//
// FSDP is the program's collectives: an all-gather step starts gathering a
// unit into one flat buffer and returns, the program's wait blocks until it
// has landed (the compute steps between overlap it) and copies it out into
// fresh storages, a forward binds its parameters as leaves over them, a free
// releases them, and a backward whose forward's gather was freed moves the
// data of the latest gather under the storages autograd saved. A
// reduce-scatter step starts reducing the leaves' gradients of that
// micro-batch (NCCL returns at once, Gloo completes it there); its wait adds
// this rank's slice into the fp32 shards. Collectives on activations (TP,
// sequence parallel) run inside the compute step that needs them.
//
//===----------------------------------------------------------------------===//

#include "ExecutorInternals.h"

#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;

bool Executor::Interpreter::build(std::string &error) {
  const Pipeline &pipe = *exec.pipeline;
  numValues = pipe.numValues;
  rootUnit = exec.unitByPath.count("") ? exec.unitByPath.at("") : -1;
  int pp = exec.layout.pp;
  const std::map<std::string, int> &layerStage = pipe.layerStage;
  // The last layer call: the ops after it are the tail.
  size_t lastLayer = pipe.steps.size();
  for (size_t i = 0; i < pipe.steps.size(); ++i) {
    const CompiledOp &op = *pipe.steps[i].op;
    if (op.kind == OpKind::Call && layerStage.count(op.callee))
      lastLayer = i;
  }
  if (lastLayer == pipe.steps.size()) {
    error = "the model's forward calls no layer";
    return false;
  }
  auto add = [&](const std::string &path, const std::string &part) {
    Segment seg;
    seg.path = path;
    seg.part = part;
    segmentByName[{path, part}] = segments.size();
    segments.push_back(std::move(seg));
    return &segments.back();
  };
  add("", "head");
  for (size_t i = 0; i < pipe.steps.size(); ++i) {
    const Pipeline::Step &step = pipe.steps[i];
    const CompiledOp &op = *step.op;
    if (op.kind == OpKind::Call && layerStage.count(op.callee)) {
      Segment *seg = add(op.callee, "");
      auto unit = exec.unitByPath.find(op.callee);
      seg->unit = unit == exec.unitByPath.end() ? -1 : unit->second;
      auto remat = exec.rematByPath.find(op.callee);
      seg->keepsSaveList =
          remat != exec.rematByPath.end() && remat->second == "op";
      seg->fullRemat = seg->keepsSaveList || (remat != exec.rematByPath.end() &&
                                              remat->second == "full");
      for (int slot : exec.moduleSlots(op.callee))
        seg->usesRoot |= exec.paramSlots[slot].unit == rootUnit;
    } else if (i == lastLayer + 1) {
      add("", "tail");
    }
    Segment &seg = segments.back();
    seg.stage = step.stage;
    seg.ops.push_back(&step);
    for (int slot : {op.weight, op.bias})
      if (slot >= 0)
        seg.usesRoot |= exec.paramSlots[slot].unit == rootUnit;
  }
  if (!segmentByName.count({"", "tail"}))
    add("", "tail")->stage = pipe.virtualStages - 1;
  // Inputs and outputs of each segment.
  std::vector<int> definedIn(numValues, -1);
  for (size_t s = 0; s < segments.size(); ++s)
    for (const Pipeline::Step *step : segments[s].ops)
      for (int v : step->results)
        definedIn[v] = s;
  std::vector<bool> read(numValues, false);
  readsPerMicro.assign(numValues, 0);
  for (size_t s = 0; s < segments.size(); ++s) {
    std::set<int> inputs;
    for (const Pipeline::Step *step : segments[s].ops)
      for (int v : step->operands)
        if (definedIn[v] != int(s))
          inputs.insert(v);
    segments[s].inputs.assign(inputs.begin(), inputs.end());
    bool local = segments[s].stage % pp == exec.layout.ppIndex;
    for (int v : inputs) {
      read[v] = true;
      readsPerMicro[v] += local;
    }
  }
  for (int v = 2; v < numValues; ++v) {
    if (definedIn[v] < 0)
      continue;
    if (read[v] || v == pipe.lossValue)
      segments[definedIn[v]].outputs.push_back(v);
  }
  // Sends of this stage read the values that cross their boundary.
  for (size_t b = 0; b < pipe.crossing.size(); ++b)
    if (int(b) % pp == exec.layout.ppIndex)
      for (int v : pipe.crossing[b])
        ++readsPerMicro[v];
  return true;
}

void Executor::Interpreter::Gather::wait(Executor &exec) {
  if (landed)
    return;
  fulls = exec.landGather(exec.fsdpUnits[unit], flight, storages);
  landed = true;
}

void Executor::Interpreter::Gather::release(Executor &exec) {
  if (!live)
    return;
  // The backend writes into the flat buffer until the gather completes.
  wait(exec);
  for (c10::Storage &storage : storages)
    if (storage)
      storage.unsafeGetStorageImpl()->reset();
  live = false;
  fulls.clear();
}

std::vector<at::Tensor> &Executor::Interpreter::valuesOf(int64_t micro) {
  std::vector<at::Tensor> &v = values[micro];
  if (v.empty()) {
    v.resize(numValues);
    reads[micro] = readsPerMicro;
  }
  return v;
}

std::vector<at::Tensor> &Executor::Interpreter::gradsOf(int64_t micro) {
  std::vector<at::Tensor> &g = grads[micro];
  if (g.empty())
    g.resize(numValues);
  return g;
}

void Executor::Interpreter::accumulate(at::Tensor &into,
                                       const at::Tensor &grad) {
  if (!grad.defined())
    return;
  into = into.defined() ? into + grad : grad;
}

/// A read of `value` in micro-batch `micro` is done; after the last, this
/// stage holds it no longer (autograd keeps what a backward needs).
void Executor::Interpreter::consumed(int64_t micro, int value) {
  if (value < 2)
    return;
  int &left = reads[micro][value];
  if (--left <= 0)
    values[micro][value] = at::Tensor();
}

int Executor::Interpreter::segmentFor(size_t index, const plan::Step &step) {
  auto it = segmentByName.find({str(step.path()), str(step.part())});
  if (it == segmentByName.end())
    fail(index, "names '" + std::string(str(step.path())) + "' " +
                    str(step.part()) +
                    ", which is no layer or root part of the model's forward");
  return it->second;
}

std::vector<int> Executor::Interpreter::unitsOf(const Segment &seg) const {
  std::vector<int> units;
  if (seg.unit >= 0)
    units.push_back(seg.unit);
  if (seg.usesRoot && rootUnit >= 0 && rootUnit != seg.unit)
    units.push_back(rootUnit);
  return units;
}

/// Points the parameters of the segment's units at micro-batch `micro`'s
/// leaves, made from the unit's latest gather (or the fp32 master itself at
/// FSDP size 1) when the micro-batch has none yet or `fresh` asks for new
/// ones (a recompute).
void Executor::Interpreter::bind(size_t index, const Segment &seg,
                                 int64_t micro, bool fresh) {
  bool sharded = exec.fsdpComm->size() > 1;
  for (int u : unitsOf(seg)) {
    FsdpUnit &unit = exec.fsdpUnits[u];
    if (unit.slots.empty())
      continue;
    Binding &binding = bindings[{u, micro}];
    if (fresh || binding.leaves.empty()) {
      binding.leaves.clear();
      binding.gather = -1;
      if (sharded) {
        auto latest = latestGather.find(u);
        if (latest == latestGather.end() || !gathers[latest->second].live)
          fail(index, "computes with FSDP unit '" + unit.name +
                          "' while it is not gathered");
        binding.gather = latest->second;
        const Gather &g = gathers[latest->second];
        if (!g.landed)
          fail(index, "computes with FSDP unit '" + unit.name +
                          "' before waiting for its all-gather");
        for (size_t i = 0; i < unit.slots.size(); ++i)
          binding.leaves.push_back(g.fulls[i].detach().requires_grad_(
              !exec.paramSlots[unit.slots[i]].frozen));
      } else {
        for (int s : unit.slots) {
          ParamSlot &slot = exec.paramSlots[s];
          // One shard: the fp32 master is the compute tensor.
          binding.leaves.push_back(unit.compute == at::kFloat
                                       ? slot.master
                                       : slot.master.detach()
                                             .to(unit.compute)
                                             .requires_grad_(!slot.frozen));
        }
      }
    }
    for (size_t i = 0; i < unit.slots.size(); ++i)
      exec.paramSlots[unit.slots[i]].full = binding.leaves[i];
  }
}

void Executor::Interpreter::unbind(const Segment &seg) {
  for (int u : unitsOf(seg))
    for (int s : exec.fsdpUnits[u].slots)
      exec.paramSlots[s].full = at::Tensor();
}

/// Runs the segment's ops on `inputs` (one per Segment::inputs) and returns
/// its outputs (one per Segment::outputs).
std::vector<at::Tensor>
Executor::Interpreter::compute(const Segment &seg,
                               const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> local(numValues);
  for (size_t i = 0; i < seg.inputs.size(); ++i)
    local[seg.inputs[i]] = inputs[i];
  exec.sequenceGather = {};
  exec.tpCopy = {};
  for (const Pipeline::Step *step : seg.ops) {
    std::vector<at::Tensor> operands;
    for (int v : step->operands)
      operands.push_back(local[v]);
    const CompiledOp &op = *step->op;
    std::vector<at::Tensor> outputs =
        op.kind == OpKind::Call && op.callee == seg.path
            ? exec.run(op.callee, operands)
            : exec.runOp(op, std::move(operands));
    if (outputs.size() != step->results.size())
      throw std::runtime_error("forward of '" + op.module + "': '" + op.name +
                               "' produced " + std::to_string(outputs.size()) +
                               " values, the plan expects " +
                               std::to_string(step->results.size()));
    for (size_t i = 0; i < outputs.size(); ++i)
      local[step->results[i]] = std::move(outputs[i]);
  }
  std::vector<at::Tensor> outputs;
  for (int v : seg.outputs)
    outputs.push_back(local[v]);
  return outputs;
}

void Executor::Interpreter::forward(size_t index, int s, int64_t micro) {
  const Segment &seg = segments[s];
  std::vector<at::Tensor> &vals = valuesOf(micro);
  std::vector<at::Tensor> inputs;
  bool anyGrad = false;
  for (int v : seg.inputs) {
    at::Tensor t;
    if (v < 2) {
      auto it = data.find(micro);
      if (it == data.end())
        it = data.emplace(micro, hooks->batch(micro)).first;
      t = v == 0 ? it->second.first : it->second.second;
    } else {
      t = vals[v];
    }
    if (!t.defined())
      fail(index, "the forward of " +
                      (seg.path.empty() ? "the root's " + seg.part
                                        : "'" + seg.path + "'") +
                      " (micro-batch " + std::to_string(micro) +
                      ") reads a value no earlier step of this rank produced");
    at::Tensor leaf = t.is_floating_point()
                          ? t.detach().requires_grad_(t.requires_grad())
                          : t;
    anyGrad |= leaf.requires_grad();
    inputs.push_back(leaf);
    consumed(micro, v);
  }
  bind(index, seg, micro, false);
  Flight &flight = flights[{s, micro}];
  flight.inputs = inputs;
  std::vector<at::Tensor> outputs;
  if (seg.fullRemat) {
    // Keeps only its inputs; the recompute step rebuilds the rest.
    for (int u : unitsOf(seg))
      for (int slot : exec.fsdpUnits[u].slots)
        anyGrad |= !exec.paramSlots[slot].frozen;
    {
      at::NoGradGuard noGrad;
      flight.kept = {};
      exec.keptOutputs = seg.keepsSaveList ? &flight.kept : nullptr;
      outputs = compute(seg, inputs);
      exec.keptOutputs = nullptr;
    }
    for (at::Tensor &out : outputs)
      if (anyGrad && out.is_floating_point())
        out.requires_grad_(true);
  } else {
    outputs = compute(seg, inputs);
    flight.outputs = outputs;
  }
  unbind(seg);
  for (size_t i = 0; i < seg.outputs.size(); ++i)
    vals[seg.outputs[i]] = outputs[i];
  if (seg.part == "tail") {
    int lossValue = exec.pipeline->lossValue;
    auto at = std::find(seg.outputs.begin(), seg.outputs.end(), lossValue);
    at::Tensor loss;
    if (at != seg.outputs.end())
      loss = outputs[at - seg.outputs.begin()];
    if (!loss.defined() || loss.dim() != 0)
      throw std::runtime_error("the model's forward must return one scalar "
                               "loss");
    lossSum += loss.item<double>();
    flight.outputs = {loss};
    vals[lossValue] = at::Tensor();
  }
}

void Executor::Interpreter::recompute(size_t index, int s, int64_t micro) {
  const Segment &seg = segments[s];
  if (!seg.fullRemat)
    return; // Selective: the marked ops re-run inside the backward.
  Flight &flight = flights[{s, micro}];
  bind(index, seg, micro, true);
  flight.kept.next = 0;
  flight.kept.replay = true;
  exec.keptOutputs = seg.keepsSaveList ? &flight.kept : nullptr;
  flight.outputs = compute(seg, flight.inputs);
  exec.keptOutputs = nullptr;
  unbind(seg);
  if (flight.kept.next != flight.kept.tensors.size())
    fail(index, "reruns '" + seg.path + "' (micro-batch " +
                    std::to_string(micro) + ") taking back " +
                    std::to_string(flight.kept.next) + " of the " +
                    std::to_string(flight.kept.tensors.size()) +
                    " outputs its forward kept");
}

/// Before a backward: when the gather the micro-batch's forward used was
/// freed, the unit's latest gather moves its data under those storages, the
/// ones autograd saved.
void Executor::Interpreter::refill(size_t index, int unit, int64_t micro) {
  auto it = bindings.find({unit, micro});
  if (it == bindings.end() || it->second.gather < 0)
    return;
  Gather &forwardGather = gathers[it->second.gather];
  if (forwardGather.live)
    return;
  auto latest = latestGather.find(unit);
  if (latest == latestGather.end() || !gathers[latest->second].live)
    fail(index, "runs a backward of FSDP unit '" + exec.fsdpUnits[unit].name +
                    "' while it is not gathered");
  Gather &now = gathers[latest->second];
  if (!now.landed)
    fail(index, "runs a backward of FSDP unit '" + exec.fsdpUnits[unit].name +
                    "' before waiting for its all-gather");
  for (size_t i = 0; i < now.storages.size(); ++i) {
    c10::Storage &target = forwardGather.storages[i];
    if (!target)
      continue;
    c10::StorageImpl *source = now.storages[i].unsafeGetStorageImpl();
    size_t bytes = source->nbytes();
    at::DataPtr ptr = source->set_data_ptr(at::DataPtr());
    source->set_nbytes(0);
    target.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(ptr));
    target.unsafeGetStorageImpl()->set_nbytes(bytes);
  }
  // The latest gather's free now releases the refilled storages.
  now.storages = forwardGather.storages;
  it->second.gather = latest->second;
}

void Executor::Interpreter::backward(size_t index, int s, int64_t micro) {
  const Segment &seg = segments[s];
  auto it = flights.find({s, micro});
  if (it == flights.end())
    fail(index, "a backward without its forward");
  Flight &flight = it->second;
  for (int u : unitsOf(seg))
    refill(index, u, micro);
  std::vector<at::Tensor> &g = gradsOf(micro);
  if (seg.part == "tail") {
    if (!flight.outputs.empty() && flight.outputs[0].requires_grad())
      (flight.outputs[0] / double(microBatches)).backward();
  } else {
    std::vector<at::Tensor> outs, outGrads;
    for (size_t i = 0; i < seg.outputs.size() && i < flight.outputs.size();
         ++i) {
      at::Tensor &grad = g[seg.outputs[i]];
      if (flight.outputs[i].requires_grad() && grad.defined()) {
        outs.push_back(flight.outputs[i]);
        outGrads.push_back(grad);
      }
      grad = at::Tensor();
    }
    if (!outs.empty())
      torch::autograd::backward(outs, outGrads);
  }
  flight.outputs.clear();
  flight.kept = {};
  for (size_t i = 0; i < seg.inputs.size(); ++i) {
    at::Tensor &leaf = flight.inputs[i];
    if (seg.inputs[i] >= 2 && leaf.requires_grad())
      accumulate(g[seg.inputs[i]], leaf.grad());
  }
  // The root's parts save nothing the program frees: done with now.
  if (seg.path.empty())
    flights.erase(it);
  // One shard in another dtype than the master: the gradients go to the
  // master now (there is no reduce-scatter step).
  if (exec.fsdpComm->size() == 1)
    for (int u : unitsOf(seg)) {
      Binding &binding = bindings[{u, micro}];
      const FsdpUnit &unit = exec.fsdpUnits[u];
      for (size_t i = 0; i < binding.leaves.size(); ++i) {
        ParamSlot &slot = exec.paramSlots[unit.slots[i]];
        at::Tensor &leaf = binding.leaves[i];
        if (leaf.is_same(slot.master) || !leaf.grad().defined())
          continue;
        at::Tensor grad = leaf.grad().to(at::kFloat);
        if (slot.master.grad().defined())
          slot.master.mutable_grad().add_(grad);
        else
          slot.master.mutable_grad() = grad;
        leaf.mutable_grad() = at::Tensor();
      }
    }
  else
    for (int u : unitsOf(seg))
      if (foldingUnits.count(u))
        fold(u, bindings[{u, micro}]);
}

/// Adds the binding's gradients into unit `u`'s folded ones (the first
/// become them, converted to the reduce dtype) and drops them.
void Executor::Interpreter::fold(int u, Binding &binding) {
  const FsdpUnit &unit = exec.fsdpUnits[u];
  std::vector<at::Tensor> &into = folded[u];
  into.resize(binding.leaves.size());
  for (size_t i = 0; i < binding.leaves.size(); ++i) {
    at::Tensor &leaf = binding.leaves[i];
    if (!leaf.grad().defined())
      continue;
    at::Tensor grad = leaf.grad().to(unit.reduce);
    leaf.mutable_grad() = at::Tensor();
    if (into[i].defined())
      into[i].add_(grad);
    else
      into[i] = grad;
  }
}

/// Starts reducing the gradients of unit `u`'s micro-batch `micro` (-1:
/// every micro-batch) into tensor `tensor`; they land at its wait.
void Executor::Interpreter::reduceScatter(int u, int64_t micro, int tensor) {
  FsdpUnit &unit = exec.fsdpUnits[u];
  std::vector<at::Tensor> sum(unit.slots.size());
  if (auto it = folded.find(u); it != folded.end()) {
    for (size_t i = 0; i < it->second.size() && i < sum.size(); ++i)
      accumulate(sum[i], it->second[i]);
    folded.erase(it);
  }
  for (auto it = bindings.begin(); it != bindings.end();) {
    if (it->first.first != u || (micro >= 0 && it->first.second != micro)) {
      ++it;
      continue;
    }
    for (size_t i = 0; i < it->second.leaves.size(); ++i)
      accumulate(sum[i], it->second.leaves[i].grad());
    it = bindings.erase(it);
  }
  Scatter &scatter = scatters[tensor];
  scatter.unit = u;
  scatter.collectives = exec.startReduceGrads(unit, sum);
}

/// The reduce-scatter at `tensor` has landed: its shards join this rank's
/// gradients.
void Executor::Interpreter::landScatter(int tensor) {
  auto it = scatters.find(tensor);
  if (it == scatters.end())
    return;
  FsdpUnit &unit = exec.fsdpUnits[it->second.unit];
  std::vector<at::Tensor> shards =
      exec.finishReduceGrads(unit, it->second.collectives);
  scatters.erase(it);
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!shards[i].defined())
      continue;
    ParamSlot &slot = exec.paramSlots[unit.slots[i]];
    if (slot.master.grad().defined())
      slot.master.mutable_grad().add_(shards[i]);
    else
      slot.master.mutable_grad() = shards[i];
  }
}

/// The virtual boundary a pipeline buffer crosses: a layer's activation is
/// received over the boundary before the layer's virtual stage and sent
/// over the one after it; its gradient goes the other way.
int Executor::Interpreter::boundaryOf(const Buffer &buffer, bool sending,
                                      bool gradients) const {
  const std::map<std::string, int> &layerStage = exec.pipeline->layerStage;
  auto it = layerStage.find(buffer.path);
  if (it == layerStage.end())
    throw std::runtime_error("pipeline buffer of '" + buffer.path +
                             "', which is no layer");
  bool after = sending != gradients;
  return after ? it->second : it->second - 1;
}

void Executor::Interpreter::sendActivations(size_t index, const Buffer &buffer,
                                            int peer, bool gradients) {
  int b = boundaryOf(buffer, true, gradients);
  const std::vector<int> &crossing = exec.pipeline->crossing.at(b);
  int64_t micro = buffer.micro;
  if (!gradients) {
    std::vector<Message> &sent = sentAt[{b, micro}];
    for (size_t i = 0; i < crossing.size(); ++i) {
      int v = crossing[i];
      at::Tensor &value = valuesOf(micro)[v];
      if (!value.defined())
        fail(index, "sends a value of micro-batch " + std::to_string(micro) +
                        " that this rank has not computed");
      sent.push_back(
          {value.sizes().vec(), value.options(), value.requires_grad()});
      exec.sendValue(value, peer, pipelineTag(b, micro, false, i));
      consumed(micro, v);
    }
    return;
  }
  // The gradients of what this stage received, for the values that need one.
  auto received = receivedAt.find({b, micro});
  if (received == receivedAt.end())
    fail(index, "sends gradients of micro-batch " + std::to_string(micro) +
                    " it never received activations for");
  for (size_t i = 0; i < crossing.size(); ++i) {
    const Message &m = received->second[i];
    if (!m.needsGrad)
      continue;
    at::Tensor &grad = gradsOf(micro)[crossing[i]];
    at::Tensor out =
        grad.defined() ? grad.contiguous() : at::zeros(m.shape, m.options);
    exec.ppComm->send(out, peer, pipelineTag(b, micro, true, i));
    grad = at::Tensor();
  }
  receivedAt.erase(received);
}

void Executor::Interpreter::recvActivations(size_t index, const Buffer &buffer,
                                            int peer, bool gradients) {
  int b = boundaryOf(buffer, false, gradients);
  const std::vector<int> &crossing = exec.pipeline->crossing.at(b);
  int64_t micro = buffer.micro;
  if (!gradients) {
    std::vector<Message> &received = receivedAt[{b, micro}];
    for (size_t i = 0; i < crossing.size(); ++i) {
      at::Tensor value = exec.recvValue(peer, pipelineTag(b, micro, false, i));
      received.push_back(
          {value.sizes().vec(), value.options(), value.requires_grad()});
      valuesOf(micro)[crossing[i]] = value;
    }
    return;
  }
  auto sent = sentAt.find({b, micro});
  if (sent == sentAt.end())
    fail(index, "receives gradients of micro-batch " + std::to_string(micro) +
                    " it never sent activations for");
  for (size_t i = 0; i < crossing.size(); ++i) {
    const Message &m = sent->second[i];
    if (!m.needsGrad)
      continue;
    at::Tensor grad = at::empty(m.shape, m.options.requires_grad(false));
    exec.ppComm->recv(grad, peer, pipelineTag(b, micro, true, i));
    accumulate(gradsOf(micro)[crossing[i]], grad);
  }
  sentAt.erase(sent);
}

void Executor::Interpreter::decode(const plan::Program &program) {
  const auto *steps = program.steps();
  size_t count = steps ? steps->size() : 0;
  stepSegment.assign(count, -1);
  tensorStep.clear();
  buffers.clear();
  foldingUnits.clear();
  for (unsigned i = 0; i < count; ++i) {
    const plan::Step &step = *steps->Get(i);
    switch (step.kind()) {
    case plan::StepKind::Forward:
    case plan::StepKind::Backward:
    case plan::StepKind::Recompute:
    case plan::StepKind::Save:
      stepSegment[i] = segmentFor(i, step);
      break;
    default:
      break;
    }
    if (step.result() < 0)
      continue;
    if (int(buffers.size()) <= step.result()) {
      buffers.resize(step.result() + 1);
      tensorStep.resize(step.result() + 1, -1);
    }
    tensorStep[step.result()] = i;
    Buffer &buffer = buffers[step.result()];
    if (step.kind() == plan::StepKind::Buffer) {
      buffer.kind = step.buffer_kind();
      buffer.path = str(step.path());
      buffer.micro = step.micro_batch();
      auto unit = exec.unitByPath.find(buffer.path);
      if (unit != exec.unitByPath.end())
        buffer.unit = unit->second;
    } else if (step.kind() == plan::StepKind::ReduceScatter &&
               step.operand() >= 0) {
      // The dp all-reduce reads the reduce-scatter's result: its unit.
      buffer = buffers[step.operand()];
      if (buffer.kind == plan::BufferKind::Gradient && buffer.unit >= 0 &&
          buffer.micro < 0)
        foldingUnits.insert(buffer.unit);
    }
  }
  decoded = &program;
}

double Executor::Interpreter::run(const plan::Program &program,
                                  const ProgramHooks &stepHooks) {
  if (decoded != &program)
    decode(program);
  hooks = &stepHooks;
  microBatches = program.micro_batches();
  lossSum = 0;
  faulted = false;
  const auto *steps = program.steps();
  for (unsigned i = 0; steps && i < steps->size(); ++i) {
    const plan::Step &step = *steps->Get(i);
    auto start = std::chrono::steady_clock::now();
    int64_t micro = step.micro_batch();
    int operand = step.operand();
    switch (step.kind()) {
    case plan::StepKind::Buffer:
    case plan::StepKind::Save:
    case plan::StepKind::Alloc:
      // Read by decode(); what a save keeps is its flight, what an
      // allocation names is what autograd and the optimizer already hold.
      break;
    case plan::StepKind::AllGather: {
      const Buffer &in = buffers[operand];
      if (in.kind != plan::BufferKind::ParamShard)
        break; // TP / sequence parallel: inside the compute step.
      if (in.unit < 0)
        fail(i, "gathers '" + in.path + "', which is no FSDP unit");
      FsdpUnit &unit = exec.fsdpUnits[in.unit];
      Gather g;
      g.unit = in.unit;
      g.flight = exec.startGather(unit);
      g.live = true;
      gathers[step.result()] = std::move(g);
      latestGather[in.unit] = step.result();
      break;
    }
    case plan::StepKind::Wait: {
      if (scatters.count(operand)) {
        landScatter(operand);
        break;
      }
      auto gather = gathers.find(operand);
      if (gather == gathers.end())
        fail(i, "waits for tensor " + std::to_string(operand) +
                    ", which is no FSDP gather of this step");
      gather->second.wait(exec);
      break;
    }
    case plan::StepKind::Forward:
      forward(i, stepSegment[i], micro);
      if (!faulted && micro == 0 && stepHooks.afterForward) {
        faulted = true;
        stepHooks.afterForward(micro);
      }
      break;
    case plan::StepKind::Recompute:
      recompute(i, stepSegment[i], micro);
      break;
    case plan::StepKind::Backward:
      backward(i, stepSegment[i], micro);
      break;
    case plan::StepKind::Free: {
      int definer = tensorStep[operand];
      const plan::Step &what = *steps->Get(definer);
      if (what.kind() == plan::StepKind::Save) {
        flights.erase({stepSegment[definer], what.micro_batch()});
        break;
      }
      auto gather = gathers.find(operand);
      if (gather != gathers.end())
        gather->second.release(exec);
      break;
    }
    case plan::StepKind::ReduceScatter: {
      const Buffer &in = buffers[operand];
      if (in.kind != plan::BufferKind::Gradient)
        break; // Sequence parallel: inside the compute step.
      if (in.unit < 0)
        fail(i, "reduce-scatters '" + in.path + "', which is no FSDP unit");
      reduceScatter(in.unit, in.micro, step.result());
      break;
    }
    case plan::StepKind::AllReduce: {
      std::string grid = str(step.grid());
      const Buffer &in = buffers[operand];
      if (grid == "pp")
        exec.reduceTiedCopy(in.path);
      else if (grid == "dp") {
        if (in.unit < 0)
          fail(i,
               "all-reduces '" + in.path + "' over dp, which is no FSDP unit");
        exec.reduceReplicas(exec.fsdpUnits[in.unit]);
      }
      // tp: inside the compute step.
      break;
    }
    case plan::StepKind::Send:
    case plan::StepKind::Recv: {
      const Buffer &in = buffers[operand];
      bool gradients = in.kind == plan::BufferKind::ActivationGrad;
      if (step.kind() == plan::StepKind::Send)
        sendActivations(i, in, step.peer(), gradients);
      else
        recvActivations(i, in, step.peer(), gradients);
      break;
    }
    case plan::StepKind::ClipGradNorm:
      exec.ppComm->flushSends();
      if (stepHooks.clip)
        stepHooks.clip(step.max_norm(), lossSum);
      break;
    case plan::StepKind::OptimizerStep:
      exec.ppComm->flushSends();
      if (stepHooks.optimizer)
        stepHooks.optimizer(lossSum);
      break;
    }
    if (stepHooks.executed)
      stepHooks.executed(
          i, std::chrono::duration<double>(start.time_since_epoch()).count(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        start)
              .count());
  }
  exec.ppComm->flushSends();
  while (!scatters.empty())
    landScatter(scatters.begin()->first);
  for (auto &[id, g] : gathers)
    g.release(exec);
  gathers.clear();
  latestGather.clear();
  bindings.clear();
  folded.clear();
  flights.clear();
  sentAt.clear();
  receivedAt.clear();
  values.clear();
  grads.clear();
  reads.clear();
  data.clear();
  return lossSum;
}

bool Executor::buildInterpreter(std::string &error) {
  interpreter = std::make_unique<Interpreter>(*this);
  return interpreter->build(error);
}

double Executor::runProgram(const plan::Program &program,
                            const ProgramHooks &hooks) {
  clearRecomputeRegions();
  return interpreter->run(program, hooks);
}
