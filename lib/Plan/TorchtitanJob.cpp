//===- TorchtitanJob.cpp - a torchtitan job TOML as a parc recipe ---------===//
//
// One table row per torchtitan key says what parc does with it: the keys
// that plan something are read by the translation code below (each where
// torchtitan's releases put it), the rest are ignored (they change neither
// memory nor step time) or refused (they would, and parc does not model
// them). toml++ reports a malformed file by throwing; the exception is
// caught here and becomes a diagnostic at its line, as yaml-cpp's are in
// Recipe.cpp.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/TorchtitanJob.h"
#include "FrameworkKeys.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <toml++/toml.h>

#include <optional>
#include <type_traits>

using namespace mlir;
using namespace mlir::parc;
using namespace mlir::parc::framework;

namespace {

/// torchtitan's keys, section by section, through its 2025 releases.
constexpr KeyRow kJobKeys[] = {
    {"model", "name", KeyUse::Plan},
    {"model", "flavor", KeyUse::Plan},
    {"model", "converters", KeyUse::Plan},
    {"model", "norm_type", KeyUse::Plan},
    {"model", "tokenizer_path", KeyUse::Ignore},
    {"model", "hf_assets_path", KeyUse::Ignore},
    {"model", "print_after_conversion", KeyUse::Ignore},
    {"training", "local_batch_size", KeyUse::Plan},
    {"training", "batch_size", KeyUse::Plan},
    {"training", "global_batch_size", KeyUse::Plan},
    {"training", "seq_len", KeyUse::Plan},
    {"training", "max_norm", KeyUse::Plan},
    {"training", "mixed_precision_param", KeyUse::Plan},
    {"training", "mixed_precision_reduce", KeyUse::Plan},
    {"training", "dtype", KeyUse::Plan},
    {"training", "compile", KeyUse::Plan},
    {"training", "enable_cpu_offload", KeyUse::Plan},
    {"training", "data_parallel_replicate_degree", KeyUse::Plan},
    {"training", "data_parallel_shard_degree", KeyUse::Plan},
    {"training", "data_parallel_degree", KeyUse::Plan},
    {"training", "tensor_parallel_degree", KeyUse::Plan},
    {"training", "enable_loss_parallel", KeyUse::Plan},
    {"training", "steps", KeyUse::Ignore},
    {"training", "warmup_steps", KeyUse::Ignore},
    {"training", "gc_freq", KeyUse::Ignore},
    {"training", "seed", KeyUse::Ignore},
    {"training", "deterministic", KeyUse::Ignore},
    {"training", "dataset", KeyUse::Ignore},
    {"training", "dataset_path", KeyUse::Ignore},
    {"training", "dataloader", KeyUse::Ignore},
    {"parallelism", "data_parallel_replicate_degree", KeyUse::Plan},
    {"parallelism", "data_parallel_shard_degree", KeyUse::Plan},
    {"parallelism", "tensor_parallel_degree", KeyUse::Plan},
    {"parallelism", "enable_loss_parallel", KeyUse::Plan},
    {"parallelism", "disable_loss_parallel", KeyUse::Plan},
    {"parallelism", "enable_sequence_parallel", KeyUse::Plan},
    {"parallelism", "fsdp_reshard_after_forward", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_degree", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_schedule", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_microbatch_size", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_microbatches", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_split_points", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_layers_per_stage", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_first_stage_less_layers", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_last_stage_less_layers", KeyUse::Plan},
    {"parallelism", "pipeline_parallel_schedule_csv", KeyUse::Plan},
    {"parallelism", "module_fqns_per_model_part", KeyUse::Plan},
    {"parallelism", "context_parallel_degree", KeyUse::Plan},
    {"parallelism", "expert_parallel_degree", KeyUse::Plan},
    {"parallelism", "expert_tensor_parallel_degree", KeyUse::Plan},
    {"parallelism", "context_parallel_rotate_method", KeyUse::Ignore},
    {"parallelism", "context_parallel_load_balancer", KeyUse::Ignore},
    {"parallelism", "enable_async_tensor_parallel", KeyUse::Ignore},
    {"parallelism", "enable_compiled_autograd", KeyUse::Ignore},
    {"parallelism", "enable_fsdp_symm_mem", KeyUse::Ignore},
    {"parallelism", "expert_parallel_comm_backend", KeyUse::Ignore},
    {"experimental", "pipeline_parallel_degree", KeyUse::Plan},
    {"experimental", "pipeline_parallel_schedule", KeyUse::Plan},
    {"experimental", "pipeline_parallel_microbatches", KeyUse::Plan},
    {"experimental", "pipeline_parallel_split_points", KeyUse::Plan},
    {"experimental", "context_parallel_degree", KeyUse::Plan},
    {"experimental", "*", KeyUse::Ignore},
    {"activation_checkpoint", "mode", KeyUse::Plan},
    {"activation_checkpoint", "selective_ac_option", KeyUse::Plan},
    {"activation_checkpoint", "*", KeyUse::Ignore},
    {"optimizer", "name", KeyUse::Plan},
    {"optimizer", "early_step_in_backward", KeyUse::Plan},
    {"optimizer", "implementation", KeyUse::Plan},
    {"optimizer", "fused", KeyUse::Plan},
    {"optimizer", "*", KeyUse::Ignore},
    {"float8", "enable_float8_linear", KeyUse::Plan},
    {"float8", "enable_fsdp_float8_all_gather", KeyUse::Plan},
    {"float8", "*", KeyUse::Ignore},
    {"compile", "enable", KeyUse::Plan},
    {"compile", "*", KeyUse::Ignore},
    {"job", "*", KeyUse::Ignore},
    {"profiling", "*", KeyUse::Ignore},
    {"metrics", "*", KeyUse::Ignore},
    {"checkpoint", "*", KeyUse::Ignore},
    {"lr_scheduler", "*", KeyUse::Ignore},
    {"comm", "*", KeyUse::Ignore},
    {"memory_estimation", "*", KeyUse::Ignore},
    {"fault_tolerance", "*", KeyUse::Ignore},
    {"validation", "*", KeyUse::Ignore},
    {"quantize", "*", KeyUse::Ignore},
    {"mx", "*", KeyUse::Ignore},
};

/// torchtitan's llama3 flavours and the Hugging Face configs of the same
/// shapes (dim, layers, heads, KV heads, FFN size and vocabulary agree).
struct Flavor {
  llvm::StringLiteral model;
  llvm::StringLiteral flavor;
  llvm::StringLiteral config;
};
constexpr Flavor kFlavors[] = {
    {"llama3", "8B", "llama-3.1-8b.json"},
    {"llama3", "70B", "llama-3.1-70b.json"},
    {"llama3", "405B", "llama-3.1-405b.json"},
};

/// The keys that pin how a pipeline splits the layers into stages.
constexpr llvm::StringLiteral kStageSplitKeys[] = {
    "parallelism.pipeline_parallel_split_points",
    "experimental.pipeline_parallel_split_points",
    "parallelism.pipeline_parallel_layers_per_stage",
    "parallelism.pipeline_parallel_first_stage_less_layers",
    "parallelism.pipeline_parallel_last_stage_less_layers",
    "parallelism.module_fqns_per_model_part",
    "parallelism.pipeline_parallel_schedule_csv",
};

/// The other keys only a pipeline reads.
constexpr llvm::StringLiteral kPipelineKeys[] = {
    "parallelism.pipeline_parallel_schedule",
    "experimental.pipeline_parallel_schedule",
    "parallelism.pipeline_parallel_microbatch_size",
    "parallelism.pipeline_parallel_microbatches",
    "experimental.pipeline_parallel_microbatches",
};

/// A key as written: its node and where.
struct Found {
  const toml::node *node = nullptr;
  std::string name; // "parallelism.tensor_parallel_degree"
  explicit operator bool() const { return node; }
};

class TorchtitanJob {
public:
  TorchtitanJob(MLIRContext *context, StringRef filename, StringRef modelsDir,
                bool modelGiven)
      : context(context), filename(filename), modelsDir(modelsDir),
        modelGiven(modelGiven) {}

