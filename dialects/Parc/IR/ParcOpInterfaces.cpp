//===- ParcOpInterfaces.cpp - what each forward op costs and saves --------===//
//
// The FLOPs and the autograd saves of every forward op, in one place: the
// cost model and the activation trace ask the op (ParcInterfaces.td) rather
// than switching on its type. Counting conventions are docs/cost-model.md's;
// what each kernel saves is LibTorch's, as docs/memory-model.md states.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::parc;

#include "Parc/IR/ParcInterfaces.cpp.inc"

SaveRecorder::~SaveRecorder() = default;

namespace {

/// Forward FLOPs per output element of the elementwise ops: ignorable next
/// to the matmuls, but counted.
constexpr double kAddFlops = 1, kMulFlops = 1, kRmsNormFlops = 4,
                 kLayerNormFlops = 7, kRopeFlops = 3, kSoftcapFlops = 3,
                 kCrossEntropyFlops = 4, kPoolFlops = 1;

int64_t lastDim(ArrayRef<int64_t> shape) {
  return shape.empty() ? 1 : shape.back();
}

/// A product with a weight: 2 x rows x in x out, since each output element
/// is an in-long dot product and the weight holds in x out elements.
/// Backward: the weight gradient (x^T dy) and the input gradient (dy W) are
/// each a matmul of the forward's size; a bias adds one FLOP per output
/// element each way.
OpFlops getWeightProductFlops(const FlopQuery &query) {
  double out = query.getResultElements();
  double in = double(query.weightElements) /
              double(std::max<int64_t>(1, lastDim(query.resultShape)));
  OpFlops flops;
  flops.matmul = 2 * out * in;
  flops.forward = flops.matmul + (query.hasBias ? out : 0);
  flops.backward =
      flops.matmul * ((query.weightGrad ? 1 : 0) + (query.inputGrad ? 1 : 0)) +
      (query.biasGrad ? out : 0);
  return flops;
}

/// (query, key) pairs one sequence of `queries` attends under the mask: a
/// causal row i sees min(i + 1, window) keys; a bidirectional row
/// min(keys, window).
double attendedPairs(int64_t queries, int64_t keys, bool causal,
                     std::optional<int64_t> window) {
  if (!causal) {
    double seen = window ? std::min(keys, *window) : keys;
    return double(queries) * seen;
  }
  double s = double(queries);
  double w = window ? std::min<double>(*window, s) : s;
  return w * (w + 1) / 2 + (s - w) * w;
}

int64_t getStaticLastDim(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t extent = type.getShape().back();
  return ShapedType::isDynamic(extent) ? 1 : extent;
}

/// The fp32 rstd (or mean and rstd share) a norm keeps: one per row and
/// normalised group (the weight's size is the group: the hidden vector, or
/// one head for q/k norms).
void saveNormStatistics(SaveRecorder &saves, Value input, int64_t groupSize) {
  saves.saveStatistics(saves.getRows() * (getStaticLastDim(input) / groupSize) *
                       4);
}
void saveNormStatistics(SaveRecorder &saves, Value input,
                        SymbolRefAttr weight) {
  ParamOp param = saves.lookupParam(weight);
  saveNormStatistics(
      saves, input,
      param ? std::max<int64_t>(1, param.getTensorType().getDimSize(0)) : 1);
}

} // namespace

//===----------------------------------------------------------------------===//
// Products with a weight
//===----------------------------------------------------------------------===//

OpFlops LinearOp::getFlops(const FlopQuery &query) {
  return getWeightProductFlops(query);
}
OpFlops MatmulOp::getFlops(const FlopQuery &query) {
  return getWeightProductFlops(query);
}
OpFlops PatchEmbeddingOp::getFlops(const FlopQuery &query) {
  return getWeightProductFlops(query);
}

/// The weight gradient needs the input (under sequence parallelism the
/// recorder hands over the gathered sequence a column-parallel linear
/// multiplies).
void LinearOp::recordSaves(SaveRecorder &saves) { saves.saveOperand(0); }
void MatmulOp::recordSaves(SaveRecorder &saves) { saves.saveOperand(0); }

/// torch.nn.functional.linear without a bias is a view, `aten.mm` and a view
/// (so is x @ W); with a bias it is `aten.addmm`, which a save list of mm
/// does not hold.
SaveListClass LinearOp::getSaveListClass() {
  return getBias() ? SaveListClass::Other : SaveListClass::Matmul;
}
SaveListClass MatmulOp::getSaveListClass() { return SaveListClass::Matmul; }
void PatchEmbeddingOp::recordSaves(SaveRecorder &saves) {
  saves.saveOperand(0);
}

