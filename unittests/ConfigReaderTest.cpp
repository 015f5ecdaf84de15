//===- ConfigReaderTest.cpp - config.json access and key locations --------===//

#include "Import/ConfigReader.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

/// Collects diagnostics instead of printing them.
struct CapturedDiagnostics {
  explicit CapturedDiagnostics(MLIRContext &context)
      : handler(context.getDiagEngine().registerHandler([this](Diagnostic &d) {
          messages.push_back(d.str());
          std::string loc;
          llvm::raw_string_ostream os(loc);
          d.getLocation().print(os);
          locations.push_back(loc);
          return success();
        })),
        context(context) {}
  ~CapturedDiagnostics() { context.getDiagEngine().eraseHandler(handler); }

  std::vector<std::string> messages, locations;
  DiagnosticEngine::HandlerID handler;
  MLIRContext &context;
};

constexpr const char *kConfig = R"({
  "model_type": "llama",
  "hidden_size": 64,
  "text_config": {
    "hidden_size": 32,
    "rope_theta": 10000.0
  }
})";

TEST(ConfigReaderTest, LocatesNestedKeysOnTheirLine) {
  MLIRContext context;
  ConfigReader reader(&context, "cfg.json", kConfig);
  ASSERT_TRUE(succeeded(reader.parse()));
  std::string loc;
  llvm::raw_string_ostream os(loc);
  reader.locate("text_config.hidden_size").print(os);
  // The nested key, not the top-level one on line 3.
  EXPECT_EQ(loc, "loc(\"cfg.json\":5:5)");
}

TEST(ConfigReaderTest, RecordsDefaultsAndEffectiveValues) {
  MLIRContext context;
  ConfigReader reader(&context, "cfg.json", kConfig);
  ASSERT_TRUE(succeeded(reader.parse()));
  ConfigSection root = reader.root();
  std::optional<ConfigSection> text = root.section("text_config");
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->getInt("hidden_size", 7), 32);
  EXPECT_EQ(text->getInt("num_hidden_layers", 12), 12);
  EXPECT_DOUBLE_EQ(text->getFloat("rope_theta", 1.0), 10000.0);
  EXPECT_FALSE(reader.hadError());
  ASSERT_EQ(reader.getDefaultedKeys().size(), 1u);
  EXPECT_EQ(reader.getDefaultedKeys()[0], "text_config.num_hidden_layers");
  DictionaryAttr effective = reader.getEffectiveConfig();
  auto layers = effective.getAs<IntegerAttr>("text_config.num_hidden_layers");
  ASSERT_TRUE(layers);
  EXPECT_EQ(layers.getInt(), 12);
}

TEST(ConfigReaderTest, WrongTypeIsAnErrorAtTheKey) {
  MLIRContext context;
  CapturedDiagnostics diagnostics(context);
  ConfigReader reader(&context, "cfg.json", kConfig);
  ASSERT_TRUE(succeeded(reader.parse()));
  EXPECT_EQ(reader.root().getInt("model_type", 3), 3);
  EXPECT_TRUE(reader.hadError());
  ASSERT_EQ(diagnostics.messages.size(), 1u);
  EXPECT_EQ(diagnostics.messages[0], "key 'model_type' must be an integer");
  EXPECT_EQ(diagnostics.locations[0], "loc(\"cfg.json\":2:3)");
}

TEST(ConfigReaderTest, MalformedJsonReportsLineAndColumn) {
  MLIRContext context;
  CapturedDiagnostics diagnostics(context);
  ConfigReader reader(&context, "bad.json", "{\n  \"a\": 1,\n  ]\n}");
  EXPECT_TRUE(failed(reader.parse()));
  ASSERT_EQ(diagnostics.locations.size(), 1u);
  EXPECT_EQ(diagnostics.locations[0], "loc(\"bad.json\":3:3)");
}

TEST(ConfigReaderTest, NullMeansDisabledNotDefault) {
  MLIRContext context;
  ConfigReader reader(&context, "cfg.json",
                      R"({"sliding_window": null, "softcap": null})");
  ASSERT_TRUE(succeeded(reader.parse()));
  EXPECT_FALSE(reader.root().getOptionalInt("sliding_window", 4096));
  EXPECT_FALSE(reader.root().getOptionalFloat("softcap", 30.0));
  EXPECT_EQ(reader.root().getOptionalInt("absent", 4096), 4096);
  EXPECT_TRUE(reader.getDefaultedKeys().size() == 1u);
}

} // namespace
