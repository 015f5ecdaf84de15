//===- Recipe.h - what to train, where and how ------------------*- C++ -*-===//
//
// A recipe (YAML) names a model, a batch, a cluster and a parallelism;
// parc-plan turns it into a pass pipeline. `--set key=value` overrides and
// parc-plan's flags are RecipeSettings over the same dotted keys, read by the
// same code, so a value is checked the same way wherever it comes from:
//
//   model:    hf_config | mlir
//   train:    seq_len, micro_batch_size, global_batch_size, compute_dtype,
//             master_dtype, grad_reduce_dtype, optim_dtype, optimizer, frozen
//   cluster:  hardware, nodes, gpus_per_node | gpus
//   parallel: dp, fsdp, tp, pp, pp_schedule, pp_chunks, pp_split, microbatches,
//             fsdp_prefetch, fsdp_reshard_after_forward,
//             fsdp_reshard_last_layer, fsdp_grad_sync,
//             sequence_parallel,
//             loss_parallel, remat, remat_scope, stacks
//   search:   auto, top
//
// This header is free of yaml-cpp: yaml-cpp reports errors by throwing, and
// only Recipe.cpp is built with exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_RECIPE_H
#define PARC_PLAN_RECIPE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "parc/Transforms/StorageDtype.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::parc {

/// Whose recipe a request was read from. The framework sets the defaults
/// of the execution policies a recipe leaves out: a torchtitan job does not
/// reshard after forward under PP and defers gradient sync to the last
/// micro-batch there (torch.distributed.pipelining's stage), and runs TP
/// with sequence and loss parallel; parc's own recipes default to FSDP2's
/// plain behaviour.
enum class RecipeFramework { Parc, Torchtitan, Nemo };

/// "parc", "torchtitan", "nemo-automodel".
StringRef getRecipeFrameworkName(RecipeFramework framework);

/// Everything parc-plan needs to plan one training run, checked: the GPU
/// count is used exactly, the global batch divides into micro-batches.
struct PlanRequest {
  // model: exactly one of the two, resolved against the recipe's directory.
  std::string hfConfigPath;
  std::string mlirPath;

  // train:
  int64_t seqLen = 0;
  /// Tokens per sample entering the vision stacks (their patches); 0 plans
  /// a text-only step.
  int64_t imageTokens = 0;
  int64_t microBatchSize = 1;
  int64_t globalBatchSize = 0;
  StorageDtype computeDtype = StorageDtype::BF16;
  StorageDtype masterDtype = StorageDtype::FP32;
  StorageDtype gradReduceDtype = StorageDtype::FP32;
  StorageDtype optimDtype = StorageDtype::FP32;
  std::string optimizer = "adamw";
  /// "foreach" (PyTorch's default on CUDA), "for-loop" or "fused".
  std::string optimizerImpl = "foreach";
  /// Clip gradients to this global norm before each optimizer step (0: no
  /// clipping); torchtitan's default.
  double maxNorm = 1.0;
  /// Dotted paths of modules that get no gradients.
  std::vector<std::string> frozen;
  /// The kernels of the ops whose saved tensors depend on them: "profile"
  /// (the hardware profile's), "flash" / "fused" or "eager".
  std::string attentionKernel = "profile";
  std::string normKernel = "profile";
  std::string lossKernel = "profile";
  /// How tensors get device memory: "profile" (the hardware profile's),
  /// "caching", "expandable-segments" (PYTORCH_CUDA_ALLOC_CONF's
  /// expandable_segments:True) or "direct".
  std::string allocator = "profile";

  // cluster:
  std::string hardware;
  int64_t nodes = 1;
  int64_t gpusPerNode = 0;

