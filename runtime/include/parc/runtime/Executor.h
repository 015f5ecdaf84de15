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

#include <ATen/ATen.h>
#include <c10/core/Storage.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace parc::runtime {

/// One stored parameter (a tie group is one slot) as this rank holds it: a
/// dim-0 shard of the full tensor padded to `paddedDim0` rows.
struct ParamSlot {
  std::string path;
  std::vector<int64_t> shape;
  std::string init;
  bool frozen = false;
  int unit = -1;
  int64_t paddedDim0 = 0;
  /// fp32 master shard, [paddedDim0 / world, shape[1:]...], an autograd leaf.
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

  /// Allocates and initialises this rank's shards: every parameter is
  /// generated whole from a seed derived from its path and `seed`, then
  /// sliced, so values do not depend on the world size.
  void materialise(uint64_t seed);

  /// Runs the model's forward on one micro-batch and returns the loss, with
  /// the autograd graph whose backward reduce-scatters into the shards' grads.
  at::Tensor loss(const at::Tensor &ids, const at::Tensor &labels);

  std::vector<ParamSlot> &slots() { return paramSlots; }
  std::vector<FsdpUnit> &units() { return fsdpUnits; }
  Collectives &collectives() { return comm; }
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
  std::vector<at::Tensor> callModule(const std::string &callee,
                                     const std::vector<at::Tensor> &args);
  at::Tensor ropeTables(int64_t seq, const CompiledOp &op, bool sine);

  const plan::Plan &plan;
  Collectives &comm;
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
