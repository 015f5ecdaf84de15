//===- RecipeTest.cpp - reading recipes, --set and flags ------------------===//

#include "parc/Plan/Recipe.h"
#include "parc/Plan/Planner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <random>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// Records diagnostics as "where: message", where is "line:col" for a
/// recipe position and the setting's spelling for a --set or flag.
class DiagnosticLog {
public:
  explicit DiagnosticLog(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          std::string where;
          Location loc = diag.getLocation();
          if (auto file = dyn_cast<FileLineColLoc>(loc))
            where = (llvm::Twine(file.getLine()) + ":" +
                     llvm::Twine(file.getColumn()) + ": ")
                        .str();
          else if (auto name = dyn_cast<NameLoc>(loc))
            where = name.getName().str() + ": ";
          messages.push_back(where + diag.str());
        }) {}

  std::string joined() const {
    std::string all;
    for (const std::string &message : messages)
      all += message + "\n";
    return all;
  }
  bool contains(llvm::StringRef text) const {
    return llvm::StringRef(joined()).contains(text);
  }

  std::vector<std::string> messages;

private:
  ScopedDiagnosticHandler handler;
};

/// A directory holding the config.json recipes name, removed afterwards.
class RecipeDir {
public:
  RecipeDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("parc-recipe", path));
    llvm::SmallString<256> config(path);
    llvm::sys::path::append(config, "config.json");
    std::error_code ec;
    llvm::raw_fd_ostream os(config, ec);
    os << "{}\n";
  }
  ~RecipeDir() { llvm::sys::fs::remove_directories(path); }

  llvm::SmallString<256> path;
};

constexpr const char *kRecipe = R"yaml(model:
  hf_config: config.json
train:
  seq_len: 4096
  micro_batch_size: 2
  global_batch_size: 64
  master_dtype: bf16
  frozen: [model.vision_tower]
cluster:
  hardware: h100-80gb
  nodes: 2
  gpus_per_node: 8
parallel:
  remat: every:2
  remat_scope: language
)yaml";

struct RecipeTest : public ::testing::Test {
  FailureOr<PlanRequest> read(llvm::StringRef text,
                              llvm::ArrayRef<RecipeSetting> settings = {}) {
    return readRecipe(text, "recipe.yaml", dir.path, settings, &context);
  }
  RecipeSetting set(llvm::StringRef text) {
    FailureOr<RecipeSetting> setting = parseSetOption(text, &context);
    EXPECT_TRUE(succeeded(setting)) << log.joined();
    return succeeded(setting) ? *setting : RecipeSetting();
  }

  MLIRContext context;
  DiagnosticLog log{context};
  RecipeDir dir;
};

TEST_F(RecipeTest, ReadsEverySectionWithDefaults) {
  FailureOr<PlanRequest> request = read(kRecipe);
  ASSERT_TRUE(succeeded(request)) << log.joined();
  llvm::SmallString<256> config(dir.path);
  llvm::sys::path::append(config, "config.json");
  EXPECT_EQ(request->hfConfigPath, std::string(config));
  EXPECT_EQ(request->seqLen, 4096);
  EXPECT_EQ(request->microBatchSize, 2);
  EXPECT_EQ(request->computeDtype, StorageDtype::BF16);
  EXPECT_EQ(request->masterDtype, StorageDtype::BF16);
  EXPECT_EQ(request->gradReduceDtype, StorageDtype::FP32);
  EXPECT_EQ(request->optimDtype, StorageDtype::FP32);
  EXPECT_EQ(request->optimizer, "adamw");
  EXPECT_EQ(request->frozen, std::vector<std::string>{"model.vision_tower"});
  EXPECT_EQ(request->hardware, "h100-80gb");
  EXPECT_EQ(request->getWorldSize(), 16);
  // FSDP takes every GPU tp and pp leave.
  EXPECT_EQ(request->fsdp, 16);
  EXPECT_EQ(request->tp, 1);
  EXPECT_EQ(request->pp, 1);
  EXPECT_EQ(request->remat, "every:2");
  EXPECT_EQ(request->rematScope, "language");
  // 64 / (2 x 16).
  EXPECT_EQ(request->gradAccumulation, 2);
  EXPECT_TRUE(log.messages.empty()) << log.joined();

  auto loc = dyn_cast<FileLineColLoc>(request->getLocation("cluster.hardware"));
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc.getLine(), 10u);
  EXPECT_EQ(loc.getColumn(), 3u);
}

