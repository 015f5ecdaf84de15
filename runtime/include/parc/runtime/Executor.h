//===- Executor.h - running a plan's forward with FSDP and remat -*- C++
//-*-===//
//
// The model as a plan describes it: each rank's parameter shards, the FSDP
// units that gather and free them, and the module forwards compiled from
// plan.bin into LibTorch calls. Autograd does the backward; the custom
// functions in Forward.cpp put the collectives and recomputation where the
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

#include <algorithm>
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
  /// Elements of one rank's shard: its piece of a unit's flat buffers.
  int64_t shardNumel(int world) const {
    return rowsPerRank(world) * rowNumel();
  }
  /// How many of the unpadded rows rank `rank` of `world` holds (its
  /// shard's first rows; the rest is padding).
  int64_t realRows(int rank, int world) const {
    int64_t rows = rowsPerRank(world);
    return std::clamp<int64_t>(shape[0] - rank * rows, 0, rows);
  }
};

/// One FSDP unit: the parameters the program's all-gather steps gather and
/// its reduce-scatter steps reduce.
struct FsdpUnit {
  std::string name;
  std::string path;
  std::vector<int> slots;
  at::ScalarType compute = at::kFloat;
  at::ScalarType reduce = at::kFloat;
};

struct CompiledOp;
struct CompiledForward;

/// What a program's step asks of the trainer.
struct ProgramHooks {
  /// Micro-batch m's (ids, labels) on this rank.
  std::function<std::pair<at::Tensor, at::Tensor>(int64_t)> batch;
  /// After the first forward step of micro-batch 0 (fault injection).
  std::function<void(int64_t)> afterForward;
  /// The program's gradient clipping to a global norm, given the norm and
  /// the sum of this rank's micro-batch losses.
  std::function<void(double, double)> clip;
  /// The program's optimizer step (AdamW; the norm too when the program
  /// does not clip), given the sum of this rank's micro-batch losses.
  std::function<void(double)> optimizer;
  /// After each step: its index, when it started and how long it took
  /// (steady-clock seconds).
  std::function<void(size_t, double, double)> executed;
};

class Executor {
public:
  /// Checks that every forward op of `plan` is one the runtime runs and
  /// builds this rank's slots and units; allocates no tensor.
  static std::unique_ptr<Executor>
  create(const plan::Plan &plan, Collectives &comm, std::string &error);
  ~Executor();

  /// Forms the per-axis process groups this rank belongs to (tp, fsdp, pp, dp
  /// and the tied-copy group of the first and last stage), each over a
  /// PrefixStore of the world's store. Every rank calls it in the same
  /// order; throws CollectiveError when a group cannot be formed.
  void connectGroups();

  /// Allocates and initialises this rank's shards: every parameter is
  /// generated whole from a seed derived from its path and `seed` (or, with
  /// `weightsPath`, read whole from that safetensors file under its Hugging
  /// Face name, any float dtype), then sliced, so values do not depend on
  /// the world size. Throws naming the file and the tensor for a parameter
  /// the file lacks or holds in another shape; returns the file's tensors
  /// the plan has no parameter for.
  std::vector<std::string> materialise(uint64_t seed,
                                       const std::string &weightsPath = "");

  /// Runs one optimizer step of this rank's program (plan.bin's
  /// Program.steps, verified) in order: gathers, forwards, saves, frees,
  /// recomputes, backwards, reduce-scatters, all-reduces, pipeline sends and
  /// receives, and the optimizer step through `hooks`. Each micro-batch's
  /// loss is scaled by 1/micro_batches. Returns the sum of the micro-batch
  /// losses (0 off the last stage). Interpreter.cpp.
  double runProgram(const plan::Program &program, const ProgramHooks &hooks);

  /// The all-reduce of a tied parameter's gradient between the stages that
  /// hold a copy of it, so both copies step alike.
  void reduceTiedCopy(const std::string &path);

  /// With dp > 1 (HSDP): averages an FSDP unit's sharded gradients over the
  /// data-parallel replicas, one all-reduce over the dp group.
  void reduceReplicas(FsdpUnit &unit);

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
  /// The last sequence all-gather (input, output) and the last TP copy of a
  /// replicated input: q, k and v (gate and up) share one gather of their
  /// input, or one all-reduce of its gradient, as Megatron's f; the
  /// lowering counts the same (lower-to-schedule's TpCollectiveWalker).
  std::pair<at::Tensor, at::Tensor> sequenceGather, tpCopy;
  int64_t vocabSize() const { return vocab; }
  /// Parameter paths that alias a slot (tie entries after the first).
  const std::map<std::string, std::string> &aliases() const { return tiedTo; }

