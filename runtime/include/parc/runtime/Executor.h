//===- Executor.h - running a plan's forward with FSDP and remat -*- C++ -*-===//
//
// The model as a plan describes it: each rank's parameter shards, the FSDP
// units that gather and free them, and the module forwards compiled from
// plan.bin into LibTorch calls. Autograd does the backward; the custom
// functions in Executor.cpp put the collectives and recomputation where the
// plan says.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_EXECUTOR_H
#define PARC_RUNTIME_EXECUTOR_H

#include "PlanFormat.h"
#include "parc/runtime/Collectives.h"
#include "parc/runtime/PlanFile.h"

#include <ATen/ATen.h>
#include <c10/core/Storage.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace parc::runtime {

/// How tensor parallelism splits a parameter (Param.tp).
enum class TpSplit { Replicated, Colwise, Rowwise, Vocab };

/// One stored parameter (a tie group is one slot) as this rank holds it:
/// the TP slice of the world-1 tensor, then a dim-0 FSDP shard of that
/// slice padded to `paddedDim0` rows.
struct ParamSlot {
  std::string path;
  /// The world-1 shape, from which the tensor is generated.
  std::vector<int64_t> fullShape;
  /// The TP-local shape the forward computes with (fullShape without TP).
  std::vector<int64_t> shape;
  TpSplit tp = TpSplit::Replicated;
  /// Vocab split: dim 0 padded to this before it is split.
  int64_t tpPaddedDim0 = 0;
  /// The pipeline stages holding a copy (two for a tie spanning stages);
  /// the first holds the copy the gradient norm counts.
  std::vector<int> stages{0};
  /// Whether this rank's stage holds it; other stages' slots have no tensors.
  bool local = true;
  std::string init;
  bool frozen = false;
  int unit = -1;
  int64_t paddedDim0 = 0;
  /// fp32 master shard, [paddedDim0 / fsdp, shape[1:]...], an autograd leaf.
  at::Tensor master;
  at::Tensor expAvg, expAvgSq;
  /// The unsharded compute tensor while its unit is gathered.
  at::Tensor full;

  int64_t rowsPerRank(int world) const { return paddedDim0 / world; }
  int64_t rowNumel() const {
    int64_t n = 1;
    for (size_t i = 1; i < shape.size(); ++i)
      n *= shape[i];
    return n;
  }
};

/// One FSDP unit: the parameters gathered before its module's forward (and
/// again before its backward when it reshards) and reduce-scattered after.
struct FsdpUnit {
  std::string name;
  std::string path;
  std::vector<int> slots;
  bool reshardAfterForward = true;
  at::ScalarType compute = at::kFloat;
  at::ScalarType reduce = at::kFloat;
  /// Storages of the gathered tensors, kept across a free so that tensors
  /// autograd saved see the data again when the unit is re-gathered.
  std::vector<c10::Storage> storages;
  /// The storages of each gather whose backward is still to come, by gather
  /// number: a pipeline runs several micro-batches' forwards before their
  /// backwards, and each re-gathers into the storages its forward saved.
  std::map<int64_t, std::vector<c10::Storage>> inFlight;
  int64_t gathers = 0;
  bool gathered = false;
};

struct CompiledOp;
struct CompiledForward;

class Executor {
public:
  /// Checks that every forward op of `plan` is one the runtime runs and
  /// builds this rank's slots and units; allocates no tensor.
  static std::unique_ptr<Executor> create(const plan::Plan &plan,
                                          Collectives &comm,
                                          std::string &error);
  ~Executor();

  /// Forms the per-axis process groups this rank belongs to (tp, fsdp, pp, dp
  /// and the tied-copy group of the first and last stage), each over a
  /// PrefixStore of the world's store. Every rank calls it in the same
  /// order; throws CollectiveError when a group cannot be formed.
  void connectGroups();

  /// Allocates and initialises this rank's shards: every parameter is
  /// generated whole from a seed derived from its path and `seed`, then
  /// sliced, so values do not depend on the world size.
  void materialise(uint64_t seed);

  /// Runs the model's forward on one micro-batch and returns the loss, with
  /// the autograd graph whose backward reduce-scatters into the shards' grads.
  at::Tensor loss(const at::Tensor &ids, const at::Tensor &labels);

  /// One pipelined step on this rank's stage: every micro-batch's forward
  /// and backward in the order of the plan's schedule, activations and
  /// their gradients sent to and received from the neighbouring stages,
  /// each micro-batch's loss scaled by 1/microbatches. `batch(m)` gives
  /// micro-batch m's (ids, labels); `afterForward` runs after each forward.
  /// Returns the sum of the micro-batch losses (0 off the last stage).
  double pipelineStep(
      const std::function<std::pair<at::Tensor, at::Tensor>(int64_t)> &batch,
      const std::function<void(int64_t)> &afterForward);