  FailureOr<TranslatedRecipe> translate(StringRef text);

private:
  Location loc(const toml::source_region &region) const {
    return FileLineColLoc::get(context, filename, region.begin.line,
                               region.begin.column);
  }
  Location loc(const Found &found) const { return loc(found.node->source()); }
  Location fileLoc() const {
    return FileLineColLoc::get(context, filename, 1, 1);
  }
  InFlightDiagnostic error(Location at) {
    failed = true;
    return emitError(at);
  }

  void checkKeys();
  /// The first of `places` ("section.key") the file sets; an error when it
  /// sets two (the same setting under two releases' names).
  Found find(std::initializer_list<llvm::StringLiteral> places);
  template <typename T>
  std::optional<T> typed(const Found &found, StringRef what);
  std::optional<int64_t> integer(const Found &found) {
    return typed<int64_t>(found, "an integer");
  }
  std::optional<double> number(const Found &found) {
    return typed<double>(found, "a number");
  }
  std::optional<bool> boolean(const Found &found) {
    return typed<bool>(found, "true or false");
  }
  std::optional<std::string> string(const Found &found) {
    return typed<std::string>(found, "a string");
  }
  std::optional<std::string> choice(const Found &found,
                                    ArrayRef<StringRef> choices);
  /// A torchtitan degree: positive, or -1 where `fill` allows it.
  std::optional<int64_t> degree(const Found &found, bool fill = false);