  // Used by the autograd functions in Forward.cpp and by the interpreter.
  /// A unit's all-gather in flight. As FSDP2's, it is one collective over
  /// one flat buffer in the compute dtype, rank-major: rank r's slice holds
  /// its shard of each of the unit's parameters in slot order, so every
  /// rank sends one contiguous piece however many parameters the unit has.
  struct UnitGather {
    at::Tensor flat;
    std::unique_ptr<PendingCollective> pending;
  };
  /// Where the unit's masters live (the device of its flat buffers).
  at::TensorOptions unitOptions(const FsdpUnit &unit) const;
  /// Starts gathering `unit`: this rank's shards are cast straight into
  /// its slice of the flat buffer, and the collective returns at once.
  UnitGather startGather(const FsdpUnit &unit);
  /// Waits for the gather and copies the flat buffer out into one padded
  /// tensor per parameter (FSDP2's copy-out; the flat buffer is freed
  /// after it): returns the parameters, unpadded, and their storages (one
  /// per slot, empty where the master itself is the compute tensor).
  std::vector<at::Tensor> landGather(const FsdpUnit &unit, UnitGather &gather,
                                     std::vector<c10::Storage> &storages);
  /// A unit's gradients on their way to this rank's shards: one
  /// reduce-scatter of one flat buffer laid out as the gather's, and this
  /// rank's slice of the sum once it has landed.
  struct GradientScatter {
    std::unique_ptr<PendingCollective> pending;
    at::Tensor mine;
    /// Per slot of the unit: its offset in `mine`, -1 for a frozen slot.
    std::vector<int64_t> offsets;
  };
  /// Starts reduce-scattering `grads` (one per slot of `unit`, undefined:
  /// zeros) in the unit's reduce dtype and returns at once; `grads` are
  /// released as they are copied in.
  GradientScatter startReduceGrads(FsdpUnit &unit,
                                   std::vector<at::Tensor> &grads);
  /// Waits for them and returns this rank's fp32 gradient shards (undefined
  /// for a frozen slot): views of the one slice in fp32, copies otherwise.
  std::vector<at::Tensor> finishReduceGrads(const FsdpUnit &unit,
                                            GradientScatter &scatter);
  std::vector<at::Tensor> run(const std::string &module,
                              const std::vector<at::Tensor> &args);
  /// Runs one op of a forward (a call, a selective checkpoint or an ATen
  /// op) on its operands, gathering vocab-sharded operands it cannot take.
  std::vector<at::Tensor> runOp(const CompiledOp &op,
                                std::vector<at::Tensor> operands);
  /// All-gathers the vocab-sharded operands `op` cannot take (TP).
  std::vector<at::Tensor> gatherVocabOperands(const CompiledOp &op,
                                              std::vector<at::Tensor> operands);
  at::Tensor apply(const CompiledOp &op,
                   const std::vector<at::Tensor> &operands,
                   const at::Tensor &weight, const at::Tensor &bias);
  const at::Tensor &param(int slot, const CompiledOp &op);
  std::vector<int> moduleSlots(const std::string &module);

  /// Remat "op" (torchtitan's save list): while a layer's forward runs
  /// without autograd, the outputs of its ops marked parc.remat_save are
  /// kept here in order; backward's rerun of the layer takes them back in
  /// the same order instead of running those ops again.
  struct KeptOutputs {
    std::vector<at::Tensor> tensors;
    size_t next = 0;
    bool replay = false;
  };
  KeptOutputs *keptOutputs = nullptr;
  /// The rerun's stand-in for a kept op: its output from the forward, tied
  /// into autograd with the op's own backward.
  at::Tensor replayKept(const CompiledOp &op,
                        const std::vector<at::Tensor> &operands);

  /// When set (PARC_RUN_MEMORY_DEBUG), each forward op prints the live bytes
  /// it adds: what autograd keeps of it, for comparing with the memory model.
  std::function<int64_t()> memoryProbe;

private:
  Executor(const plan::Plan &plan, Collectives &comm);
  bool compile(std::string &error);
  bool compileParameters(std::string &error);
  bool compileUnits(std::string &error);
  bool compileForwards(std::string &error);
  bool compileForward(const plan::Forward &fwd, std::string &error);
  /// One op of a forward whose values so far are 0..numValues-1 (grown by
  /// its results): kernel, operands, attributes and TP record.
  bool compileOp(const plan::ForwardOp &entry, const std::string &module,
                 int &numValues, CompiledOp &op, std::string &error);
  /// The op's attributes, its parameters resolved to slots.
  bool readOpAttrs(const plan::ForwardOp &entry, const std::string &where,
                   CompiledOp &op, std::string &error);
  /// Reads each op's TP record (how apply-tp split it, which collectives
  /// it runs) into the kernels' flags, refusing what they cannot run.
  bool compileTp(std::string &error);
  bool compilePipeline(std::string &error);
  bool buildInterpreter(std::string &error);
  /// Forms the selective-remat checkpoints of a forward (RecomputeGroup).
  void groupRecomputes(CompiledForward &fwd);
  void sendValue(const at::Tensor &value, int peer, int tag);
  at::Tensor recvValue(int peer, int tag);
  std::vector<at::Tensor> callModule(const std::string &callee,
                                     const std::vector<at::Tensor> &args);
  at::Tensor ropeTables(int64_t seq, const CompiledOp &op, bool sine);

  const plan::Plan &plan;
  Collectives &comm;
  RankLayout layout;
  std::unique_ptr<Collectives> ownedTp, ownedFsdp, ownedPp, ownedDp, ownedTied;
  Collectives *tpComm = nullptr, *fsdpComm = nullptr, *ppComm = nullptr,
              *dpComm = nullptr, *tiedComm = nullptr;
  struct Pipeline;
  std::unique_ptr<Pipeline> pipeline;
  struct Interpreter;
  std::unique_ptr<Interpreter> interpreter;
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
