//===- ImportTest.cpp - importHFConfig as a library -----------------------===//

#include "parc/Analysis/ModelStats.h"
#include "parc/Import/HFConfig.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

constexpr const char *kTinyLlama = R"({
  "model_type": "llama",
  "hidden_size": 64,
  "intermediate_size": 128,
  "num_hidden_layers": 3,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "vocab_size": 100,
  "tie_word_embeddings": true
})";

TEST(ImportTest, TinyLlamaHasThePathsAndCountsOfTransformers) {
  MLIRContext context;
  OwningOpRef<mlir::ModuleOp> module =
      importHFConfig(kTinyLlama, "tiny.json", &context);
  ASSERT_TRUE(module);
  auto model = *module->getOps<ModelOp>().begin();
  EXPECT_EQ(model.getSymName(), "tiny");
  Operation *qProj =
      lookupDottedPath(model, "model.layers.2.self_attn.q_proj.weight");
  ASSERT_TRUE(qProj);
  EXPECT_EQ(getDottedPath(qProj), "model.layers.2.self_attn.q_proj.weight");
  EXPECT_FALSE(lookupDottedPath(model, "model.layers.3"));

  ModelStats stats = ModelStats::compute(model);
  // embed 100*64, per layer q 64*64 + k,v 32*64 + o 64*64 + mlp 3*64*128 +
  // norms 2*64, final norm 64; lm_head tied.
  int64_t perLayer = 64 * 64 * 2 + 32 * 64 * 2 + 3 * 64 * 128 + 2 * 64;
  EXPECT_EQ(stats.totalParameters, 100 * 64 + 3 * perLayer + 64);
  ASSERT_EQ(stats.tieGroups.size(), 1u);
  EXPECT_EQ(stats.tieGroups[0][0], "model.embed_tokens.weight");
  EXPECT_EQ(stats.aliasOwner.lookup("lm_head.weight"),
            "model.embed_tokens.weight");
  // The dtype defaults to float32 when the config names none.
  EXPECT_EQ(stats.parametersByDtype.at("f32"), stats.totalParameters);
}

TEST(ImportTest, RefusalYieldsNoModule) {
  MLIRContext context;
  context.getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  EXPECT_FALSE(importHFConfig(R"({"model_type": "bert"})", "x.json", &context));
  EXPECT_FALSE(importHFConfig("{", "x.json", &context));
}

TEST(ImportTest, SupportedModelTypesAreListed) {
  ArrayRef<StringRef> types = getSupportedModelTypes();
  EXPECT_NE(llvm::find(types, "gemma4"), types.end());
  EXPECT_NE(llvm::find(types, "qwen3"), types.end());
}

} // namespace