TEST_F(RecipeTest, GlobalBatchDefaultsToOneStepOfMicroBatches) {
  FailureOr<PlanRequest> request = read(R"yaml(model: {hf_config: config.json}
train: {seq_len: 128, micro_batch_size: 4}
cluster: {hardware: cpu, gpus: 2}
)yaml");
  ASSERT_TRUE(succeeded(request)) << log.joined();
  EXPECT_EQ(request->gpusPerNode, 2);
  EXPECT_EQ(request->globalBatchSize, 8);
  EXPECT_EQ(request->gradAccumulation, 1);
}

TEST_F(RecipeTest, UnknownKeysAndSectionsNameTheLine) {
  EXPECT_TRUE(failed(read(R"yaml(model:
  hf_config: config.json
train:
  seq_len: 4096
  seqlen: 4096
cluster:
  hardware: h100-80gb
  gpus_per_node: 8
paralel:
  fsdp: 8
)yaml")));
  EXPECT_TRUE(log.contains("5:3: unknown key 'seqlen' in section 'train' "
                           "(known: seq_len, micro_batch_size,"))
      << log.joined();
  EXPECT_TRUE(log.contains("9:1: unknown section 'paralel' (known: model, "
                           "train, cluster, parallel, search)"))
      << log.joined();
}

TEST_F(RecipeTest, WrongTypesNameTheKeyAndLine) {
  EXPECT_TRUE(failed(read(R"yaml(model:
  hf_config: config.json
train:
  seq_len: long
  micro_batch_size: "2"
  compute_dtype: float32
  frozen: {a: b}
cluster:
  hardware: [h100-80gb]
  gpus_per_node: 8
)yaml")));
  EXPECT_TRUE(log.contains(
      "4:3: key 'train.seq_len' must be a positive integer, got 'long'"))
      << log.joined();
  EXPECT_TRUE(log.contains("5:3: key 'train.micro_batch_size' must be a "
                           "positive integer, got the quoted string '2'"))
      << log.joined();
  EXPECT_TRUE(log.contains("6:3: key 'train.compute_dtype' must be one of "
                           "bf16, fp16, fp32, got 'float32'"))
      << log.joined();
  EXPECT_TRUE(log.contains(
      "7:3: key 'train.frozen' must be a list of dotted paths, got a mapping"))
      << log.joined();
  EXPECT_TRUE(
      log.contains("9:3: key 'cluster.hardware' must be a string, got a list"))
      << log.joined();
}

TEST_F(RecipeTest, ImpossibleValuesAreRefused) {
  EXPECT_TRUE(failed(read(R"yaml(model: {hf_config: config.json}
train: {seq_len: 0, optimizer: sgd}
cluster: {hardware: h100-80gb, gpus_per_node: 8}
parallel: {remat: every:0, remat_scope: audio}
)yaml")));
  EXPECT_TRUE(log.contains("key 'train.seq_len' must be positive, got 0"));
  EXPECT_TRUE(
      log.contains("key 'train.optimizer' must be one of adamw, got 'sgd'"));
  EXPECT_TRUE(log.contains(
      "key 'parallel.remat' must be one of full, "
      "selective, every:N (N > 0), budget, op, none, got 'every:0'"));
  EXPECT_TRUE(log.contains("key 'parallel.remat_scope' must be one of all, "
                           "language, vision, got 'audio'"))
      << log.joined();
}

TEST_F(RecipeTest, GlobalBatchRemainderIsAnError) {
  EXPECT_TRUE(failed(read(R"yaml(model: {hf_config: config.json}
train:
  seq_len: 4096
  global_batch_size: 12
cluster: {hardware: h100-80gb, gpus_per_node: 8}
)yaml")));
  EXPECT_TRUE(log.contains("4:3: global_batch_size 12 is not a multiple of "
                           "micro_batch_size 1 x data-parallel ranks 8 = 8"))
      << log.joined();
}

TEST_F(RecipeTest, ParallelismMustUseEveryGpu) {
  EXPECT_TRUE(failed(read(R"yaml(model: {hf_config: config.json}
train: {seq_len: 4096}
cluster: {hardware: h100-80gb, gpus_per_node: 8}
parallel:
  fsdp: 2
  tp: 2
)yaml")));
  EXPECT_TRUE(log.contains("5:3: fsdp 2 x tp 2 x pp 1 = 4 GPUs, but the "
                           "cluster has 8 GPUs (1 node x 8)"))
      << log.joined();
}

TEST_F(RecipeTest, MissingKeysAndFilesAreNamed) {
  EXPECT_TRUE(failed(read(R"yaml(model: {hf_config: absent.json}
cluster: {nodes: 2}
)yaml")));
  EXPECT_TRUE(log.contains("1:9: key 'model.hf_config' names 'absent.json', "
                           "which does not exist (resolved against the "
                           "recipe's directory: "))
      << log.joined();
  EXPECT_TRUE(
      log.contains("1:1: missing required key 'train.seq_len' (flag --seq)"));
  EXPECT_TRUE(log.contains(
      "1:1: missing required key 'cluster.hardware' (flag --hardware)"));
}

TEST_F(RecipeTest, MalformedYamlReportsTheLine) {
  EXPECT_TRUE(failed(read("model:\n  hf_config: config.json\n  mlir: a: b\n")));
  ASSERT_EQ(log.messages.size(), 1u) << log.joined();
  EXPECT_EQ(log.messages[0].rfind("3:", 0), 0u) << log.messages[0];
  EXPECT_TRUE(log.contains("malformed recipe: "));
}

TEST_F(RecipeTest, DuplicateKeysAreAnError) {
  EXPECT_TRUE(failed(read(R"yaml(model: {hf_config: config.json}
train:
  seq_len: 4096
  seq_len: 8192
cluster: {hardware: h100-80gb, gpus_per_node: 8}
)yaml")));
  EXPECT_TRUE(log.contains("4:3: key 'train.seq_len' is given twice"))
      << log.joined();
}

TEST_F(RecipeTest, SetOverridesTheRecipe) {
  FailureOr<PlanRequest> request =
      read(kRecipe, {set("train.seq_len=8192"), set("parallel.remat=full"),
                     set("parallel.stacks=[model.layers, model.encoder]")});
  ASSERT_TRUE(succeeded(request)) << log.joined();
  EXPECT_EQ(request->seqLen, 8192);
  EXPECT_EQ(request->remat, "full");
  EXPECT_EQ(request->stacks,
            (std::vector<std::string>{"model.layers", "model.encoder"}));
  auto origin = dyn_cast<NameLoc>(request->getLocation("train.seq_len"));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin.getName().str(), "--set train.seq_len=8192");
}

TEST_F(RecipeTest, BadSetValuesNameTheSet) {
  EXPECT_TRUE(failed(parseSetOption("train.seq_len", &context)));
  EXPECT_TRUE(failed(parseSetOption("train.seqlen=1", &context)));
  EXPECT_TRUE(log.contains("--set train.seq_len: --set expects key=value"));
  EXPECT_TRUE(log.contains(
      "--set train.seqlen=1: unknown recipe key 'train.seqlen' (known: "))
      << log.joined();
  log.messages.clear();
  EXPECT_TRUE(failed(read(kRecipe, {set("parallel.fsdp=8")})));
  EXPECT_TRUE(log.contains("--set parallel.fsdp=8: fsdp 8 x tp 1 x pp 1 = 8 "
                           "GPUs, but the cluster has 16 GPUs (2 nodes x 8)"))
      << log.joined();
}

TEST_F(RecipeTest, FlagsFillTheSameRequest) {
  auto flag = [](llvm::StringRef key, llvm::StringRef value) {
    RecipeSetting setting;
    setting.key = key.str();
    setting.value = value.str();
    setting.isYaml = false;
    setting.origin = "--" + key.str();
    return setting;
  };
  RecipeSetting freeze;
  freeze.key = "train.frozen";
  freeze.items = {"model.a", "model.b"};
  freeze.hasItems = true;
  freeze.origin = "--freeze";
  llvm::SmallString<256> config(dir.path);
  llvm::sys::path::append(config, "config.json");
  FailureOr<PlanRequest> request = buildPlanRequest(
      {flag("model.hf_config", config), flag("cluster.hardware", "cpu"),
       flag("cluster.gpus", "2"), flag("train.seq_len", "256"),
       flag("train.global_batch_size", "8"),
       flag("train.compute_dtype", "fp32"), freeze},
      &context);
  ASSERT_TRUE(succeeded(request)) << log.joined();
  EXPECT_EQ(request->hfConfigPath, std::string(config));
  EXPECT_EQ(request->fsdp, 2);
  EXPECT_EQ(request->gradAccumulation, 4);
  EXPECT_EQ(request->computeDtype, StorageDtype::FP32);
  EXPECT_EQ(request->frozen, (std::vector<std::string>{"model.a", "model.b"}));

  EXPECT_TRUE(failed(buildPlanRequest({flag("train.seq_len", "x")}, &context)));
  EXPECT_TRUE(log.contains(
      "--train.seq_len: key 'train.seq_len' must be a positive integer"))
      << log.joined();
  EXPECT_TRUE(log.contains("missing required key 'model.hf_config' or "
                           "'model.mlir' (flag --model or --mlir)"));
}

TEST_F(RecipeTest, EveryKeyHasAFlag) {
  llvm::StringSet<> flags;
  for (const RecipeKey &key : getRecipeKeys()) {
    EXPECT_TRUE(flags.insert(key.flag).second) << key.flag.str();
    EXPECT_TRUE(succeeded(parseSetOption((key.key + "=1").str(), &context)));
  }
}

TEST_F(RecipeTest, PipelineFollowsTheRequest) {
  FailureOr<PlanRequest> request = read(kRecipe, {set("parallel.remat=none")});
  ASSERT_TRUE(succeeded(request)) << log.joined();
  auto pipelineOf = [&](const PlanRequest &r) {
    PassManager pm(&context, ModuleOp::getOperationName());
    buildPlanPipeline(pm, r);
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return text;
  };
  std::string none = pipelineOf(*request);
  EXPECT_EQ(none.find("apply-remat"), std::string::npos) << none;
  EXPECT_NE(none.find("shards=16"), std::string::npos) << none;
  EXPECT_NE(none.find("master-dtype=bf16"), std::string::npos) << none;
  EXPECT_NE(none.find("reduce-dtype=f32"), std::string::npos) << none;

  request->remat = "selective";
  request->stacks = {"model.layers"};
  std::string selective = pipelineOf(*request);
  EXPECT_NE(selective.find("discover-layers{stacks={model.layers}}"),
            std::string::npos)
      << selective;
  EXPECT_NE(selective.find("mode=selective norm-kernel=profile scope=language"),
            std::string::npos)
      << selective;
}

/// Every field a plan depends on, for comparing two requests.
std::string describe(const PlanRequest &r) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << r.hfConfigPath << "|" << r.mlirPath << "|" << r.seqLen << "|"
     << r.microBatchSize << "|" << r.globalBatchSize << "|"
     << getRecipeDtypeName(r.computeDtype) << getRecipeDtypeName(r.masterDtype)
     << getRecipeDtypeName(r.gradReduceDtype)
     << getRecipeDtypeName(r.optimDtype) << "|" << r.optimizer << "|"
     << llvm::format("%.17g", r.maxNorm) << "|";
  for (const std::string &path : r.frozen)
    os << path << ",";
  os << "|" << r.hardware << "|" << r.nodes << "|" << r.gpusPerNode << "|"
     << r.dp << "|" << r.fsdp << "|" << r.tp << "|" << r.pp << "|"
     << r.ppSchedule << "|" << r.ppChunks << "|";
  for (int64_t layers : r.ppSplit)
    os << layers << ",";
  os << "|" << r.microbatches << "|" << r.fsdpPrefetch << "|"
     << r.reshardAfterForward << "|" << r.fsdpGradSync << "|"
     << r.sequenceParallel << "|" << r.lossParallel << "|" << r.remat << "|"
     << r.rematScope << "|" << llvm::format("%.17g", r.rematMargin) << "|";
  for (const std::string &path : r.stacks)
    os << path << ",";
  os << "|" << r.gradAccumulation;
  return text;
}

// parc-plan --auto --emit-recipe writes the winner with writeRecipe: read
// back, it is the same request, for requests drawn at random (fixed seed)
// over every key the writer emits.
TEST_F(RecipeTest, WrittenRecipeReadsBackToTheSameRequest) {
  std::mt19937_64 random(20261206);
  auto pick = [&](auto... choices) {
    std::string options[] = {choices...};
    return options[random() % sizeof...(choices)];
  };
  for (int draw = 0; draw < 64; ++draw) {
    int64_t gpusPerNode = int64_t(1) << (random() % 4),
            nodes = 1 + random() % 4;
    int64_t world = gpusPerNode * nodes;
    auto divisorOf = [&](int64_t n) {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= n; ++d)
        if (n % d == 0)
          divisors.push_back(d);
      return divisors[random() % divisors.size()];
    };
    int64_t tp = divisorOf(world), pp = divisorOf(world / tp);
    int64_t dp = divisorOf(world / (tp * pp)), fsdp = world / (tp * pp * dp);
    int64_t mbs = 1 + random() % 4, accumulation = pp + random() % 4;
    std::string schedule =
        pp > 1 ? pick("gpipe", "1f1b", "interleaved-1f1b") : "1f1b";
    std::vector<RecipeSetting> settings = {
        set("cluster.nodes=" + std::to_string(nodes)),
        set("cluster.gpus_per_node=" + std::to_string(gpusPerNode)),
        set("parallel.tp=" + std::to_string(tp)),
        set("parallel.pp=" + std::to_string(pp)),
        set("parallel.dp=" + std::to_string(dp)),
        set("parallel.fsdp=" + std::to_string(fsdp)),
        set("parallel.pp_schedule=" + schedule),
        set("parallel.pp_chunks=" +
            std::string(schedule == "interleaved-1f1b" ? "2" : "1")),
        set("train.micro_batch_size=" + std::to_string(mbs)),
        set("train.global_batch_size=" +
            std::to_string(mbs * dp * fsdp * accumulation)),
        set("train.seq_len=" + std::to_string(128 << (random() % 6))),
        set("train.max_norm=" + pick("0", "1.0", "0.3", "2.5e-1")),
        set("train.optim_dtype=" + pick("bf16", "fp32")),
        set("train.frozen=" +
            pick("[]", "[model.vision_tower]", "['a.b', \"c\"]")),
        set("parallel.remat=" +
            (pp == 1 && random() % 5 == 0
                 ? std::string("budget")
                 : pick("none", "selective", "full", "every:3"))),
        set("parallel.remat_scope=" + pick("all", "language", "vision")),
        set("parallel.remat_margin=" + pick("0", "0.05", "0.125", "0.5")),
        set("parallel.fsdp_prefetch=" + pick("0", "1", "2")),
        set("parallel.fsdp_reshard_after_forward=" + pick("true", "false")),
        set("parallel.fsdp_grad_sync=" +
            pick("every-micro-batch", "last-micro-batch")),
        set("parallel.sequence_parallel=" + pick("true", "false")),
        set("parallel.loss_parallel=" + pick("true", "false")),
        set("parallel.stacks=" + pick("[]", "[model.layers]")),
    };
    FailureOr<PlanRequest> request = read(kRecipe, settings);
    ASSERT_TRUE(succeeded(request)) << "draw " << draw << ": " << log.joined();
    std::string text;
    llvm::raw_string_ostream os(text);
    writeRecipe(*request, os);
    FailureOr<PlanRequest> again = read(text);
    ASSERT_TRUE(succeeded(again)) << text << log.joined();
    EXPECT_EQ(describe(*request), describe(*again)) << text;
  }
}

} // namespace
