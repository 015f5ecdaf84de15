//===- Parameters.cpp - parameter shards and their collectives ------------===//
//
// Each parameter slot holds this rank's fp32 master shard (its FSDP rows of
// its TP part). This file initialises them from the plan's seed (or a
// safetensors file of Hugging Face-named weights), gathers a
// unit for compute, reduce-scatters its gradients, adds gradients over
// data-parallel replicas and tied copies, and sums the squared norms.
//
//===----------------------------------------------------------------------===//

#include "ExecutorInternals.h"
#include "parc/runtime/PlanFile.h"
#include "parc/runtime/Safetensors.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace parc;
using namespace parc::runtime;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

namespace {

/// A safetensors file mapped read-only, and its index: every rank copies
/// only the tensors it holds a part of, and no rank holds a second copy of
/// the whole checkpoint.
struct WeightFile {
  std::string path;
  std::map<std::string, SafetensorsEntry> index;
  const char *bytes = nullptr;
  uint64_t size = 0;

  explicit WeightFile(const std::string &path) : path(path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    struct stat info;
    if (fd < 0 || ::fstat(fd, &info) != 0) {
      if (fd >= 0)
        ::close(fd);
      throw std::runtime_error(path + ": cannot open the weights file");
    }
    size = static_cast<uint64_t>(info.st_size);
    void *mapped =
        size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    ::close(fd);
    if (mapped == MAP_FAILED)
      throw std::runtime_error(
          path + ": cannot map the weights file: " + std::strerror(errno));
    bytes = static_cast<const char *>(mapped);
    try {
      index = readSafetensorsIndex(path, std::string_view(bytes, size));
    } catch (...) {
      unmap();
      throw;
    }
  }
  ~WeightFile() { unmap(); }
  void unmap() {
    if (bytes)
      ::munmap(const_cast<char *>(bytes), size);
    bytes = nullptr;
  }
  WeightFile(const WeightFile &) = delete;
  WeightFile &operator=(const WeightFile &) = delete;

  /// The tensor `name` as fp32 in `shape`.
  at::Tensor read(const std::string &name, const std::vector<int64_t> &shape) {
    auto it = index.find(name);
    if (it == index.end())
      throw std::runtime_error(path + ": no tensor '" + name +
                               "', a parameter of the plan");
    const SafetensorsEntry &entry = it->second;
    if (entry.shape != shape) {
      auto text = [](const std::vector<int64_t> &dims) {
        std::string out = "[";
        for (size_t i = 0; i < dims.size(); ++i)
          out += (i ? ", " : "") + std::to_string(dims[i]);
        return out + "]";
      };
      throw std::runtime_error(path + ": tensor '" + name + "' is " +
                               text(entry.shape) + ", the plan's parameter " +
                               text(shape));
    }
    at::ScalarType type = entry.dtype == "BF16"  ? at::kBFloat16
                          : entry.dtype == "F16" ? at::kHalf
                          : entry.dtype == "F32" ? at::kFloat
                                                 : at::kLong;
    if (type == at::kLong)
      throw std::runtime_error(path + ": tensor '" + name + "' is " +
                               entry.dtype + ", not a float parameter");
    at::Tensor raw = at::empty(shape, at::TensorOptions().dtype(type));
    std::memcpy(raw.data_ptr(), bytes + entry.begin, entry.end - entry.begin);
    return raw.to(at::kFloat);
  }
};

} // namespace