  /// After every backward of a step: all-reduces the gradients of tied
  /// copies between the first and last stage, so both copies step alike.
  void reduceTiedCopies();

  /// After every backward of a step, with dp > 1 (HSDP): averages each
  /// FSDP unit's sharded gradients over the data-parallel replicas, one
  /// all-reduce per unit over the dp group.
  void reduceReplicas();

  /// Σ grad² over what this rank contributes to the global norm: its shards
  /// of TP-split parameters, replicated ones only on TP rank 0, a tied copy
  /// only on its first stage, so a sum over all ranks counts each value
  /// once.
  double gradSquares();

  std::vector<ParamSlot> &slots() { return paramSlots; }
  std::vector<FsdpUnit> &units() { return fsdpUnits; }
  Collectives &collectives() { return comm; }
  const RankLayout &rankLayout() const { return layout; }
  /// The group along one axis; a one-rank group when the axis has size 1.
  Collectives &tpGroup() { return *tpComm; }
  Collectives &fsdpGroup() { return *fsdpComm; }
  /// The last sequence all-gather (input, output): q, k and v (gate and
  /// up) share one gather of their input, as Megatron's.
  std::pair<at::Tensor, at::Tensor> sequenceGather;
  int64_t vocabSize() const { return vocab; }
  /// Parameter paths that alias a slot (tie entries after the first).
  const std::map<std::string, std::string> &aliases() const {
    return tiedTo;
  }

  // Used by the autograd functions in Executor.cpp.
  std::vector<at::Tensor> gather(FsdpUnit &unit);
  void regather(FsdpUnit &unit);
  void release(FsdpUnit &unit);
  std::vector<at::Tensor> reduceGrads(FsdpUnit &unit,
                                      const std::vector<at::Tensor> &grads);
  std::vector<at::Tensor> run(const std::string &module,
                              const std::vector<at::Tensor> &args);
  /// Runs one op of a forward (a call, a selective checkpoint or an ATen
  /// op) on its operands, gathering vocab-sharded operands it cannot take.
  std::vector<at::Tensor> runOp(const CompiledOp &op,
                                std::vector<at::Tensor> operands);
  at::Tensor apply(const CompiledOp &op,
                   const std::vector<at::Tensor> &operands,
                   const at::Tensor &weight, const at::Tensor &bias);
  const at::Tensor &param(int slot, const CompiledOp &op);
  std::vector<int> moduleSlots(const std::string &module);

  /// When set (PARC_RUN_MEMORY_DEBUG), each forward op prints the live bytes
  /// it adds: what autograd keeps of it, for comparing with the memory model.
  std::function<int64_t()> memoryProbe;

private:
  Executor(const plan::Plan &plan, Collectives &comm);
  bool compile(std::string &error);
  /// Works out, from the root down the calls, which values TP splits and
  /// where the TP collectives go (`args`, `results`: TpValue per value).
  bool compileTp(CompiledForward &fwd, const std::vector<int> &args,
                 std::vector<int> &results, std::string &error);
  std::map<std::string, std::vector<int>> tpArgs, tpResults;
  bool compilePipeline(std::string &error);
  std::vector<at::Tensor> gatherRoot();
  void releaseRoot();
  void sendValue(const at::Tensor &value, int peer, int tag);
  at::Tensor recvValue(int peer, int tag);
  std::vector<at::Tensor> callModule(const std::string &callee,
                                     const std::vector<at::Tensor> &args);
  at::Tensor ropeTables(int64_t seq, const CompiledOp &op, bool sine);

  const plan::Plan &plan;
  Collectives &comm;
  RankLayout layout;
  std::unique_ptr<Collectives> ownedTp, ownedFsdp, ownedPp, ownedDp,
      ownedTied;
  Collectives *tpComm = nullptr, *fsdpComm = nullptr, *ppComm = nullptr,
              *dpComm = nullptr, *tiedComm = nullptr;
  struct Pipeline;
  std::unique_ptr<Pipeline> pipeline;
  std::vector<ParamSlot> paramSlots;
  std::vector<FsdpUnit> fsdpUnits;
  std::unordered_map<std::string, int> slotByPath;
  std::map<std::string, std::string> tiedTo;
  std::unordered_map<std::string, int> unitByPath;
  std::unordered_map<std::string, std::string> rematByPath;
  std::unordered_map<std::string, std::unique_ptr<CompiledForward>> forwards;
  std::unordered_map<std::string, at::Tensor> ropeCache;
  int64_t vocab = 0;
};

} // namespace parc::runtime

#endif // PARC_RUNTIME_EXECUTOR_H
