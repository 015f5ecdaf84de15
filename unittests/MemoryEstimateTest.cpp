//===- MemoryEstimateTest.cpp - activation bytes against closed forms -----===//
//
// Korthikanti et al. 2022 (Table 2) give per-layer activation bytes of a
// GPT-style layer at 16 bits, no parallelism, as s*b*h*(34 + 5*a*s/h); full
// recompute keeps 2*s*b*h. parc counts the tensors its own op graph saves.
// Two terms of the closed form do not exist in parc's layer, and the test
// says so: the 5*a*s/h term is the s x s attention matrix that flash-style
// attention never stores, and 2*s*b*h of the 34 are the two dropout masks
// (1 byte per element each) of a layer trained with dropout. What parc adds
// are fp32 statistics: attention's logsumexp (a*s*b*4) and each layer norm's
// rstd (s*b*4).
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/FlopCount.h"

#include "Parc/IR/ParcDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

constexpr int64_t kHidden = 512, kHeads = 8, kSeq = 1024, kBatch = 2;

/// A GPT-2 style layer: pre-LN attention with biased q/k/v/out projections,
/// pre-LN GELU MLP of width 4h, residual adds.
std::string gptLayer() {
  std::string text = R"mlir(
parc.model @gpt class "GPT" {
  parc.module @layer "Block" composite {
    parc.module @ln_1 "LayerNorm" leaf {
      parc.param @weight : tensor<$Hxbf16>
      parc.param @bias : tensor<$Hxbf16>
    }
    parc.module @q "Linear" leaf {
      parc.param @weight : tensor<$Hx$Hxbf16>
    }
    parc.module @k "Linear" leaf {
      parc.param @weight : tensor<$Hx$Hxbf16>
    }
    parc.module @v "Linear" leaf {
      parc.param @weight : tensor<$Hx$Hxbf16>
    }
    parc.module @c_proj "Linear" leaf {
      parc.param @weight : tensor<$Hx$Hxbf16>
    }
    parc.module @ln_2 "LayerNorm" leaf {
      parc.param @weight : tensor<$Hxbf16>
      parc.param @bias : tensor<$Hxbf16>
    }
    parc.module @c_fc "Linear" leaf {
      parc.param @weight : tensor<$Fx$Hxbf16>
    }
    parc.module @mlp_proj "Linear" leaf {
      parc.param @weight : tensor<$Hx$Fxbf16>
    }
    func.func @forward(%x: tensor<?x?x$Hxbf16>) -> tensor<?x?x$Hxbf16> {
      %n1 = parc.layer_norm %x, @ln_1::@weight bias @ln_1::@bias {eps = 1.0e-5 : f64} : tensor<?x?x$Hxbf16>
      %q = parc.linear %n1, @q::@weight : tensor<?x?x$Hxbf16> -> tensor<?x?x$Hxbf16>
      %k = parc.linear %n1, @k::@weight : tensor<?x?x$Hxbf16> -> tensor<?x?x$Hxbf16>
      %v = parc.linear %n1, @v::@weight : tensor<?x?x$Hxbf16> -> tensor<?x?x$Hxbf16>
      %a = parc.attention %q, %k, %v {causal, head_dim = $D : i64, num_heads = $A : i64, num_kv_heads = $A : i64, scale = 0.125 : f64} : (tensor<?x?x$Hxbf16>, tensor<?x?x$Hxbf16>, tensor<?x?x$Hxbf16>) -> tensor<?x?x$Hxbf16>
      %o = parc.linear %a, @c_proj::@weight : tensor<?x?x$Hxbf16> -> tensor<?x?x$Hxbf16>
      %r = parc.add %x, %o : tensor<?x?x$Hxbf16>
      %n2 = parc.layer_norm %r, @ln_2::@weight bias @ln_2::@bias {eps = 1.0e-5 : f64} : tensor<?x?x$Hxbf16>
      %f = parc.linear %n2, @c_fc::@weight : tensor<?x?x$Hxbf16> -> tensor<?x?x$Fxbf16>
      %g = parc.activation gelu_tanh %f : tensor<?x?x$Fxbf16>
      %d = parc.linear %g, @mlp_proj::@weight : tensor<?x?x$Fxbf16> -> tensor<?x?x$Hxbf16>
      %y = parc.add %r, %d : tensor<?x?x$Hxbf16>
      return %y : tensor<?x?x$Hxbf16>
    }
  }
}
)mlir";
  auto replaceAll = [&](llvm::StringRef from, int64_t to) {
    std::string value = std::to_string(to);
    for (size_t pos = text.find(from.str()); pos != std::string::npos;
         pos = text.find(from.str(), pos + value.size()))
      text.replace(pos, from.size(), value);
  };
  replaceAll("$H", kHidden);
  replaceAll("$F", 4 * kHidden);
  replaceAll("$D", kHidden / kHeads);
  replaceAll("$A", kHeads);
  return text;
}

class GptLayerTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<ParcDialect>();
    module = parseSourceString<mlir::ModuleOp>(gptLayer(), &context);
    ASSERT_TRUE(module);
    auto model = *module->getOps<ModelOp>().begin();
    layer = cast<NNModuleOp>(lookupDottedPath(model, "layer"));
  }

  MLIRContext context;
  OwningOpRef<mlir::ModuleOp> module;
  NNModuleOp layer;
  const int64_t sbh = kSeq * kBatch * kHidden;
  const int64_t statistics = kHeads * kSeq * kBatch * 4 + 2 * kSeq * kBatch * 4;
};

