//===- OpInterfacesTest.cpp - an op the analyses learn from its interfaces ===//
//
// Adding an op touches its ODS definition, its interfaces and its runtime
// kernel. parc_test.square (TestOps.td) implements FlopsOpInterface and
// AutogradOpInterface only; the FLOP count, the saved bytes and selective
// remat must all see it.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include "TestDialect.h.inc"
#define GET_OP_CLASSES
#include "TestOps.h.inc"

#include "TestDialect.cpp.inc"
#define GET_OP_CLASSES
#include "TestOps.cpp.inc"

using namespace mlir;
using namespace mlir::parc;

void parc_test::TestDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TestOps.cpp.inc"
      >();
}

double parc_test::SquareOp::getFlopsPerElement() { return 1; }
bool parc_test::SquareOp::isCheapToRecompute() { return true; }
void parc_test::SquareOp::recordSaves(SaveRecorder &saves) {
  saves.saveOperand(0);
}

namespace {

constexpr int64_t kBatch = 2, kSeq = 8, kHidden = 16;

/// One layer: a linear, then the test op twice.
constexpr const char *kLayer = R"mlir(
parc.model @m class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 1>]} {
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.module @proj "Linear" leaf {
        parc.param @weight : tensor<16x16xf32>
      }
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %y = parc.linear %x, @proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
        %z = parc_test.square %y : tensor<?x?x16xf32>
        %w = parc_test.square %z : tensor<?x?x16xf32>
        return %w : tensor<?x?x16xf32>
      }
    }
  }
}
)mlir";

class OpInterfacesTest : public ::testing::Test {
protected:
  void SetUp() override {
    context
        .loadDialect<ParcDialect, func::FuncDialect, parc_test::TestDialect>();
    module = parseSourceString<ModuleOp>(kLayer, &context);
    ASSERT_TRUE(module);
    model = *module->getOps<ModelOp>().begin();
    layer = cast<NNModuleOp>(lookupDottedPath(model, "layers.0"));
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  ModelOp model;
  NNModuleOp layer;
  const double elements = kBatch * kSeq * kHidden;
};

TEST_F(OpInterfacesTest, CostModelCountsTheOpsFlops) {
  FlopCount flops = countLayerFlops(layer, RematKind::None, kBatch, kSeq);
  double linear = 2 * elements * kHidden;
  EXPECT_DOUBLE_EQ(flops.matmulForward, linear);
  EXPECT_DOUBLE_EQ(flops.forward, linear + 2 * elements);
  // Backward: the linear's weight and input gradients, and twice each
  // square's forward (the elementwise convention).
  EXPECT_DOUBLE_EQ(flops.backward, 2 * linear + 4 * elements);
}

TEST_F(OpInterfacesTest, ActivationTraceKeepsWhatTheOpSaves) {
  // The linear keeps x, the squares y and z: three fp32 activations.
  LayerActivationBytes none =
      estimateLayerActivations(layer, RematKind::None, kBatch, kSeq, 4);
  EXPECT_EQ(none.saved, int64_t(3 * elements * 4));
  EXPECT_EQ(none.recomputed, 0);
}

TEST_F(OpInterfacesTest, SelectiveRematRecomputesACheapOp) {
  registerParcPasses();
  PassManager pm = PassManager::on<ModuleOp>(&context);
  ASSERT_TRUE(succeeded(
      parsePassPipeline("parc.model(apply-remat{mode=selective})", pm)));
  ASSERT_TRUE(succeeded(pm.run(*module)));
  int64_t squares = 0;
  layer.walk([&](parc_test::SquareOp op) {
    EXPECT_TRUE(op->hasAttr("parc.recompute"));
    ++squares;
  });
  EXPECT_EQ(squares, 2);
  EXPECT_EQ(getRemat(layer), RematKind::Selective);
  // The recomputed group (both squares) keeps its input y; z is rebuilt.
  LayerActivationBytes selective =
      estimateLayerActivations(layer, RematKind::Selective, kBatch, kSeq, 4);
  EXPECT_EQ(selective.saved, int64_t(2 * elements * 4));
  EXPECT_EQ(selective.recomputed, int64_t(elements * 4));
  FlopCount flops = countLayerFlops(layer, RematKind::Selective, kBatch, kSeq);
  EXPECT_DOUBLE_EQ(flops.recompute, 2 * elements);
}

} // namespace