  // parallel:
  /// Data-parallel replicas of the FSDP groups (HSDP).
  int64_t dp = 1;
  int64_t fsdp = 0;
  int64_t tp = 1;
  int64_t pp = 1;
  /// "gpipe", "1f1b" or "interleaved-1f1b".
  std::string ppSchedule = "1f1b";
  int64_t ppChunks = 1;
  /// Layers per (virtual) stage, pinned; empty: the cost-balanced split.
  std::vector<int64_t> ppSplit;
  /// Micro-batches per optimizer step (the same as gradAccumulation once
  /// the recipe is read; the pipeline schedule runs this many).
  int64_t microbatches = 1;
  /// FSDP units gathered ahead (0: just in time), and whether a layer is
  /// resharded after its forward (FSDP2's reshard_after_forward).
  int64_t fsdpPrefetch = 1;
  bool reshardAfterForward = true;
  /// With reshardAfterForward, whether the last layer in execution order is
  /// resharded too (NeMo Automodel keeps it gathered for its backward).
  bool reshardLastLayer = true;
  /// When FSDP reduce-scatters gradients under gradient accumulation:
  /// "every-micro-batch" or "last-micro-batch" (apply-fsdp's grad-sync).
  std::string fsdpGradSync = "every-micro-batch";
  bool sequenceParallel = false;
  bool lossParallel = false;
  /// "full", "selective", "every:N", "budget" or "none".
  std::string remat = "none";
  /// "all", "language" or "vision".
  std::string rematScope = "all";
  /// remat budget: the fraction of the device's memory the plan leaves free.
  double rematMargin = 0.05;
  /// Layer containers overriding discovery.
  std::vector<std::string> stacks;

  /// Micro-batches per optimizer step:
  /// global batch / (micro-batch x data-parallel ranks).
  int64_t gradAccumulation = 1;

  // search:
  /// Search the layouts for the fastest plan that fits (parc-plan --auto),
  /// keeping every layout key the recipe or the flags give; show the
  /// fastest `searchTop`.
  bool searchAuto = false;
  int64_t searchTop = 5;

  int64_t getWorldSize() const { return nodes * gpusPerNode; }
  /// The file the model is read from: its config or its IR.
  StringRef getModelFile() const {
    return mlirPath.empty() ? StringRef(hfConfigPath) : StringRef(mlirPath);
  }
  /// Ranks that see different data: FSDP shards and their replicas.
  int64_t getDataParallelRanks() const { return dp * fsdp; }

  /// Where each dotted key's value came from (a recipe line, a --set, a
  /// flag), so that a value refused later (an unknown hardware profile, a
  /// frozen path naming nothing) is reported there.
  std::map<std::string, LocationAttr> origins;
  /// The origin of `key`, or of the recipe when the key took its default.
  Location getLocation(StringRef key) const;
  /// The recipe file, or unknown for a request made of flags.
  LocationAttr recipeLoc;
  RecipeFramework framework = RecipeFramework::Parc;
  /// Keys of another framework's job file that change neither memory nor
  /// step time, as the file spells them ("job.dump_folder"), reported so
  /// that nothing is skipped silently.
  std::vector<std::string> ignoredKeys;
};

/// One parc recipe key's value translated from another framework's job
/// file, with where the key it came from was written (or a name saying
/// which framework default it is).
struct TranslatedEntry {
  std::string key;
  /// The value as YAML text ("8192", "bf16", "[a, b]").
  std::string yaml;
  LocationAttr loc;
  /// A value that follows from another key of the job: that key, whose
  /// setting on the command line replaces this value.
  std::string replacedBy = {};
};

/// Another framework's job file as parc recipe entries.
struct TranslatedRecipe {
  RecipeFramework framework = RecipeFramework::Parc;
  std::vector<TranslatedEntry> entries;
  std::vector<std::string> ignoredKeys;
};

/// One recipe key and the parc-plan flag that sets it.
struct RecipeKey {
  llvm::StringLiteral key;  // "train.seq_len"
  llvm::StringLiteral flag; // "seq"
  bool isList;
  llvm::StringLiteral valueName; // "n", for --help
  llvm::StringLiteral help;
  /// The largest value a count key ("n") accepts, so that no product of
  /// counts (tokens per micro-batch, GPUs, micro-batches to unroll) wraps
  /// and no plan unrolls without bound; 0 for keys that are not counts.
  int64_t max = 0;
};