TEST_F(GptLayerTest, NoRematMatchesKorthikantiLessAttentionMatrixAndDropout) {
  LayerActivationBytes bytes =
      estimateLayerActivations(layer, RematKind::None, kBatch, kSeq,
                               /*elementBytes=*/2);
  double closedForm = sbh * (34.0 + 5.0 * kHeads * kSeq / kHidden);
  double attentionMatrix = sbh * 5.0 * kHeads * kSeq / kHidden;
  double dropoutMasks = 2.0 * sbh;
  EXPECT_EQ(double(bytes.saved),
            closedForm - attentionMatrix - dropoutMasks + statistics);
  // Against the closed form without the attention-matrix term: 32 of 34.
  double flashForm = sbh * 34.0;
  std::printf("no remat: parc %lld bytes, Korthikanti flash form %.0f "
              "(ratio %.4f; the difference is the dropout masks less fp32 "
              "statistics)\n",
              (long long)bytes.saved, flashForm, bytes.saved / flashForm);
  EXPECT_EQ(bytes.recomputed, 0);
}

TEST_F(GptLayerTest, FullRematKeepsOnlyTheLayerInput) {
  LayerActivationBytes bytes =
      estimateLayerActivations(layer, RematKind::Full, kBatch, kSeq, 2);
  EXPECT_EQ(bytes.saved, 2 * sbh);
  // Backward rebuilds everything the layer would have saved.
  EXPECT_EQ(bytes.recomputed, 32 * sbh + statistics);
}

TEST_F(GptLayerTest, SelectiveKeepsWhatCheckpointedGroupsAndKeptOpsNeed) {
  // Mark what --apply-remat=mode=selective marks.
  layer.walk([&](Operation *op) {
    if (isa<LayerNormOp, AddOp, ActivationOp>(op))
      op->setAttr("parc.recompute", UnitAttr::get(&context));
  });
  LayerActivationBytes bytes =
      estimateLayerActivations(layer, RematKind::Selective, kBatch, kSeq, 2);
  // The recomputed ops run as checkpointed groups ({ln_1}, {add, ln_2,
  // add}, {gelu}), each keeping its inputs; the ops not recomputed keep
  // what their backward needs. Kept: x, ln_1 out (q/k/v's input), q, k, v,
  // attention out, c_proj out and mlp_proj out (the adds' inputs), ln_2 out
  // (c_fc's input), c_fc out (gelu's input, 4h) and gelu out (mlp_proj's,
  // 4h): 17 * sbh elements of 2 bytes, and attention's logsumexp; one
  // tensor more than no remat at all (which keeps the residual r instead of
  // the two projections' outputs), so on a flash-attention GPT layer this
  // marking saves nothing.
  EXPECT_EQ(bytes.saved, 34 * sbh + kHeads * kSeq * kBatch * 4);
  // Rebuilt: the residual r (h) and both layer norms' rstd.
  EXPECT_EQ(bytes.recomputed, 2 * sbh + 2 * kSeq * kBatch * 4);
}

TEST_F(GptLayerTest, OpPolicyKeepsTheInputAndTheSaveListOutputs) {
  // Mark what --apply-remat=mode=op marks: attention and the 1st, 3rd and
  // 5th matmul (q, v, c_fc; k, c_proj and mlp_proj are rerun).
  int matmuls = 0;
  layer.walk([&](Operation *op) {
    if (isa<AttentionOp>(op) || (isa<LinearOp>(op) && ++matmuls % 2 == 1))
      op->setAttr(kRematSaveAttrName, UnitAttr::get(&context));
  });
  LayerActivationBytes bytes =
      estimateLayerActivations(layer, RematKind::Op, kBatch, kSeq, 2);
  // x, q, v and the attention output (h each), c_fc's output (4h), and
  // attention's logsumexp: half of full remat's rebuild stays.
  EXPECT_EQ(bytes.saved, 16 * sbh + kHeads * kSeq * kBatch * 4);
  // The rerun rebuilds the rest of what no remat keeps: 32 sbh less the
  // 16 sbh kept, and the two layer norms' rstd.
  EXPECT_EQ(bytes.recomputed, 16 * sbh + 2 * kSeq * kBatch * 4);
  LayerActivationBytes none =
      estimateLayerActivations(layer, RematKind::None, kBatch, kSeq, 2);
  EXPECT_EQ(bytes.saved + bytes.recomputed, none.saved);
  // The rerun skips the kept ops: attention and q, v, c_fc (h^2, h^2, 4h^2
  // multiply-adds per token).
  FlopCount all = countLayerFlops(layer, RematKind::None, kBatch, kSeq);
  FlopCount op = countLayerFlops(layer, RematKind::Op, kBatch, kSeq);
  double tokens = kBatch * kSeq;
  EXPECT_DOUBLE_EQ(op.recompute, all.forward - all.attentionForward -
                                     2 * tokens * 6 * kHidden * kHidden);
}

} // namespace