/// A gather: no arithmetic (the scale, where there is one, is an
/// elementwise multiply), and a backward that scatters into the weight.
OpFlops EmbeddingOp::getFlops(const FlopQuery &query) {
  OpFlops flops;
  flops.forward = getScaleAttr() ? query.getResultElements() : 0;
  return flops;
}

/// The int64 ids, which the weight gradient's scatter reads.
void EmbeddingOp::recordSaves(SaveRecorder &saves) {
  saves.saveStatistics(saves.getOperandElements(0) * 8);
}

double PositionEmbeddingOp::getFlopsPerElement() {
  // One add per table: a patch sums its row of each axis' table.
  auto table = dyn_cast_or_null<ParamOp>(
      SymbolTable::lookupNearestSymbolFrom(getOperation(), getWeight()));
  return kAddFlops * (table ? getTableAxes(table.getTensorType()) : 1);
}

//===----------------------------------------------------------------------===//
// Normalisation and pointwise ops
//===----------------------------------------------------------------------===//

double RmsNormOp::getFlopsPerElement() { return kRmsNormFlops; }
bool RmsNormOp::isCheapToRecompute() { return true; }

/// An eager norm's saves: its input in fp32 (the input itself when it is
/// fp32 already) and `fp32Temporaries` more fp32 tensors of its size.
static void saveEagerNorm(SaveRecorder &saves, int fp32Temporaries) {
  int64_t size = saves.getOperandElements(0);
  if (saves.getActivationBytes() == 4)
    saves.saveOperand(0);
  else
    saves.saveBuffer(size, 4);
  for (int i = 0; i < fp32Temporaries; ++i)
    saves.saveBuffer(size, 4);
}

void RmsNormOp::recordSaves(SaveRecorder &saves) {
  saveNormStatistics(saves, getInput(), getWeight());
  if (!saves.getKernels().eagerNorm)
    return saves.saveOperand(0);
  // The composite x.float() * rsqrt(mean(x^2) + eps) * w keeps the fp32
  // input (for pow and the rstd product), x^2 (mean's backward keeps its
  // input in LibTorch 1.13) and x * rstd (for the weight gradient).
  saveEagerNorm(saves, 2);
}

/// The norm without its scale: the same statistics and the input kept.
double RmsNormalizeOp::getFlopsPerElement() { return kRmsNormFlops - 1; }
bool RmsNormalizeOp::isCheapToRecompute() { return true; }

void RmsNormalizeOp::recordSaves(SaveRecorder &saves) {
  saveNormStatistics(saves, getInput(), getGroupSize());
  if (!saves.getKernels().eagerNorm)
    return saves.saveOperand(0);
  // The composite x.float() * pow(mean(x^2) + eps, -0.5) keeps the fp32
  // input and x^2.
  saveEagerNorm(saves, 1);
}

double LayerNormOp::getFlopsPerElement() { return kLayerNormFlops; }
bool LayerNormOp::isCheapToRecompute() { return true; }

void LayerNormOp::recordSaves(SaveRecorder &saves) {
  saves.saveOperand(0);
  saveNormStatistics(saves, getInput(), getWeight());
}

/// Rope's backward needs only its cos / sin tables, which it rebuilds.
double RopeOp::getFlopsPerElement() { return kRopeFlops; }
bool RopeOp::isCheapToRecompute() { return true; }

double AddOp::getFlopsPerElement() { return kAddFlops; }
bool AddOp::isCheapToRecompute() { return true; }

double MulOp::getFlopsPerElement() { return kMulFlops; }
bool MulOp::isCheapToRecompute() { return true; }
/// Each operand's gradient is the other operand times the output gradient.
void MulOp::recordSaves(SaveRecorder &saves) {
  saves.saveOperand(0);
  saves.saveOperand(1);
}

double ActivationOp::getFlopsPerElement() {
  switch (getKind()) {
  case ActivationKind::Silu:
    return 4; // exp, add, divide, multiply
  case ActivationKind::GeluTanh:
  case ActivationKind::Gelu:
    return 8;
  case ActivationKind::Relu:
    return 1;
  }
  return 1;
}
bool ActivationOp::isCheapToRecompute() { return true; }
void ActivationOp::recordSaves(SaveRecorder &saves) { saves.saveOperand(0); }