/// Bounds shared by several keys and the relations between them.
struct RecipeLimits {
  /// GPUs in a cluster, and so any one parallel degree.
  static constexpr int64_t kMaxGpus = int64_t(1) << 17;
  /// Tokens per sequence: 16 Mi, above any published context.
  static constexpr int64_t kMaxSeqLen = int64_t(1) << 24;
  /// Tokens one rank computes per micro-batch (micro_batch_size x seq_len).
  static constexpr int64_t kMaxMicroBatchTokens = int64_t(1) << 26;
  /// Sequences per optimizer step.
  static constexpr int64_t kMaxGlobalBatch = int64_t(1) << 24;
  /// Micro-batches per optimizer step: the lowered program unrolls them.
  static constexpr int64_t kMaxMicrobatches = 4096;
};

/// parc's name ("1f1b", "gpipe", "interleaved-1f1b") of a
/// torch.distributed.pipelining schedule as torchtitan and NeMo Automodel
/// spell it ("1F1B", "GPipe", "Interleaved1F1B", "interleaved_1f1b"; case
/// does not matter, as for get_schedule_class), or "" for one parc does not
/// plan.
StringRef getParcScheduleName(StringRef torchName);

/// parc's dtype name ("bf16", "fp16", "fp32") of a torch dtype as job files
/// spell it ("bfloat16", "torch.bfloat16", "float32", "float16"), or "".
StringRef getParcDtypeName(StringRef torchName);

/// Every key a recipe may hold, in the order the documentation lists them.
ArrayRef<RecipeKey> getRecipeKeys();

/// A value given outside the recipe file.
struct RecipeSetting {
  std::string key;
  /// The value: YAML text from --set ("8192", "[model.layers]"), or a flag's
  /// text taken literally, so that a path is never read as YAML syntax.
  std::string value;
  bool isYaml = true;
  /// For a list given item by item (`--freeze a --freeze b`): the items,
  /// used instead of `value`.
  std::vector<std::string> items;
  bool hasItems = false;
  /// How the user spelt it, for diagnostics: "--set train.seq_len=8192".
  std::string origin;
};

/// Parses the argument of `--set`: `dotted.key=value`.
FailureOr<RecipeSetting> parseSetOption(StringRef text, MLIRContext *context);

/// Reads the recipe in `text` (from `filename`; relative model paths resolve
/// against `baseDir`) with `settings` applied over it in order: parc's
/// recipe, or a NeMo Automodel recipe (isNemoRecipe), translated first. Every
/// problem is emitted as a diagnostic at the key's YAML line (or at the setting
/// that gave the value), and reading goes on so that one run reports them all.
FailureOr<PlanRequest> readRecipe(StringRef text, StringRef filename,
                                  StringRef baseDir,
                                  ArrayRef<RecipeSetting> settings,
                                  MLIRContext *context);

/// Reads the recipe of `translated` (from `filename`) with `settings`
/// applied over it, as readRecipe reads a YAML recipe.
FailureOr<PlanRequest> readTranslatedRecipe(const TranslatedRecipe &translated,
                                            StringRef filename,
                                            ArrayRef<RecipeSetting> settings,
                                            MLIRContext *context);

/// Reads the recipe file at `path`: a torchtitan job when it ends in
/// `.toml` (translateTorchtitanJob), parc's YAML or a NeMo Automodel recipe
/// (readRecipe) otherwise.
FailureOr<PlanRequest> readRecipeFile(StringRef path,
                                      ArrayRef<RecipeSetting> settings,
                                      MLIRContext *context);

/// The directory of the Hugging Face configs shipped with parc, which the
/// model names of other frameworks' job files map to
/// (`<bin>/../share/parc/models`).
std::string getDefaultModelsDir();

/// A request made of settings alone (parc-plan's flags, no recipe file);
/// relative paths are the working directory's.
FailureOr<PlanRequest> buildPlanRequest(ArrayRef<RecipeSetting> settings,
                                        MLIRContext *context);

/// Writes `request` as a parc recipe that reads back to the same request:
/// every key resolved, the model's path absolute.
void writeRecipe(const PlanRequest &request, llvm::raw_ostream &os);

} // namespace mlir::parc

#endif // PARC_PLAN_RECIPE_H
