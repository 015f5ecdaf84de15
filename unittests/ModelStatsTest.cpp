//===- ModelStatsTest.cpp - parameter counting with ties ------------------===//

#include "parc/Analysis/ModelStats.h"

#include "Parc/IR/ParcDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

constexpr const char *kModel = R"mlir(
parc.model @m class "M" {
  parc.module @enc "Encoder" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<10x4xbf16>
    }
    parc.module @norm "Norm" leaf {
      parc.param @weight : tensor<4xf32>
    }
  }
  parc.module @dec "Linear" leaf {
    parc.param @weight : tensor<10x4xbf16>
  }
  parc.module @head "Linear" leaf {
    parc.param @weight : tensor<10x4xbf16>
  }
  parc.tie [@enc::@embed::@weight, @dec::@weight, @head::@weight]
}
)mlir";

TEST(ModelStatsTest, ATieGroupOfThreeCountsOnce) {
  MLIRContext context;
  context.loadDialect<ParcDialect>();
  OwningOpRef<mlir::ModuleOp> module =
      parseSourceString<mlir::ModuleOp>(kModel, &context);
  ASSERT_TRUE(module);
  auto model = *module->getOps<ModelOp>().begin();
  ModelStats stats = ModelStats::compute(model);
  EXPECT_EQ(stats.totalParameters, 44);
  EXPECT_EQ(stats.parametersByDtype.at("bf16"), 40);
  EXPECT_EQ(stats.parametersByDtype.at("f32"), 4);
  EXPECT_EQ(stats.aliasOwner.size(), 2u);

  std::string text;
  llvm::raw_string_ostream os(text);
  stats.print(model, os, /*maxDepth=*/1);
  EXPECT_EQ(text.substr(0, 3), "44\n");
  EXPECT_NE(text.find("enc.embed.weight = dec.weight = head.weight"),
            std::string::npos);
}

} // namespace
