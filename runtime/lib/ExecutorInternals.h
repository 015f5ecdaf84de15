//===- ExecutorInternals.h - what the executor's files share -------------===//
//
// The compiled form of plan.bin's forwards (ops with their attributes read
// once) and the model's forward flattened into layer calls and the root's
// own ops, each on its virtual pipeline stage. Private to runtime/lib.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_LIB_EXECUTORINTERNALS_H
#define PARC_RUNTIME_LIB_EXECUTORINTERNALS_H

#include "parc/runtime/Executor.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace parc::runtime {

enum class OpKind {
  Embedding,
  Linear,
  Matmul,
  RmsNorm,
  RmsNormalize,
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
  /// rms_normalize: elements per normalised group (one head).
  int64_t groupSize = 0;
  /// rope: frequency pairs that rotate (0: all of them).
  int64_t rotatedPairs = 0;
  Activation activation = Activation::Silu;
  /// Rope scaling: "" (none), "linear" or "llama3".
  std::string ropeType;
  double ropeFactor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPositions = 8192;
  bool recompute = false;
  /// parc.remat_save: remat "op" keeps this op's output from the forward.
  bool rematSave = false;
  /// Tensor parallel (docs/runtime.md): a column-parallel or vocab linear
  /// takes its replicated input through TpCopy (identity forward, all-reduce
  /// backward); a row-parallel linear and a vocab embedding all-reduce their
  /// partial outputs (TpReduce); a replicated weight applied to TP-local
  /// features (q/k norms) takes TpCopy so that its gradient sums the ranks'
  /// heads; a cross-entropy on vocab-sharded logits is vocab-parallel under
  /// loss_parallel; vocab-sharded operands of any other op are all-gathered.
  TpSplit weightSplit = TpSplit::Replicated;
  /// plan.bin's record of the op's split (plan::TpShards): what a rank
  /// holds of each result and the collectives, read into the flags below.
  bool hasTp = false;
  std::vector<plan::TpShard> tpValues;
  std::vector<plan::TpComm> tpComms;
  bool tpCopyInput = false;
  bool tpBiasGrad = false;
  bool tpReduceOutput = false;
  bool tpWeightGrad = false;
  bool vocabParallelLoss = false;
  /// Sequence parallel: a column-parallel linear all-gathers its
  /// sequence-sharded input (TpGatherSequence); a row-parallel linear and the
  /// vocab embedding reduce-scatter over the sequence (TpScatterSequence).
  bool seqGatherInput = false;
  bool seqScatterOutput = false;
  std::vector<bool> gatherOperand;
};

/// Ops that selective remat recomputes (parc.recompute), joined where one
/// reads another's result before any other op has read it: one checkpoint
/// keeps only what flows into the group, not the values passed between its
/// members. It runs in place of its last member.
struct RecomputeGroup {
  std::vector<size_t> members;
  /// Values the members read from outside the group, and member results
  /// read outside it (or returned).
  std::vector<int> inputs, outputs;
};

struct CompiledForward {
  std::string module;
  int numArgs = 0;
  /// What a rank holds of each argument under TP (plan.bin's arg_tp).
  bool hasArgTp = false;
  std::vector<plan::TpShard> argTp;
  int numValues = 0;
  std::vector<CompiledOp> ops;
  std::vector<int> results;
  std::vector<RecomputeGroup> recomputeGroups;
  /// Per op: the group it is the last member of, or -1; -2 for the other
  /// members (they run inside the group).
  std::vector<int> recomputeGroupAt;
};

/// The model's forward flattened to one op list (calls of non-layer modules
/// inlined, layer calls kept), each op on the virtual pipeline stage that
/// runs it (0 without a pipeline), and what crosses each stage boundary.
struct Executor::Pipeline {
  struct Step {
    const CompiledOp *op = nullptr;
    std::vector<int> operands, results;
    int stage = 0;
  };
  /// `stage` of a step is its virtual stage: chunk x stages + stage.
  std::vector<Step> steps;
  int numValues = 2;
  int lossValue = -1;
  int virtualStages = 1;
  /// Per virtual boundary b: the values virtual stage b sends to b + 1
  /// (defined on virtual stages <= b and read on a later one), in value order.
  std::vector<std::vector<int>> crossing;
  /// Each layer's virtual stage (chunk x stages + stage), by dotted path.
  std::map<std::string, int> layerStage;
};

/// Runs a rank's program step by step (Interpreter.cpp).
struct Executor::Interpreter {
  struct Segment {
    std::string path, part;
    /// The layer's FSDP unit; -1 for the root's head and tail.
    int unit = -1;
    /// Whether its ops read parameters of the root unit.
    bool usesRoot = false;
    bool fullRemat = false;
    /// Remat "op": a full rerun that takes the save list's outputs back.
    bool keepsSaveList = false;
    int stage = 0;
    std::vector<const Pipeline::Step *> ops;
    /// Values read from other segments (0 and 1: ids and labels) and values
    /// defined here that others read, in value order.
    std::vector<int> inputs, outputs;
  };