  void set(StringRef key, std::string yaml, Location at) {
    recipe.entries.push_back({key.str(), std::move(yaml), at});
  }
  /// A key the file left out: torchtitan's default, named as such.
  void setDefault(StringRef key, std::string yaml, StringRef what) {
    set(key, yaml,
        NameLoc::get(StringAttr::get(context, "torchtitan default " + what),
                     fileLoc()));
  }

  void translateModel();
  void translateTraining();
  /// The degrees, sequence and loss parallel, resharding; returns pp.
  int64_t translateParallelism();
  /// The local batch, as the micro-batch (pp 1) or split into pipeline
  /// micro-batches (translatePipeline).
  void translateBatch(int64_t pp);
  void translatePipeline(Found localFound, int64_t local, Found global);
  /// train.micro_batch_size, at the local batch's key or as its default.
  void setMicroBatch(Found localFound, int64_t microBatch);
  void translateRemat();
  void translateRefusals();

  MLIRContext *context;
  std::string filename;
  std::string modelsDir;
  bool modelGiven;
  toml::table table;
  TranslatedRecipe recipe;
  bool failed = false;
};

void TorchtitanJob::checkKeys() {
  for (auto &&[sectionKey, section] : table) {
    StringRef sectionName(sectionKey.str());
    const toml::table *keys = section.as_table();
    if (!keys) {
      error(loc(sectionKey.source()))
          << "torchtitan job: '" << sectionName << "' must be a section (["
          << sectionName << "]), got a value";
      continue;
    }
    if (!hasSection(kJobKeys, sectionName)) {
      error(loc(sectionKey.source()))
          << "torchtitan job: unknown section [" << sectionName
          << "] (known: " << listSections(kJobKeys) << ")";
      continue;
    }
    for (auto &&[key, value] : *keys) {
      const KeyRow *known = findKeyRow(kJobKeys, sectionName, key.str());
      if (!known) {
        error(loc(key.source()))
            << "torchtitan job: unknown key '" << key.str() << "' in ["
            << sectionName << "] (known: " << listKeys(kJobKeys, sectionName)
            << ")";
        continue;
      }
      if (known->use == KeyUse::Ignore)
        recipe.ignoredKeys.push_back((sectionName + "." + key.str()).str());
    }
  }
}

Found TorchtitanJob::find(std::initializer_list<llvm::StringLiteral> places) {
  Found found;
  for (StringRef place : places) {
    const toml::node *node = table.at_path(place.str()).node();
    if (!node)
      continue;
    if (found) {
      error(loc(node->source()))
          << "torchtitan job: '" << place << "' sets what '" << found.name
          << "' already set; give one of them";
      emitRemark(loc(found)) << "'" << found.name << "' is here";
      continue;
    }
    found.node = node;
    found.name = place.str();
  }
  return found;
}

template <typename T>
std::optional<T> TorchtitanJob::typed(const Found &found, StringRef what) {
  // value_exact: a float is not an integer, nor 1 a boolean; a number may
  // be written either way.
  std::optional<T> value = std::is_same_v<T, double> && found.node->is_number()
                               ? found.node->value<T>()
                               : found.node->value_exact<T>();
  if (!value)
    error(loc(found)) << "torchtitan job: '" << found.name << "' must be "
                      << what;
  return value;
}

std::optional<std::string> TorchtitanJob::choice(const Found &found,
                                                 ArrayRef<StringRef> choices) {
  std::optional<std::string> value = string(found);
  if (!value)
    return std::nullopt;
  if (llvm::is_contained(choices, *value))
    return value;
  error(loc(found)) << "torchtitan job: '" << found.name << "' is '" << *value
                    << "', parc plans " << llvm::join(choices, ", ");
  return std::nullopt;
}

std::optional<int64_t> TorchtitanJob::degree(const Found &found, bool fill) {
  std::optional<int64_t> value = integer(found);
  if (!value)
    return std::nullopt;
  if (*value >= 1 && *value <= RecipeLimits::kMaxGpus)
    return value;
  if (fill && *value == -1)
    return value;
  error(loc(found)) << "torchtitan job: '" << found.name << "' must be "
                    << (fill ? "-1 (the GPUs left) or " : "")
                    << "between 1 and " << RecipeLimits::kMaxGpus << ", got "
                    << *value;
  return std::nullopt;
}

void TorchtitanJob::translateModel() {
  if (Found converters = find({"model.converters"})) {
    SmallVector<std::string> names;
    if (const toml::array *list = converters.node->as_array()) {
      for (const toml::node &item : *list)
        if (std::optional<std::string> text = item.value<std::string>())
          names.push_back(*text);
    } else if (std::optional<std::string> text = string(converters)) {
      names.push_back(*text);
    }
    if (!names.empty())
      error(loc(converters))
          << "torchtitan job: 'model.converters' names "
          << llvm::join(names, ", ")
          << ": parc plans linears in the compute dtype; float8 and MX "
             "linears are not modelled";
  }
  if (Found norm = find({"model.norm_type"}))
    choice(norm, {"rmsnorm"});
  // A model given on the command line replaces the file's.
  if (modelGiven)
    return;
  Found name = find({"model.name"});
  Found flavor = find({"model.flavor"});
  std::string model = "llama3", size = "debugmodel";
  if (name) {
    std::optional<std::string> value = string(name);
    if (!value)
      return;
    model = *value;
  }
  if (flavor) {
    std::optional<std::string> value = string(flavor);
    if (!value)
      return;
    size = *value;
  }
  Location at = flavor ? loc(flavor) : name ? loc(name) : fileLoc();
  const Flavor *match = llvm::find_if(kFlavors, [&](const Flavor &f) {
    return f.model == model && f.flavor == size;
  });
  if (match == std::end(kFlavors)) {
    SmallVector<std::string> known =
        llvm::map_to_vector(kFlavors, [](const Flavor &f) {
          return (f.model + " " + f.flavor).str();
        });
    error(at) << "torchtitan job: model '" << model << "' flavor '" << size
              << "' has no Hugging Face config in parc (known: "
              << llvm::join(known, ", ")
              << "); give the model's config.json with --model";
    return;
  }
  llvm::SmallString<256> path(modelsDir);
  llvm::sys::path::append(path, match->config.str());
  set("model.hf_config", "'" + std::string(path) + "'", at);
}

void TorchtitanJob::translateTraining() {
  if (Found seq = find({"training.seq_len"})) {
    if (std::optional<int64_t> value = integer(seq))
      set("train.seq_len", std::to_string(*value), loc(seq));
  } else {
    setDefault("train.seq_len", "2048", "training.seq_len = 2048");
  }
  if (Found maxNorm = find({"training.max_norm"}))
    if (std::optional<double> value = number(maxNorm))
      set("train.max_norm", std::to_string(*value), loc(maxNorm));
  // torchtitan's defaults are parc's for the rest of the dtypes: FSDP2's
  // MixedPrecisionPolicy(bf16 params, fp32 reduce) over fp32 parameters and
  // AdamW moments.
  auto dtype = [&](Found found, StringRef key,
                   ArrayRef<StringRef> choices) -> std::optional<StringRef> {
    if (!found)
      return std::nullopt;
    std::optional<std::string> value = choice(found, choices);
    if (!value)
      return std::nullopt;
    StringRef parcName = getParcDtypeName(*value);
    set(key, parcName.str(), loc(found));
    return parcName;
  };
  dtype(find({"training.mixed_precision_param"}), "train.compute_dtype",
        {"bfloat16", "float32"});
  dtype(find({"training.mixed_precision_reduce"}), "train.grad_reduce_dtype",
        {"float32", "bfloat16"});
  // training.dtype is the dtype of the parameters themselves (and so of
  // their AdamW moments): bfloat16 is full-bf16 training.
  if (Found full = find({"training.dtype"}))
    if (dtype(full, "train.master_dtype", {"float32", "bfloat16"}))
      set("train.optim_dtype", recipe.entries.back().yaml, loc(full));

  if (Found compile = find({"training.compile", "compile.enable"}))
    if (std::optional<bool> on = boolean(compile); on && *on)
      emitWarning(loc(compile))
          << "torchtitan job: '" << compile.name
          << "' is planned as eager: parc does not model torch.compile's "
             "fusions (they save activation memory and time)";
  if (Found offload = find({"training.enable_cpu_offload"}))
    if (std::optional<bool> on = boolean(offload); on && *on)
      error(loc(offload)) << "torchtitan job: '" << offload.name
                          << "' is true: CPU offload is not modelled";

  Found optimizer = find({"optimizer.name"});
  if (optimizer && choice(optimizer, {"AdamW", "Adam"}))
    set("train.optimizer", "adamw", loc(optimizer));
  // Its AdamW is foreach unless the job says otherwise: `fused` (a bool,
  // False by default, through early 2025), then `implementation`.
  if (Found fused = find({"optimizer.fused"}))
    if (std::optional<bool> on = boolean(fused))
      set("train.optimizer_impl", *on ? "fused" : "foreach", loc(fused));
  if (Found impl = find({"optimizer.implementation"}))
    if (std::optional<std::string> value =
            choice(impl, {"foreach", "for-loop", "fused"}))
      set("train.optimizer_impl", *value, loc(impl));
  if (Found early = find({"optimizer.early_step_in_backward"}))
    if (std::optional<bool> on = boolean(early); on && *on)
      error(loc(early)) << "torchtitan job: '" << early.name
                        << "' is true: an optimizer step in backward is not "
                           "modelled";
}

int64_t TorchtitanJob::translateParallelism() {
  auto setDegree = [&](std::initializer_list<llvm::StringLiteral> places,
                       StringRef key, bool fill = false) -> int64_t {
    Found found = find(places);
    if (!found)
      return fill ? -1 : 1;
    std::optional<int64_t> value = degree(found, fill);
    if (!value)
      return 1;
    if (*value != -1)
      set(key, std::to_string(*value), loc(found));
    return *value;
  };
  setDegree({"parallelism.data_parallel_replicate_degree",
             "training.data_parallel_replicate_degree"},
            "parallel.dp");
  setDegree({"parallelism.data_parallel_shard_degree",
             "training.data_parallel_shard_degree",
             "training.data_parallel_degree"},
            "parallel.fsdp", /*fill=*/true);
  setDegree(
      {"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"},
      "parallel.tp");
  int64_t pp = setDegree({"parallelism.pipeline_parallel_degree",
                          "experimental.pipeline_parallel_degree"},
                         "parallel.pp");

  // Sequence and loss parallel follow TP unless the job turns them off
  // (RecipeFramework::Torchtitan's defaults).
  if (Found loss = find({"parallelism.enable_loss_parallel",
                         "training.enable_loss_parallel"}))
    if (std::optional<bool> on = boolean(loss))
      set("parallel.loss_parallel", *on ? "true" : "false", loc(loss));
  if (Found loss = find({"parallelism.disable_loss_parallel"}))
    if (std::optional<bool> off = boolean(loss))
      set("parallel.loss_parallel", *off ? "false" : "true", loc(loss));
  if (Found sp = find({"parallelism.enable_sequence_parallel"}))
    if (std::optional<bool> on = boolean(sp))
      set("parallel.sequence_parallel", *on ? "true" : "false", loc(sp));

  if (Found reshard = find({"parallelism.fsdp_reshard_after_forward"})) {
    if (reshard.node->is_integer())
      error(loc(reshard)) << "torchtitan job: '" << reshard.name
                          << "' as a group size is not modelled; parc plans "
                             "\"always\", \"never\" or \"default\"";
    else if (std::optional<std::string> value =
                 choice(reshard, {"default", "always", "never"});
             value && *value != "default")
      set("parallel.fsdp_reshard_after_forward",
          *value == "always" ? "true" : "false", loc(reshard));
  }
  return pp;
}

void TorchtitanJob::translateBatch(int64_t pp) {
  // The local batch is one data-parallel rank's share of a step: its
  // micro-batch without PP, split into pipeline micro-batches with it.
  Found localFound = find({"training.local_batch_size", "training.batch_size"});
  int64_t local = 8;
  if (localFound)
    if (std::optional<int64_t> value = integer(localFound))
      local = *value;
  if (local < 1) {
    error(loc(localFound)) << "torchtitan job: '" << localFound.name
                           << "' must be positive, got " << local;
    return;
  }
  Found global = find({"training.global_batch_size"});
  if (global) {
    std::optional<int64_t> value = integer(global);
    if (value && *value != -1)
      set("train.global_batch_size", std::to_string(*value), loc(global));
  }
  if (pp != 1) {
    translatePipeline(localFound, local, global);
    return;
  }
  setMicroBatch(localFound, local);
  // What only a pipeline reads plans nothing without one.
  for (llvm::StringLiteral key :
       llvm::concat<const llvm::StringLiteral>(kPipelineKeys, kStageSplitKeys))
    if (find({key}))
      recipe.ignoredKeys.push_back((key + " (pp 1)").str());
}

void TorchtitanJob::setMicroBatch(Found localFound, int64_t microBatch) {
  if (localFound)
    set("train.micro_batch_size", std::to_string(microBatch), loc(localFound));
  else
    setDefault("train.micro_batch_size", std::to_string(microBatch),
               "training.local_batch_size = 8");
}

void TorchtitanJob::translatePipeline(Found localFound, int64_t local,
                                      Found global) {
  Found schedule = find({"parallelism.pipeline_parallel_schedule",
                         "experimental.pipeline_parallel_schedule"});
  std::string name = "1F1B";
  if (schedule)
    if (std::optional<std::string> value = string(schedule))
      name = *value;
  StringRef parcSchedule = getParcScheduleName(name);
  if (parcSchedule.empty()) {
    error(schedule ? loc(schedule) : fileLoc())
        << "torchtitan job: pipeline schedule '" << name
        << "' is not planned by parc (known: 1F1B, GPipe, Interleaved1F1B)";
  } else {
    Location at = schedule ? loc(schedule) : fileLoc();
    set("parallel.pp_schedule", parcSchedule.str(), at);
    // torchtitan gives a looped schedule two stages per rank unless the
    // layers per stage say otherwise.
    if (parcSchedule == "interleaved-1f1b")
      set("parallel.pp_chunks", "2", at);
  }
  int64_t microBatch = 1;
  Found size = find({"parallelism.pipeline_parallel_microbatch_size"});
  Found count = find({"parallelism.pipeline_parallel_microbatches",
                      "experimental.pipeline_parallel_microbatches"});
  if (size && count) {
    error(loc(count)) << "torchtitan job: give '" << size.name << "' or '"
                      << count.name << "', not both";
    return;
  }
  if (size) {
    if (std::optional<int64_t> value = integer(size))
      microBatch = *value;
  } else if (count) {
    std::optional<int64_t> value = integer(count);
    if (value && *value >= 1 && local % *value == 0)
      microBatch = local / *value;
    else if (value) {
      error(loc(count)) << "torchtitan job: '" << count.name << "' = " << *value
                        << " does not divide the local batch " << local;
      return;
    }
  }
  Found at = size ? size : count;
  if (microBatch < 1 || local % microBatch != 0) {
    error(at ? loc(at) : fileLoc())
        << "torchtitan job: the pipeline micro-batch of " << microBatch
        << " does not divide the local batch " << local;
    return;
  }
  setMicroBatch(localFound, microBatch);
  // The schedule runs local / micro-batch micro-batches a step; with a
  // global batch given, parc derives the count from it (accumulation
  // steps run as one longer pipeline).
  if (!global) {
    set("parallel.microbatches", std::to_string(local / microBatch),
        at ? loc(at) : fileLoc());
    recipe.entries.back().replacedBy = "train.global_batch_size";
  }
  for (llvm::StringLiteral split : kStageSplitKeys) {
    Found found = find({split});
    if (!found)
      continue;
    if (const toml::array *list = found.node->as_array(); list && list->empty())
      continue;
    if (auto text = found.node->value_exact<std::string>();
        text && text->empty())
      continue;
    error(loc(found)) << "torchtitan job: '" << found.name
                      << "' pins the stage split, which parc does not "
                         "translate; parc balances the stages by cost, or "
                         "pin layers per stage with --pp-split";
  }
}

void TorchtitanJob::translateRemat() {
  Found mode = find({"activation_checkpoint.mode"});
  Found option = find({"activation_checkpoint.selective_ac_option"});
  std::string modeName = "selective";
  if (mode) {
    std::optional<std::string> value =
        choice(mode, {"none", "full", "selective"});
    if (!value)
      return;
    modeName = *value;
  }
  Location at = mode ? loc(mode) : fileLoc();
  if (modeName != "selective") {
    if (mode)
      set("parallel.remat", modeName, at);
    else
      setDefault("parallel.remat", modeName, "activation_checkpoint.mode");
    return;
  }
  std::string optionName = "2";
  if (option) {
    std::optional<std::string> value = string(option);
    if (!value)
      return;
    optionName = *value;
  }
  Location optionAt = option ? loc(option) : at;
  if (optionName == "op") {
    // torchtitan's op policy: parc's remat op marks its save list (apply-remat
    // mode=op).
    set("parallel.remat", "op", optionAt);
    return;
  }
  int64_t every;
  if (StringRef(optionName).getAsInteger(10, every) || every < 1) {
    error(optionAt) << "torchtitan job: selective_ac_option must be 'op' or "
                       "a positive integer (every N-th layer), got '"
                    << optionName << "'";
    return;
  }
  std::string remat = every == 1 ? "full" : "every:" + std::to_string(every);
  if (mode || option)
    set("parallel.remat", remat, optionAt);
  else
    setDefault("parallel.remat", remat,
               "activation_checkpoint selective, selective_ac_option = 2");
}

void TorchtitanJob::translateRefusals() {
  auto refuseAbove = [&](std::initializer_list<llvm::StringLiteral> places,
                         StringRef what) {
    Found found = find(places);
    if (!found)
      return;
    std::optional<int64_t> value = integer(found);
    if (value && *value != 1)
      error(loc(found)) << "torchtitan job: '" << found.name << "' is "
                        << *value << ": " << what << " is not modelled";
  };
  refuseAbove({"parallelism.context_parallel_degree",
               "experimental.context_parallel_degree"},
              "context parallelism");
  refuseAbove({"parallelism.expert_parallel_degree"}, "expert parallelism");
  refuseAbove({"parallelism.expert_tensor_parallel_degree"},
              "expert tensor parallelism");
  static constexpr llvm::StringLiteral kFloat8Keys[] = {
      "float8.enable_float8_linear", "float8.enable_fsdp_float8_all_gather"};
  for (llvm::StringLiteral key : kFloat8Keys)
    if (Found found = find({key}))
      if (std::optional<bool> on = boolean(found); on && *on)
        error(loc(found)) << "torchtitan job: '" << found.name
                          << "' is true: float8 linears and all-gathers are "
                             "not modelled";
}

FailureOr<TranslatedRecipe> TorchtitanJob::translate(StringRef text) {
  recipe.framework = RecipeFramework::Torchtitan;
  try {
    table = toml::parse(std::string_view(text.data(), text.size()),
                        std::string_view(filename));
  } catch (const toml::parse_error &e) {
    error(loc(e.source())) << "malformed torchtitan job: " << e.description();
    return failure();
  }
  checkKeys();
  translateModel();
  translateTraining();
  translateBatch(translateParallelism());
  translateRemat();
  translateRefusals();
  if (failed)
    return failure();
  return recipe;
}

} // namespace

FailureOr<TranslatedRecipe>
mlir::parc::translateTorchtitanJob(StringRef text, StringRef filename,
                                   StringRef modelsDir, bool modelGiven,
                                   MLIRContext *context) {
  return TorchtitanJob(context, filename, modelsDir, modelGiven)
      .translate(text);
}