double SoftcapOp::getFlopsPerElement() { return kSoftcapFlops; }
bool SoftcapOp::isCheapToRecompute() { return true; }

/// Fused, the backward uses the output; eager tanh(x / c) * c keeps tanh's
/// output, a tensor of the same size.
void SoftcapOp::recordSaves(SaveRecorder &saves) {
  saves.noteSoftcap();
  if (saves.getKernels().eagerLoss)
    saves.saveBuffer(saves.getResultElements(0), 0);
  else
    saves.saveResult(0);
}

OpFlops AvgPoolTokensOp::getFlops(const FlopQuery &query) {
  return getElementwiseFlops(query, kPoolFlops, query.getOperandElements(0));
}

/// Counted per logit: log-softmax and the pick of the label.
OpFlops CrossEntropyOp::getFlops(const FlopQuery &query) {
  return getElementwiseFlops(query, kCrossEntropyFlops,
                             query.getOperandElements(0));
}

/// The loss path's logit-sized tensors are the loss's own accounting
/// (docs/memory-model.md): the op only says how many logits enter it.
void CrossEntropyOp::recordSaves(SaveRecorder &saves) {
  saves.noteLossLogits(saves.getOperandElements(0));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

OpFlops AttentionOp::getFlops(const FlopQuery &query) {
  ArrayRef<int64_t> q = query.operandShapes[0], k = query.operandShapes[1];
  int64_t queries = q.size() >= 2 ? q[q.size() - 2] : 1;
  int64_t keys = k.size() >= 2 ? k[k.size() - 2] : 1;
  double sequences = FlopQuery::getElements(q) /
                     std::max<double>(1, double(lastDim(q)) * double(queries));
  double pairs =
      sequences * attendedPairs(queries, keys, getCausal(), getSlidingWindow());
  OpFlops flops;
  // q k^T and p v: 2 FLOPs per pair, head and head dim each.
  flops.forward = 4 * pairs * double(getNumHeads()) * double(getHeadDim());
  flops.attention = flops.forward;
  // dv = p^T do, dp = do v^T, dq = ds k, dk = ds^T q.
  flops.backward = query.inputGrad ? 2 * flops.forward : 0;
  return flops;
}

/// Scaled dot-product attention (flash, efficient, cuDNN or math) is on
/// torchtitan's save list whatever the kernel.
SaveListClass AttentionOp::getSaveListClass() {
  return SaveListClass::Attention;
}

void AttentionOp::recordSaves(SaveRecorder &saves) {
  int64_t rows = saves.getRows();
  if (!saves.getKernels().eagerAttention) {
    for (unsigned i = 0; i < 3; ++i)
      saves.saveOperand(i);
    saves.saveResult(0);
    // Flash attention keeps one fp32 logsumexp per query and head.
    saves.saveStatistics(rows * getNumHeads() * 4);
    return;
  }
  // Eager attention (q k^T, mask, softmax, p v in LibTorch) keeps q, K and V
  // as contiguous [b, H, s, d] copies (the batched matmul's reshape of the
  // transposed heads, or repeat_interleave to every query head under GQA),
  // the softmax probabilities in fp32 (and their compute-dtype copy for p v
  // when that is narrower), the tanh of a score softcap and the s x s
  // boolean mask. Neither the operands nor the output (a reshaped copy) are
  // kept by attention itself: they stay only where another op saves them
  // (o_proj keeps the output as its input).
  int64_t headDim = std::max<int64_t>(1, getHeadDim());
  int64_t heads = getNumHeads();
  int64_t kvHeads = std::max<int64_t>(1, getNumKvHeads());
  int64_t query = saves.getOperandElements(0);
  saves.saveBuffer(query, 0);
  for (unsigned i : {1u, 2u})
    saves.saveBuffer(saves.getOperandElements(i) * heads / kvHeads, 0);
  // [b, H, s, s]: one score per query row, head and key.
  int64_t probabilities = query / headDim * saves.getTokens();
  saves.saveBuffer(probabilities, 4);
  if (saves.getActivationBytes() != 4)
    saves.saveBuffer(probabilities, 0);
  if (getSoftcap().has_value())
    saves.saveBuffer(probabilities, 0);
  if (getCausal() || getSlidingWindow().has_value())
    saves.saveStatistics(saves.getTokens() * saves.getTokens());
}