  /// A gathered unit: the storages its parameters live in while gathered.
  struct Gather {
    int unit = -1;
    std::vector<c10::Storage> storages;
    std::vector<at::Tensor> fulls;
    /// Its collective in flight until the program's wait.
    Executor::UnitGather flight;
    bool live = false;
    bool landed = false;
    /// Waits for the collective and copies the unit out of it.
    void wait(Executor &exec);
    /// Frees the gathered bytes; autograd keeps its pointers to the
    /// storages, which a later gather may refill.
    void release(Executor &exec);
  };
  /// A unit's parameters as the leaves one micro-batch's forward used.
  struct Binding {
    std::vector<at::Tensor> leaves;
    int gather = -1;
  };
  /// A segment's micro-batch between its forward and its backward.
  struct Flight {
    std::vector<at::Tensor> inputs, outputs;
    Executor::KeptOutputs kept;
  };
  /// What crossed a pipeline boundary in one micro-batch: enough to
  /// receive or send the gradients that go back.
  struct Message {
    std::vector<int64_t> shape;
    at::TensorOptions options;
    bool needsGrad = false;
  };
  struct Buffer {
    plan::BufferKind kind = plan::BufferKind::Activation;
    std::string path;
    int64_t micro = -1;
    int unit = -1;
  };

  Interpreter(Executor &exec) : exec(exec) {}

  bool build(std::string &error);
  double run(const plan::Program &program, const ProgramHooks &hooks);

private:
  using Key = std::pair<int, int64_t>;
  void fail(size_t index, const std::string &why) {
    throw std::runtime_error("program step " + std::to_string(index) + ": " +
                             why);
  }
  int segmentFor(size_t index, const plan::Step &step);
  /// Reads what each step names once per program (its segment, the buffer
  /// under each tensor), so a training step does no look-ups by path.
  void decode(const plan::Program &program);
  std::vector<int> unitsOf(const Segment &seg) const;
  void bind(size_t index, const Segment &seg, int64_t micro, bool fresh);
  void unbind(const Segment &seg);
  std::vector<at::Tensor> compute(const Segment &seg,
                                  const std::vector<at::Tensor> &inputs);
  void forward(size_t index, int s, int64_t micro);
  void recompute(size_t index, int s, int64_t micro);
  void backward(size_t index, int s, int64_t micro);
  void refill(size_t index, int unit, int64_t micro);
  void reduceScatter(int unit, int64_t micro, int tensor);
  void landScatter(int tensor);
  void sendActivations(size_t index, const Buffer &buffer, int peer,
                       bool gradients);
  void recvActivations(size_t index, const Buffer &buffer, int peer,
                       bool gradients);
  int boundaryOf(const Buffer &buffer, bool sending, bool gradients) const;
  std::vector<at::Tensor> &valuesOf(int64_t micro);
  std::vector<at::Tensor> &gradsOf(int64_t micro);
  void accumulate(at::Tensor &into, const at::Tensor &grad);
  void fold(int u, Binding &binding);
  void consumed(int64_t micro, int value);

  Executor &exec;
  std::vector<Segment> segments;
  std::map<std::pair<std::string, std::string>, int> segmentByName;
  int rootUnit = -1;
  int numValues = 0;
  /// Per value: how many reads (segment forwards and sends) this stage
  /// makes of it in one micro-batch; the value is dropped after the last.
  std::vector<int> readsPerMicro;

  // One step's state.
  const ProgramHooks *hooks = nullptr;
  int64_t microBatches = 1;
  std::map<int, Gather> gathers;
  /// FSDP reduce-scatters in flight until the program's wait, by tensor.
  struct Scatter {
    int unit = -1;
    Executor::GradientScatter collectives;
  };
  std::map<int, Scatter> scatters;
  std::map<int, int> latestGather;
  std::map<Key, Binding> bindings;
  /// Units one reduce-scatter reads for every micro-batch (deferred
  /// gradient sync, or the root under PP), from decode(); and, per such
  /// unit, its gradients folded so far, in the reduce dtype: one
  /// accumulated gradient per parameter rather than one per micro-batch,
  /// as FSDP2 keeps without gradient sync and as the lowering counts.
  std::set<int> foldingUnits;
  std::map<int, std::vector<at::Tensor>> folded;
  std::map<Key, Flight> flights;
  /// By (virtual boundary, micro-batch).
  std::map<Key, std::vector<Message>> sentAt, receivedAt;
  /// decode()'s result: per step its segment (-1: none); per tensor the
  /// step defining it and the buffer it is or was reduced from.
  const plan::Program *decoded = nullptr;
  std::vector<int> stepSegment, tensorStep;
  std::vector<Buffer> buffers;
  std::map<int64_t, std::vector<at::Tensor>> values, grads;
  std::map<int64_t, std::vector<int>> reads;
  std::map<int64_t, std::pair<at::Tensor, at::Tensor>> data;
  double lossSum = 0;
  bool faulted = false;
};

/// Drops the selective-remat regions of the last step (the autograd graph
/// that pointed at them has been run).
void clearRecomputeRegions();

/// Tags of one pipeline message: virtual boundary, micro-batch, direction,
/// the value's place in the boundary's list, header or data.
inline int pipelineTag(int boundary, int64_t micro, bool backward,
                       size_t index) {
  return int(
      (((boundary * 1024 + micro) * 2 + (backward ? 1 : 0)) * 256 + index) * 2);
}

} // namespace parc::runtime

#endif // PARC_RUNTIME_LIB_EXECUTORINTERNALS_H