std::vector<std::string> Executor::materialise(uint64_t seed,
                                               const std::string &weightsPath) {
  int shards = layout.fsdp, shard = layout.fsdpIndex;
  int tp = layout.tp;
  std::unique_ptr<WeightFile> weights;
  if (!weightsPath.empty())
    weights = std::make_unique<WeightFile>(weightsPath);
  std::set<std::string> used;
  for (ParamSlot &slot : paramSlots) {
    used.insert(slot.path);
    if (!slot.local)
      continue;
    at::Tensor full;
    if (weights)
      full = weights->read(slot.path, slot.fullShape);
    else if (slot.init == "ones")
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
    if (int64_t take = slot.realRows(shard, shards))
      mine.narrow(0, 0, take).copy_(full.narrow(0, shard * rows, take));
    slot.master = mine.requires_grad_(!slot.frozen);
    slot.expAvg = at::zeros_like(mine);
    slot.expAvgSq = at::zeros_like(mine);
  }
  std::vector<std::string> unused;
  if (weights)
    for (const auto &entry : weights->index)
      if (!used.count(entry.first))
        unused.push_back(entry.first);
  return unused;
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

at::TensorOptions Executor::unitOptions(const FsdpUnit &unit) const {
  at::TensorOptions options;
  return unit.slots.empty()
             ? options
             : options.device(paramSlots[unit.slots[0]].master.device());
}

Executor::UnitGather Executor::startGather(const FsdpUnit &unit) {
  int world = fsdpComm->size();
  int64_t perRank = 0;
  for (int s : unit.slots)
    perRank += paramSlots[s].shardNumel(world);
  UnitGather gather;
  gather.flat =
      at::empty({world * perRank}, unitOptions(unit).dtype(unit.compute));
  at::Tensor mine = gather.flat.narrow(0, fsdpComm->rank() * perRank, perRank);
  int64_t offset = 0;
  for (int s : unit.slots) {
    const at::Tensor &shard = paramSlots[s].master;
    mine.narrow(0, offset, shard.numel()).copy_(shard.detach().reshape({-1}));
    offset += shard.numel();
  }
  gather.pending = fsdpComm->startAllGather(gather.flat);
  return gather;
}

std::vector<at::Tensor>
Executor::landGather(const FsdpUnit &unit, UnitGather &gather,
                     std::vector<c10::Storage> &storages) {
  if (gather.pending)
    gather.pending->wait();
  gather.pending.reset();
  int world = fsdpComm->size();
  at::Tensor ranks = gather.flat.view({world, -1});
  std::vector<at::Tensor> fulls;
  storages.clear();
  int64_t offset = 0;
  for (int s : unit.slots) {
    ParamSlot &slot = paramSlots[s];
    if (world == 1 && unit.compute == at::kFloat) {
      // One rank: the master is the compute tensor.
      fulls.push_back(slot.master.detach());
      storages.emplace_back();
      continue;
    }
    int64_t elements = slot.shardNumel(world);
    std::vector<int64_t> padded = slot.shape;
    padded[0] = slot.paddedDim0;
    at::Tensor buffer = at::empty(padded, gather.flat.options());
    // Rank r's rows of the parameter are its piece of rank r's slice.
    buffer.view({world, elements}).copy_(ranks.narrow(1, offset, elements));
    offset += elements;
    at::Tensor full = buffer;
    if (slot.paddedDim0 != slot.shape[0])
      // Same storage, not a view: the storage is freed and refilled whole.
      full = at::empty({0}, buffer.options())
                 .set_(buffer.storage(), 0, slot.shape,
                       c10::contiguous_strides(slot.shape));
    storages.push_back(buffer.storage());
    fulls.push_back(full);
  }
  gather.flat = at::Tensor();
  return fulls;
}

Executor::GradientScatter
Executor::startReduceGrads(FsdpUnit &unit, std::vector<at::Tensor> &grads) {
  int world = fsdpComm->size();
  GradientScatter scatter;
  int64_t perRank = 0;
  for (int s : unit.slots) {
    const ParamSlot &slot = paramSlots[s];
    scatter.offsets.push_back(slot.frozen ? -1 : perRank);
    if (!slot.frozen)
      perRank += slot.shardNumel(world);
  }
  if (perRank == 0)
    return scatter;
  at::Tensor flat =
      at::empty({world * perRank}, unitOptions(unit).dtype(unit.reduce));
  at::Tensor ranks = flat.view({world, perRank});
  for (size_t i = 0; i < unit.slots.size(); ++i) {
    const ParamSlot &slot = paramSlots[unit.slots[i]];
    if (slot.frozen)
      continue;
    int64_t rows = slot.rowsPerRank(world), width = slot.rowNumel();
    at::Tensor into =
        ranks.narrow(1, scatter.offsets[i], slot.shardNumel(world))
            .view({world, rows, width});
    // Each gradient is dropped once copied in: the collective's own
    // buffers find the unsharded gradients gone.
    at::Tensor grad = i < grads.size() ? std::move(grads[i]) : at::Tensor();
    if (!grad.defined()) {
      into.zero_();
      continue;
    }
    grad = grad.reshape({slot.shape[0], width});
    if (slot.paddedDim0 == slot.shape[0]) {
      into.copy_(grad.view({world, rows, width}));
      continue;
    }
    // Padded rows reduce as zeros.
    for (int r = 0; r < world; ++r) {
      int64_t take = slot.realRows(r, world);
      if (take > 0)
        into[r].narrow(0, 0, take).copy_(grad.narrow(0, r * rows, take));
      if (take < rows)
        into[r].narrow(0, take, rows - take).zero_();
    }
  }
  scatter.pending = fsdpComm->startReduceScatterSum(flat, scatter.mine);
  return scatter;
}

std::vector<at::Tensor> Executor::finishReduceGrads(const FsdpUnit &unit,
                                                    GradientScatter &scatter) {
  int world = fsdpComm->size();
  if (scatter.pending)
    scatter.pending->wait();
  scatter.pending.reset();
  std::vector<at::Tensor> shards;
  for (size_t i = 0; i < unit.slots.size(); ++i) {
    const ParamSlot &slot = paramSlots[unit.slots[i]];
    if (i >= scatter.offsets.size() || scatter.offsets[i] < 0 ||
        !scatter.mine.defined()) {
      shards.emplace_back();
      continue;
    }
    at::Tensor mine =
        scatter.mine.narrow(0, scatter.offsets[i], slot.shardNumel(world))
            .view(slot.master.sizes());
    // Data parallel: each rank's loss is the mean over its own tokens.
    shards.push_back(mine.to(at::kFloat).div_(world));
  }
  scatter.mine = at::Tensor();
  scatter.offsets.clear();
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
