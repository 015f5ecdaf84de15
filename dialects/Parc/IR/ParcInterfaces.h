//===- ParcInterfaces.h - what each forward op means ------------*- C++ -*-===//
//
// The types the op interfaces of ParcInterfaces.td speak: the query an
// analysis asks an op's cost with, the FLOPs it answers, the recorder an op
// tells what its backward saves, and the query of its TP sharding rule. The
// analyses implement the recorder (tensor identity, TP shards, remat); the ops
// only say what they keep.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCINTERFACES_H
#define PARC_DIALECT_PARC_IR_PARCINTERFACES_H

#include "Parc/IR/ParcEnums.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace mlir::parc {

class ParamOp;

/// Which kernels a hardware profile runs, as far as they change what is
/// saved: the saved tensors of a fused kernel and of its eager composite
/// differ by whole activation-sized buffers.
struct KernelProfile {
  /// `parc.attention`: flash-style (keeps q, k, v, the output and an fp32
  /// logsumexp) or eager (matmul, softmax, matmul: keeps the b x H x s x s
  /// probabilities, K and V expanded to every query head, a contiguous copy
  /// of q, the mask). Key `attention_kernel`: "flash" | "eager".
  bool eagerAttention = false;
  /// `parc.rms_norm`: fused (keeps its input and an fp32 rstd) or eager
  /// composite (x.float(), x^2 for the mean, x * rstd for the weight, rstd).
  /// Key `norm_kernel`: "fused" | "eager".
  bool eagerNorm = false;
  /// The logit softcap and cross-entropy: fused (the loss path as a fused
  /// kernel sees it) or eager (tanh(x / c) * c keeping the tanh, and
  /// log_softmax + nll_loss whose backward holds two fp32 logit gradients).
  /// Key `loss_kernel`: "fused" | "eager".
  bool eagerLoss = false;
};

/// The shapes an op runs at (dynamic dims bound to the run's micro-batch and
/// sequence) and which gradients its backward produces.
struct FlopQuery {
  llvm::ArrayRef<llvm::SmallVector<int64_t>> operandShapes;
  llvm::ArrayRef<int64_t> resultShape;
  /// Elements of the op's `weight` parameter; 0 when it has none.
  int64_t weightElements = 0;
  bool hasBias = false;
  bool weightGrad = false, biasGrad = false, inputGrad = false;

  bool outputGrad() const { return inputGrad || weightGrad || biasGrad; }
  static double getElements(llvm::ArrayRef<int64_t> shape) {
    double count = 1;
    for (int64_t extent : shape)
      count *= double(extent);
    return count;
  }
  double getResultElements() const { return getElements(resultShape); }
  double getOperandElements(unsigned i) const {
    return getElements(operandShapes[i]);
  }
};

/// One op's FLOPs. `matmul` and `attention` are the parts of `forward` the
/// hardware profile rates as GEMMs and as attention.
struct OpFlops {
  double forward = 0, backward = 0;
  double matmul = 0, attention = 0;
};

/// Elementwise work: `perElement` FLOPs for each of `elements` forward, and
/// by convention twice the forward backward when a gradient flows.
inline OpFlops getElementwiseFlops(const FlopQuery &query, double perElement,
                                   double elements) {
  OpFlops flops;
  flops.forward = perElement * elements;
  flops.backward = query.outputGrad() ? 2 * flops.forward : 0;
  return flops;
}

/// How a save-list checkpointing policy (torchtitan's `_op_sac_save_list`)
/// classes an op by the aten kernel it dispatches to: the policy keeps every
/// second `aten.mm` output of a layer call and every fused attention output,
/// and recomputes the rest.
enum class SaveListClass { Other, Matmul, Attention };

/// What an op's backward keeps, told by the op (AutogradOpInterface) to the
/// analysis that traces the forward. Tensors are the analysis's: an operand
/// two ops save is counted once, and under TP an operand is this rank's
/// shard (or, for an op that gathers it first, the gathered tensor).
class SaveRecorder {
public:
  virtual ~SaveRecorder();

  /// Keeps operand `i` / result `i` itself.
  virtual void saveOperand(unsigned i) = 0;
  virtual void saveResult(unsigned i) = 0;
  /// Keeps a tensor the kernel allocates that is no IR value (an eager
  /// kernel's intermediates) of `elements` at `bytesPerElement` (0: the
  /// activation dtype).
  virtual void saveBuffer(int64_t elements, int64_t bytesPerElement) = 0;
  /// Bytes kept beside the tensors: fp32 statistics (rstd, logsumexp),
  /// integer ids, masks. Selective remat rebuilds those of a recomputed op.
  virtual void saveStatistics(int64_t bytes) = 0;
  /// The loss path, root only: the logits entering the loss, and a softcap
  /// on them (each keeps a logit-sized tensor the loss accounts for).
  virtual void noteLossLogits(int64_t elements) = 0;
  virtual void noteSoftcap() = 0;

  /// Elements (of this TP rank) of operand `i` / result `i`.
  virtual int64_t getOperandElements(unsigned i) = 0;
  virtual int64_t getResultElements(unsigned i) = 0;
  /// Rows of operand 0: its elements over its last dimension.
  virtual int64_t getRows() = 0;
  /// The run's sequence length (attention's s x s probabilities and mask).
  virtual int64_t getTokens() = 0;
  /// Bytes per element of the activation (compute) dtype.
  virtual int64_t getActivationBytes() = 0;
  virtual const KernelProfile &getKernels() = 0;
  /// The parameter `ref` of the op names, looked up in a cached table.
  virtual ParamOp lookupParam(SymbolRefAttr ref) = 0;
};

/// One op's TP decision (TpShardingOpInterface): what a rank holds of its
/// operands (vocab shards the op does not keep already gathered), the roles
/// of its weight and bias and the plan's switches in; what it holds of its
/// results and the collectives it needs out, or the reason it cannot run.
class TpShardQuery {
public:
  llvm::ArrayRef<TpShard> operands;
  TpRole weight = TpRole::Replicated, bias = TpRole::Replicated;
  bool hasBias = false;
  bool sequenceParallel = false, lossParallel = false;

  TpShard result = TpShard::Full;
  llvm::SmallVector<TpComm> comms;
  std::string refusal;

  bool any(TpShard shard) const { return llvm::is_contained(operands, shard); }
  /// Refuses the split; `why` completes "'<op>' on '<weight>' ...".
  LogicalResult refuse(const llvm::Twine &why) {
    refusal = why.str();
    return failure();
  }
  /// The default rule: results split as the operands are (features with
  /// replicated values do not mix; sequence shards mix with nothing).
  LogicalResult inferElementwise();
};

} // namespace mlir::parc

#include "Parc/IR/ParcInterfaces.h.inc"

#endif // PARC_DIALECT_PARC_IR_PARCINTERFACES_H
