//===- NemoRecipe.cpp - a NeMo Automodel recipe as a parc recipe ----------===//
//
// One table row per NeMo Automodel key says what parc does with it: the keys
// that plan something are read by the translation code below, the rest are
// ignored (they change neither memory nor step time) or refused where they
// are read (they would, and parc does not model them). The defaults are
// FSDP2Config's, PipelineConfig's and the VLM recipe's freeze_config, as
// NeMo Automodel's source states them. yaml-cpp reports a malformed file by
// throwing; the exception is caught here and becomes a diagnostic at its
// line, as in Recipe.cpp.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/NemoRecipe.h"
#include "FrameworkKeys.h"
#include "RecipeReader.h"

#include "Parc/IR/ParcOps.h"
#include "parc/Import/HFConfig.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>

using namespace mlir;
using namespace mlir::parc;
using namespace mlir::parc::framework;

namespace {

/// NeMo Automodel's recipe keys, section by section (its LLM and VLM
/// fine-tuning recipes, FSDP2Config, PipelineConfig, FreezeConfig).
constexpr KeyRow kNemoKeys[] = {
    {"step_scheduler", "global_batch_size", KeyUse::Plan},
    {"step_scheduler", "local_batch_size", KeyUse::Plan},
    {"step_scheduler", "*", KeyUse::Ignore},
    {"dist_env", "*", KeyUse::Ignore},
    {"rng", "*", KeyUse::Ignore},
    {"model", "_target_", KeyUse::Plan},
    {"model", "pretrained_model_name_or_path", KeyUse::Plan},
    {"model", "config", KeyUse::Plan},
    {"model", "torch_dtype", KeyUse::Plan},
    {"model", "attn_implementation", KeyUse::Plan},
    {"model", "use_liger_kernel", KeyUse::Plan},
    {"model", "quantization_config", KeyUse::Plan},
    {"model", "text_config", KeyUse::Plan},
    {"model", "use_sdpa_patching", KeyUse::Ignore},
    {"model", "trust_remote_code", KeyUse::Ignore},
    {"model", "is_meta_device", KeyUse::Ignore},
    {"model", "force_hf", KeyUse::Ignore},
    {"model", "cache_dir", KeyUse::Ignore},
    {"processor", "*", KeyUse::Ignore},
    {"checkpoint", "*", KeyUse::Ignore},
    {"distributed", "_target_", KeyUse::Plan},
    {"distributed", "strategy", KeyUse::Plan},
    {"distributed", "dp_size", KeyUse::Plan},
    {"distributed", "dp_replicate_size", KeyUse::Plan},
    {"distributed", "tp_size", KeyUse::Plan},
    {"distributed", "pp_size", KeyUse::Plan},
    {"distributed", "cp_size", KeyUse::Plan},
    {"distributed", "ep_size", KeyUse::Plan},
    {"distributed", "sequence_parallel", KeyUse::Plan},
    {"distributed", "activation_checkpointing", KeyUse::Plan},
    {"distributed", "activation_checkpointing_scope", KeyUse::Plan},
    {"distributed", "defer_fsdp_grad_sync", KeyUse::Plan},
    {"distributed", "reshard_after_forward", KeyUse::Plan},
    {"distributed", "enable_fsdp2_prefetch", KeyUse::Plan},
    {"distributed", "fsdp2_forward_prefetch_depth", KeyUse::Plan},
    {"distributed", "fsdp2_backward_prefetch_depth", KeyUse::Plan},
    {"distributed", "mp_policy", KeyUse::Plan},
    {"distributed", "offload_policy", KeyUse::Plan},
    {"distributed", "autocast_dtype", KeyUse::Plan},
    {"distributed", "tp_plan", KeyUse::Plan},
    {"distributed", "enable_compile", KeyUse::Plan},
    {"distributed", "enable_async_tensor_parallel", KeyUse::Ignore},
    {"distributed", "patch_is_packed_sequence", KeyUse::Ignore},
    {"autopipeline", "pp_schedule", KeyUse::Plan},
    {"autopipeline", "pp_microbatch_size", KeyUse::Plan},
    {"autopipeline", "pp_batch_size", KeyUse::Plan},
    {"autopipeline", "layers_per_stage", KeyUse::Plan},
    {"autopipeline", "module_fqns_per_model_part", KeyUse::Plan},
    {"autopipeline", "pp_schedule_csv", KeyUse::Plan},
    {"autopipeline", "round_virtual_stages_to_pp_multiple", KeyUse::Plan},
    {"autopipeline", "*", KeyUse::Ignore},
    {"loss_fn", "_target_", KeyUse::Plan},
    {"loss_fn", "fp32_upcast", KeyUse::Plan},
    {"loss_fn", "*", KeyUse::Ignore},
    {"dataset", "seq_length", KeyUse::Plan},
    {"dataset", "seq_len", KeyUse::Plan},
    {"dataset", "max_length", KeyUse::Plan},
    {"dataset", "*", KeyUse::Ignore},
    {"packed_sequence", "packed_sequence_size", KeyUse::Plan},
    {"packed_sequence", "*", KeyUse::Ignore},
    {"dataloader", "*", KeyUse::Ignore},
    {"validation_dataset", "*", KeyUse::Ignore},
    {"validation_dataloader", "*", KeyUse::Ignore},
    {"optimizer", "_target_", KeyUse::Plan},
    {"optimizer", "foreach", KeyUse::Plan},
    {"optimizer", "fused", KeyUse::Plan},
    {"optimizer", "*", KeyUse::Ignore},
    {"lr_scheduler", "*", KeyUse::Ignore},
    {"clip_grad_norm", "max_norm", KeyUse::Plan},
    {"clip_grad_norm", "*", KeyUse::Ignore},
    {"freeze_config", "freeze_embeddings", KeyUse::Plan},
    {"freeze_config", "freeze_vision_tower", KeyUse::Plan},
    {"freeze_config", "freeze_audio_tower", KeyUse::Plan},
    {"freeze_config", "freeze_language_model", KeyUse::Plan},
    {"freeze_config", "freeze_modules", KeyUse::Plan},
    {"freeze_config", "unfreeze_modules", KeyUse::Plan},
    {"compile", "enabled", KeyUse::Plan},
    {"compile", "*", KeyUse::Ignore},
    {"peft", "*", KeyUse::Plan},
    {"fp8", "*", KeyUse::Plan},
    {"quantization", "*", KeyUse::Plan},
    {"wandb", "*", KeyUse::Ignore},
    {"mlflow", "*", KeyUse::Ignore},
    {"tensorboard", "*", KeyUse::Ignore},
    {"benchmark", "*", KeyUse::Ignore},
    {"ci", "*", KeyUse::Ignore},
};

/// The sections that make a YAML recipe NeMo's: parc's recipes have none.
constexpr llvm::StringLiteral kNemoOnlySections[] = {"step_scheduler",
                                                     "distributed", "dist_env"};

/// The sections whose presence is refused: what they do is not modelled.
struct Refusal {
  llvm::StringLiteral section;
  llvm::StringLiteral what;
};
constexpr Refusal kRefusedSections[] = {
    {"peft", "parameter-efficient fine-tuning (LoRA adapters)"},
    {"fp8", "float8 linears"},
    {"quantization", "quantized training"},
};

/// Hugging Face model ids and the configs parc ships for them (compared
/// without case: the Hub's ids are not case-sensitive).
struct ModelId {
  llvm::StringLiteral id;
  llvm::StringLiteral config;
};
constexpr ModelId kModelIds[] = {
    {"meta-llama/Llama-3.1-8B", "llama-3.1-8b.json"},
    {"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b.json"},
    {"meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b.json"},
    {"meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b.json"},
    {"meta-llama/Llama-3.1-70B", "llama-3.1-70b.json"},
    {"meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b.json"},
    {"meta-llama/Llama-3.1-405B", "llama-3.1-405b.json"},
    {"meta-llama/Llama-3.1-405B-Instruct", "llama-3.1-405b.json"},
    {"Qwen/Qwen2.5-0.5B", "qwen2.5-0.5b.json"},
    {"Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5-0.5b.json"},
    {"google/gemma-4-31b", "gemma4-31b.json"},
    {"google/gemma-4-31b-it", "gemma4-31b.json"},
};

/// NeMo's model classes; an image-text-to-text model gets the VLM recipe's
/// freeze_config defaults.
constexpr llvm::StringLiteral kCausalLm = "NeMoAutoModelForCausalLM";
constexpr llvm::StringLiteral kImageTextToText =
    "NeMoAutoModelForImageTextToText";

/// freeze_config's switches and the modules each selects: the module-name
/// patterns of the modality switches (`_freeze_module_by_attribute_and_
/// patterns`: a module whose dotted name, lower-cased, contains one of them
/// is frozen), or, with none, every nn.Embedding (freeze_embeddings).
struct FreezeRule {
  llvm::StringLiteral key;
  /// The VLM recipe's default.
  bool defaultOn;
  SmallVector<llvm::StringLiteral, 3> patterns;
};

const FreezeRule kFreezeRules[] = {
    {"freeze_embeddings", true, {}},
    {"freeze_vision_tower", true, {"vision", "visual", "image_encoder"}},
    {"freeze_audio_tower", false, {"audio"}},
    {"freeze_language_model", false, {"language_model"}},
};

/// Where a key was written, from yaml-cpp's 0-based marks.
class NemoRecipe {
public:
  NemoRecipe(MLIRContext *context, StringRef filename, StringRef baseDir,
             StringRef modelsDir, ArrayRef<RecipeSetting> settings)
      : context(context), filename(filename), baseDir(baseDir),
        modelsDir(modelsDir), settings(settings) {}

  FailureOr<TranslatedRecipe> translate(StringRef text);

private:
  /// A key as written: its value and where its key is.
  struct Found {
    YAML::Node node;
    std::string name; // "distributed.tp_size"
    Location loc;
    /// Whether the file has the key (a default-constructed YAML::Node is a
    /// defined null, so the node cannot say).
    bool present = false;
    explicit Found(Location loc) : loc(loc) {}
    explicit operator bool() const { return present; }
  };

  Location markLoc(const YAML::Mark &mark) const {
    if (mark.is_null())
      return fileLoc();
    return FileLineColLoc::get(context, filename, mark.line + 1,
                               mark.column + 1);
  }
  Location fileLoc() const {
    return FileLineColLoc::get(context, filename, 1, 1);
  }
  InFlightDiagnostic error(Location at) {
    failed = true;
    return emitError(at) << "NeMo recipe: ";
  }
  bool givenOnCommandLine(StringRef key) const {
    return llvm::any_of(settings,
                        [&](const RecipeSetting &s) { return s.key == key; });
  }

  void checkKeys();
  Found find(StringRef section, StringRef name);
  /// A present, non-null value: `null` / `none` / `~` mean "NeMo's default".
  static bool isSet(const Found &found) {
    if (!found || found.node.IsNull())
      return false;
    if (found.node.IsScalar()) {
      std::string text = StringRef(found.node.Scalar()).lower();
      return text != "none" && text != "null";
    }
    return true;
  }
  std::optional<int64_t> integer(const Found &found, int64_t min, int64_t max);
  std::optional<bool> boolean(const Found &found);
  std::optional<std::string> string(const Found &found);

  void set(StringRef key, std::string yaml, Location at) {
    recipe.entries.push_back({key.str(), std::move(yaml), at});
  }
  void setDefault(StringRef key, std::string yaml, StringRef what) {
    set(key, yaml,
        NameLoc::get(StringAttr::get(context, "NeMo default " + what),
                     fileLoc()));
  }

  void translateModel();
  /// The config.json `model.pretrained_model_name_or_path` names.
  std::string resolveModel(const Found &name);
  void translateDtypes(const Found &torchDtype);
  /// The sizes, strategy and FSDP2Config policies; returns pp.
  int64_t translateDistributed();
  void translateRemat();
  void translateBatch(int64_t pp);
  void translatePipeline(const Found &local, int64_t localBatch);
  void translateSequence();
  void translateLoss();
  void translateOptimizer();
  void translateFreeze();
  void translateRefusals();
  /// The text of configPath, read on first use; null when it is unknown or
  /// unreadable (the recipe reader reports that at model.hf_config).
  const llvm::MemoryBuffer *getConfigBuffer() {
    if (!configRead && !configPath.empty())
      if (auto buffer = llvm::MemoryBuffer::getFile(configPath))
        configBuffer = std::move(*buffer);
    configRead = true;
    return configBuffer.get();
  }
  /// torch.compile on: planned eager, with a warning.
  void warnIfCompiled(const Found &compile);

  MLIRContext *context;
  std::string filename;
  std::string baseDir;
  std::string modelsDir;
  ArrayRef<RecipeSetting> settings;
  YAML::Node root;
  TranslatedRecipe recipe;
  /// The config.json planned (the file's or the command line's), for the
  /// checkpoint dtype and the modules freeze_config selects; empty when
  /// unknown.
  std::string configPath;
  /// Its text, read once by getConfigBuffer().
  std::unique_ptr<llvm::MemoryBuffer> configBuffer;
  bool configRead = false;
  bool isVlm = false;
  bool failed = false;
  /// distributed.tp_size as read (0: not given or refused).
  int64_t tpSize = 0;
};

void NemoRecipe::checkKeys() {
  for (const auto &item : root) {
    std::string section = item.first.as<std::string>();
    Location at = markLoc(item.first.Mark());
    if (!hasSection(kNemoKeys, section)) {
      error(at) << "unknown section '" << section
                << "' (known: " << listSections(kNemoKeys) << ")";
      continue;
    }
    if (item.second.IsNull())
      continue;
    if (!item.second.IsMap()) {
      error(at) << "'" << section << "' must be a mapping of keys";
      continue;
    }
    for (const auto &entry : item.second) {
      std::string name = entry.first.as<std::string>();
      const KeyRow *known = findKeyRow(kNemoKeys, section, name);
      if (!known) {
        error(markLoc(entry.first.Mark()))
            << "unknown key '" << name << "' in '" << section
            << "' (known: " << listKeys(kNemoKeys, section) << ")";
        continue;
      }
      if (known->use == KeyUse::Ignore)
        recipe.ignoredKeys.push_back(section + "." + name);
    }
  }
}

NemoRecipe::Found NemoRecipe::find(StringRef section, StringRef name) {
  Found found(fileLoc());
  YAML::Node keys = root[section.str()];
  if (!keys.IsMap())
    return found;
  for (const auto &entry : keys) {
    if (entry.first.as<std::string>() != name)
      continue;
    found.node = entry.second;
    found.present = true;
    found.name = (section + "." + name).str();
    found.loc = markLoc(entry.first.Mark());
  }
  return found;
}

std::optional<int64_t> NemoRecipe::integer(const Found &found, int64_t min,
                                           int64_t max) {
  int64_t value;
  if (!found.node.IsScalar() || found.node.Tag() == "!" ||
      StringRef(found.node.Scalar()).getAsInteger(10, value)) {
    error(found.loc) << "'" << found.name << "' must be an integer";
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(found.loc) << "'" << found.name << "' must be between " << min
                     << " and " << max << ", got " << value;
    return std::nullopt;
  }
  return value;
}

std::optional<bool> NemoRecipe::boolean(const Found &found) {
  if (found.node.IsScalar() && found.node.Tag() != "!") {
    std::string text = StringRef(found.node.Scalar()).lower();
    if (text == "true")
      return true;
    if (text == "false")
      return false;
  }
  error(found.loc) << "'" << found.name << "' must be true or false";
  return std::nullopt;
}

std::optional<std::string> NemoRecipe::string(const Found &found) {
  if (found.node.IsScalar() && !found.node.Scalar().empty())
    return found.node.Scalar();
  error(found.loc) << "'" << found.name << "' must be a string";
  return std::nullopt;
}

std::string NemoRecipe::resolveModel(const Found &name) {
  std::optional<std::string> id = string(name);
  if (!id)
    return "";
  for (const ModelId &known : kModelIds) {
    if (!StringRef(*id).equals_insensitive(known.id))
      continue;
    llvm::SmallString<256> path(modelsDir);
    llvm::sys::path::append(path, known.config.str());
    return std::string(path);
  }
  // A local checkpoint: its directory's config.json, or a config itself.
  llvm::SmallString<256> path(*id);
  if (llvm::sys::path::is_relative(path)) {
    path = baseDir;
    llvm::sys::path::append(path, *id);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  }
  if (llvm::sys::fs::is_directory(path))
    llvm::sys::path::append(path, "config.json");
  // The translated recipe is read with no directory to resolve against.
  if (llvm::sys::fs::is_regular_file(path) &&
      !llvm::sys::fs::make_absolute(path))
    return std::string(path);
  SmallVector<StringRef> known = llvm::map_to_vector(
      kModelIds, [](const ModelId &m) { return StringRef(m.id); });
  error(name.loc) << "'" << name.name << "' is '" << *id
                  << "': parc ships no Hugging Face config for it and no "
                     "config.json is at that path (known ids: "
                  << llvm::join(known, ", ")
                  << "); give the model's config.json with --model";
  return "";
}

void NemoRecipe::translateModel() {
  if (Found target = find("model", "_target_")) {
    if (std::optional<std::string> value = string(target)) {
      if (StringRef(*value).contains(kImageTextToText))
        isVlm = true;
      else if (!StringRef(*value).contains(kCausalLm))
        error(target.loc) << "'" << target.name << "' is '" << *value
                          << "'; parc plans " << kCausalLm << " and "
                          << kImageTextToText << " (from_pretrained or "
                          << "from_config)";
    }
  }
  if (Found quant = find("model", "quantization_config"); isSet(quant))
    error(quant.loc) << "'" << quant.name
                     << "' is set: quantized weights are not modelled";
  if (Found overrides = find("model", "text_config"); isSet(overrides)) {
    // Config overrides change the model; only the KV cache switch, which
    // training does not use, is accepted.
    if (!overrides.node.IsMap()) {
      error(overrides.loc) << "'" << overrides.name << "' must be a mapping";
    } else {
      for (const auto &entry : overrides.node) {
        std::string key = entry.first.as<std::string>();
        if (key == "use_cache") {
          recipe.ignoredKeys.push_back(overrides.name + "." + key);
          continue;
        }
        error(markLoc(entry.first.Mark()))
            << "'" << overrides.name << "." << key
            << "' overrides the model's config, which parc does not apply; "
               "write it into the config.json and give that with --model";
      }
    }
  }

  // The model: the command line's, or the recipe's id or path (directly or
  // in an AutoConfig `config:` block).
  for (const RecipeSetting &setting : settings)
    if (setting.key == "model.hf_config")
      configPath =
          setting.hasItems || setting.value.empty() ? "" : setting.value;
  bool modelGiven =
      givenOnCommandLine("model.hf_config") || givenOnCommandLine("model.mlir");
  Found name = find("model", "pretrained_model_name_or_path");
  if (!name) {
    if (Found config = find("model", "config"); config.node.IsMap()) {
      if (YAML::Node inner = config.node["pretrained_model_name_or_path"]) {
        name = config;
        name.node = inner;
        name.name = config.name + ".pretrained_model_name_or_path";
      }
    }
  }
  if (!modelGiven) {
    if (!name) {
      error(fileLoc()) << "no model: 'model.pretrained_model_name_or_path' "
                          "is not set; give the model's config.json with "
                          "--model";
    } else {
      configPath = resolveModel(name);
      if (!configPath.empty())
        set("model.hf_config", "'" + configPath + "'", name.loc);
    }
  }
  translateDtypes(find("model", "torch_dtype"));
  // A VLM recipe's samples carry images, whose patch count per sample the
  // dataset decides.
  if (isVlm && !givenOnCommandLine("train.image_tokens"))
    emitWarning(find("model", "_target_").loc)
        << "NeMo recipe: image tokens per sample depend on the dataset's "
           "images; planned as text only (give --image-tokens N for the "
           "vision tower's patches per sample)";

  if (Found attention = find("model", "attn_implementation")) {
    if (std::optional<std::string> value = string(attention)) {
      if (*value == "eager")
        set("train.attention_kernel", "eager", attention.loc);
      else if (*value == "sdpa" || *value == "flash_attention_2" ||
               *value == "flash_attention_3")
        set("train.attention_kernel", "flash", attention.loc);
      else
        error(attention.loc) << "'" << attention.name << "' is '" << *value
                             << "'; parc plans eager, sdpa, flash_attention_2, "
                                "flash_attention_3";
    }
  }
  // Liger's RMSNorm keeps only the inverse RMS for backward, as a fused
  // norm does.
  if (Found liger = find("model", "use_liger_kernel"))
    if (std::optional<bool> on = boolean(liger))
      set("train.norm_kernel", *on ? "fused" : "eager", liger.loc);
}

void NemoRecipe::translateDtypes(const Found &torchDtype) {
  // torch_dtype is the dtype the parameters are loaded and kept in, and so
  // the AdamW moments'. "auto" (from_pretrained's default) is the
  // checkpoint's own, config.json's torch_dtype.
  std::string name = "auto";
  if (isSet(torchDtype))
    if (std::optional<std::string> value = string(torchDtype))
      name = *value;
  Location at = torchDtype ? torchDtype.loc : fileLoc();
  std::string what = torchDtype ? "" : " (torch_dtype auto)";
  if (name == "auto") {
    const llvm::MemoryBuffer *config = getConfigBuffer();
    if (!config)
      return; // The reader reports the missing file at model.hf_config.
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse(config->getBuffer());
    if (!json) {
      llvm::consumeError(json.takeError());
      return; // The importer reports it, with the line.
    }
    const llvm::json::Object *object = json->getAsObject();
    std::optional<StringRef> checkpoint;
    for (StringRef key : {"torch_dtype", "dtype"})
      if (object && !checkpoint)
        checkpoint = object->getString(key);
    if (!checkpoint) {
      error(at) << "'model.torch_dtype' is auto and '" << configPath
                << "' has no torch_dtype; set model.torch_dtype";
      return;
    }
    name = checkpoint->str();
    what = " (torch_dtype auto: the checkpoint's " + name + ")";
  }
  StringRef parcName = getParcDtypeName(name);
  if (parcName.empty()) {
    error(at) << "'model.torch_dtype' is '" << name
              << "'; parc plans bfloat16, float16, float32";
    return;
  }
  if (torchDtype && isSet(torchDtype)) {
    set("train.master_dtype", parcName.str(), at);
    set("train.optim_dtype", parcName.str(), at);
  } else {
    setDefault("train.master_dtype", parcName.str(), "model" + what);
    setDefault("train.optim_dtype", parcName.str(), "model" + what);
  }
}

int64_t NemoRecipe::translateDistributed() {
  std::string strategy = "fsdp2";
  Found given = find("distributed", "strategy");
  Found target = find("distributed", "_target_");
  Found strategyAt = given ? given : target;
  if (given) {
    if (std::optional<std::string> value = string(given))
      strategy = StringRef(*value).lower();
  } else if (target) {
    if (std::optional<std::string> value = string(target)) {
      StringRef manager(*value);
      strategy = manager.ends_with("FSDP2Manager")          ? "fsdp2"
                 : manager.ends_with("DDPManager")          ? "ddp"
                 : manager.ends_with("MegatronFSDPManager") ? "megatron_fsdp"
                                                            : *value;
    }
  }
  if (strategy != "fsdp2" && strategy != "ddp") {
    error(strategyAt ? strategyAt.loc : fileLoc())
        << "distributed strategy '" << strategy
        << "' is not planned by parc (known: fsdp2, ddp)";
    return 1;
  }

  auto size = [&](StringRef key, StringRef parcKey) -> int64_t {
    Found found = find("distributed", key);
    if (!isSet(found))
      return 0;
    std::optional<int64_t> value = integer(found, 1, RecipeLimits::kMaxGpus);
    if (!value)
      return 0;
    if (!parcKey.empty())
      set(parcKey, std::to_string(*value), found.loc);
    return *value;
  };
  tpSize = size("tp_size", "parallel.tp");
  int64_t pp = size("pp_size", "parallel.pp");
  for (auto [key, what] :
       {std::pair<StringRef, StringRef>("cp_size", "context parallelism"),
        {"ep_size", "expert parallelism"}}) {
    Found found = find("distributed", key);
    if (int64_t value = size(key, ""); value > 1)
      error(found.loc) << "'" << found.name << "' is " << value << ": " << what
                       << " is not modelled";
  }
  if (strategy == "fsdp2") {
    // dp_size none: every rank not taken by the other axes, parc's own
    // default for parallel.fsdp.
    size("dp_size", "parallel.fsdp");
    size("dp_replicate_size", "parallel.dp");
  } else {
    Found dp = find("distributed", "dp_size");
    if (!size("dp_size", "parallel.dp"))
      error(dp ? dp.loc : strategyAt.loc)
          << "a ddp recipe needs 'distributed.dp_size' (the replicas); "
             "parc derives only FSDP shards from the GPU count";
    set("parallel.fsdp", "1", strategyAt.loc);
    if (Found replicate = find("distributed", "dp_replicate_size");
        isSet(replicate))
      error(replicate.loc) << "'" << replicate.name
                           << "' is FSDP2's (HSDP); a ddp recipe has none";
  }

  if (Found sp = find("distributed", "sequence_parallel"); isSet(sp))
    if (std::optional<bool> on = boolean(sp))
      set("parallel.sequence_parallel", *on ? "true" : "false", sp.loc);
  if (Found defer = find("distributed", "defer_fsdp_grad_sync"); isSet(defer))
    if (std::optional<bool> on = boolean(defer))
      set("parallel.fsdp_grad_sync",
          *on ? "last-micro-batch" : "every-micro-batch", defer.loc);
  if (Found reshard = find("distributed", "reshard_after_forward");
      isSet(reshard))
    if (std::optional<bool> on = boolean(reshard))
      set("parallel.fsdp_reshard_after_forward", *on ? "true" : "false",
          reshard.loc);

  // Explicit prefetch chains gather this many units ahead; parc gathers
  // the same depth in forward and backward, so the deeper one is planned
  // (it bounds the memory).
  if (Found prefetch = find("distributed", "enable_fsdp2_prefetch");
      isSet(prefetch)) {
    std::optional<bool> on = boolean(prefetch);
    if (on && *on) {
      int64_t depth = 0;
      for (auto [key, fallback] :
           {std::pair<StringRef, int64_t>("fsdp2_forward_prefetch_depth", 1),
            {"fsdp2_backward_prefetch_depth", 2}}) {
        Found found = find("distributed", key);
        std::optional<int64_t> value =
            isSet(found) ? integer(found, 0, 64) : fallback;
        depth = std::max(depth, value.value_or(0));
      }
      set("parallel.fsdp_prefetch", std::to_string(depth), prefetch.loc);
    }
  }

  if (Found policy = find("distributed", "mp_policy"); isSet(policy)) {
    if (!policy.node.IsMap()) {
      error(policy.loc) << "'" << policy.name
                        << "' must be a MixedPrecisionPolicy mapping";
    } else {
      std::string paramDtype = "bf16";
      for (const auto &entry : policy.node) {
        std::string key = entry.first.as<std::string>();
        Location at = markLoc(entry.first.Mark());
        if (key == "_target_" || key == "cast_forward_inputs")
          continue;
        std::string text = entry.second.IsScalar() ? entry.second.Scalar() : "";
        StringRef dtype = getParcDtypeName(text);
        if (key != "param_dtype" && key != "reduce_dtype" &&
            key != "output_dtype") {
          error(at) << "unknown key '" << key << "' in '" << policy.name
                    << "' (known: _target_, param_dtype, reduce_dtype, "
                       "output_dtype, cast_forward_inputs)";
          continue;
        }
        if (dtype.empty()) {
          error(at) << "'" << policy.name << "." << key << "' is '" << text
                    << "'; parc plans bfloat16, float16, float32";
          continue;
        }
        if (key == "param_dtype") {
          paramDtype = dtype.str();
          set("train.compute_dtype", paramDtype, at);
        } else if (key == "reduce_dtype") {
          set("train.grad_reduce_dtype", dtype.str(), at);
        } else if (dtype != paramDtype) {
          error(at) << "'" << policy.name
                    << ".output_dtype' differs from its param_dtype: "
                       "activations in another dtype are not modelled";
        }
      }
    }
  }
  for (auto [key, what] :
       {std::pair<StringRef, StringRef>("offload_policy", "CPU offload"),
        {"autocast_dtype", "autocast over the FSDP2 mixed precision"},
        {"tp_plan", "a custom TP plan (parc plans the model family's)"}}) {
    Found found = find("distributed", key);
    if (isSet(found))
      error(found.loc) << "'" << found.name << "' is set: " << what
                       << " is not modelled";
  }
  warnIfCompiled(find("distributed", "enable_compile"));
  return pp ? pp : 1;
}

void NemoRecipe::translateRemat() {
  Found mode = find("distributed", "activation_checkpointing");
  if (isSet(mode)) {
    std::string text = StringRef(mode.node.Scalar()).lower();
    if (!mode.node.IsScalar() || (text != "true" && text != "false" &&
                                  text != "full" && text != "selective")) {
      error(mode.loc) << "'" << mode.name
                      << "' must be true, false, full or selective";
    } else if (text == "selective") {
      error(mode.loc) << "'" << mode.name
                      << "' is selective: NeMo's selective checkpointing "
                         "policy is not modelled; parc plans true (full) or "
                         "false";
    } else {
      set("parallel.remat", text == "false" ? "none" : "full", mode.loc);
    }
  }
  Found scope = find("distributed", "activation_checkpointing_scope");
  if (!isSet(scope))
    return;
  std::optional<std::string> text =
      scope.node.IsScalar() ? std::optional<std::string>(scope.node.Scalar())
                            : std::nullopt;
  std::string lower = text ? StringRef(*text).lower() : "";
  if (lower == "default" || lower == "auto")
    lower = "all";
  if (lower == "all" || lower == "language" || lower == "vision")
    set("parallel.remat_scope", lower, scope.loc);
  else
    error(scope.loc) << "'" << scope.name
                     << "' must be all, language or vision (parc plans one "
                        "scope; audio and multimodal towers are not "
                        "modelled)";
}

void NemoRecipe::translateBatch(int64_t pp) {
  Found global = find("step_scheduler", "global_batch_size");
  Found local = find("step_scheduler", "local_batch_size");
  for (const char *key : {"global_batch_size", "local_batch_size"})
    if (!find("step_scheduler", key))
      error(fileLoc()) << "'step_scheduler." << key
                       << "' is not set (StepScheduler requires it)";
  std::optional<int64_t> globalBatch, localBatch;
  if (global)
    globalBatch = integer(global, 1, RecipeLimits::kMaxGlobalBatch);
  if (local)
    localBatch = integer(local, 1, RecipeLimits::kMaxMicroBatchTokens);
  if (globalBatch)
    set("train.global_batch_size", std::to_string(*globalBatch), global.loc);
  if (!localBatch)
    return;
  if (pp > 1) {
    translatePipeline(local, *localBatch);
    return;
  }
  // Without a pipeline the local batch is each rank's micro-batch; what
  // only a pipeline reads plans nothing.
  set("train.micro_batch_size", std::to_string(*localBatch), local.loc);
  if (YAML::Node pipeline = root["autopipeline"]; pipeline.IsMap())
    for (const auto &entry : pipeline)
      recipe.ignoredKeys.push_back("autopipeline." +
                                   entry.first.as<std::string>() + " (pp 1)");
}

void NemoRecipe::translatePipeline(const Found &local, int64_t localBatch) {
  // The local batch is the pipeline's batch (pp_batch_size), split into
  // micro-batches of pp_microbatch_size; accumulation steps run as one
  // longer pipeline, as parc derives the count from the global batch.
  for (const char *key :
       {"layers_per_stage", "module_fqns_per_model_part", "pp_schedule_csv",
        "round_virtual_stages_to_pp_multiple"}) {
    Found found = find("autopipeline", key);
    if (isSet(found))
      error(found.loc) << "'" << found.name
                       << "' pins the stage split, which parc does not "
                          "translate; parc balances the stages by cost, or "
                          "pin layers per stage with --pp-split";
  }
  Found schedule = find("autopipeline", "pp_schedule");
  std::string name = "1f1b";
  if (isSet(schedule))
    if (std::optional<std::string> value = string(schedule))
      name = *value;
  Location at = schedule ? schedule.loc : fileLoc();
  StringRef parcSchedule = getParcScheduleName(name);
  if (parcSchedule.empty()) {
    error(at) << "pipeline schedule '" << name
              << "' is not planned by parc (known: 1f1b, gpipe, "
                 "interleaved1f1b)";
  } else {
    set("parallel.pp_schedule", parcSchedule.str(), at);
    // A multi-stage schedule runs two stages per rank unless the layers
    // per stage say otherwise (torch.distributed.pipelining's default).
    if (parcSchedule == "interleaved-1f1b")
      set("parallel.pp_chunks", "2", at);
  }
  int64_t microBatch = 1;
  Found size = find("autopipeline", "pp_microbatch_size");
  if (isSet(size)) {
    std::optional<int64_t> value = integer(size, 1, localBatch);
    if (!value)
      return;
    microBatch = *value;
  }
  if (localBatch % microBatch != 0) {
    error(size.loc) << "'" << size.name << "' = " << microBatch
                    << " does not divide the local batch " << localBatch;
    return;
  }
  if (Found batch = find("autopipeline", "pp_batch_size"); isSet(batch)) {
    std::optional<int64_t> value =
        integer(batch, 1, RecipeLimits::kMaxMicroBatchTokens);
    if (value && *value != localBatch)
      error(batch.loc) << "'" << batch.name << "' = " << *value
                       << " differs from step_scheduler.local_batch_size = "
                       << localBatch << ", which the recipe gives the pipeline";
  }
  set("train.micro_batch_size", std::to_string(microBatch),
      isSet(size) ? size.loc : local.loc);
}

void NemoRecipe::translateSequence() {
  // A packed sequence is the step's length; otherwise a dataset that
  // truncates to a length gives it. NeMo's default collater pads each
  // batch to its longest sample, a length the recipe does not state.
  Found packed = find("packed_sequence", "packed_sequence_size");
  if (isSet(packed)) {
    std::optional<int64_t> value = integer(packed, 0, RecipeLimits::kMaxSeqLen);
    if (value && *value > 0) {
      set("train.seq_len", std::to_string(*value), packed.loc);
      return;
    }
  }
  for (const char *key : {"seq_length", "seq_len", "max_length"}) {
    Found found = find("dataset", key);
    if (!isSet(found))
      continue;
    if (std::optional<int64_t> value =
            integer(found, 1, RecipeLimits::kMaxSeqLen))
      set("train.seq_len", std::to_string(*value), found.loc);
    return;
  }
  if (givenOnCommandLine("train.seq_len"))
    return;
  Found dataset = find("dataset", "_target_");
  error(dataset ? dataset.loc : fileLoc())
      << "no sequence length: the batches are padded to their longest "
         "sample, which the recipe does not state; give --seq, or set "
         "packed_sequence.packed_sequence_size";
}

void NemoRecipe::translateLoss() {
  Found target = find("loss_fn", "_target_");
  if (!isSet(target))
    return; // The framework default, MaskedCrossEntropy.
  std::optional<std::string> value = string(target);
  if (!value)
    return;
  StringRef loss(*value);
  if (loss.ends_with("FusedLinearCrossEntropy")) {
    set("train.loss_kernel", "fused", target.loc);
    return;
  }
  if (!loss.ends_with("MaskedCrossEntropy")) {
    error(target.loc) << "loss '" << loss
                      << "' is not modelled (known: MaskedCrossEntropy, "
                         "FusedLinearCrossEntropy)";
    return;
  }
  Found upcast = find("loss_fn", "fp32_upcast");
  if (isSet(upcast))
    if (std::optional<bool> on = boolean(upcast); on && !*on) {
      error(upcast.loc) << "'" << upcast.name
                        << "' is false: a loss over logits kept in the "
                           "compute dtype is not modelled (parc plans the "
                           "fp32 upcast or a fused loss)";
      return;
    }
  set("train.loss_kernel", "eager", target.loc);
}

void NemoRecipe::translateOptimizer() {
  if (Found target = find("optimizer", "_target_"); isSet(target)) {
    if (std::optional<std::string> value = string(target)) {
      if (StringRef(*value).ends_with("AdamW") ||
          StringRef(*value).ends_with("Adam"))
        set("train.optimizer", "adamw", target.loc);
      else
        error(target.loc) << "optimizer '" << *value
                          << "' is not modelled (known: torch.optim.AdamW, "
                             "torch.optim.Adam)";
    }
  }
  // torch.optim's own default (foreach on CUDA) unless the recipe says;
  // AutoModel's build_optimizer turns foreach off under TP.
  Found fused = find("optimizer", "fused"),
        foreach = find("optimizer", "foreach");
  std::optional<bool> fusedOn = isSet(fused) ? boolean(fused) : std::nullopt;
  std::optional<bool> foreachOn =
      isSet(foreach) ? boolean(foreach) : std::nullopt;
  if (fusedOn && *fusedOn)
    set("train.optimizer_impl", "fused", fused.loc);
  else if (tpSize > 1)
    set("train.optimizer_impl", "for-loop", find("distributed", "tp_size").loc);
  else if (foreachOn)
    set("train.optimizer_impl", *foreachOn ? "foreach" : "for-loop",
        foreach.loc);
  if (Found clip = find("clip_grad_norm", "max_norm")) {
    if (!isSet(clip)) {
      set("train.max_norm", "0", clip.loc);
    } else if (clip.node.IsScalar()) {
      double value;
      if (StringRef(clip.node.Scalar()).getAsDouble(value) || !(value >= 0))
        error(clip.loc) << "'" << clip.name << "' must be a number >= 0";
      else
        set("train.max_norm", clip.node.Scalar(), clip.loc);
    } else {
      error(clip.loc) << "'" << clip.name << "' must be a number >= 0";
    }
  }
}

void NemoRecipe::translateFreeze() {
  // freeze_config is read by the VLM recipe only, with its defaults
  // (embeddings and the vision tower frozen); an LLM recipe trains every
  // parameter.
  YAML::Node section = root["freeze_config"];
  if (!isVlm) {
    if (section.IsMap())
      for (const auto &entry : section)
        recipe.ignoredKeys.push_back("freeze_config." +
                                     entry.first.as<std::string>() +
                                     " (read by the VLM recipe only)");
    return;
  }
  for (const char *key : {"freeze_modules", "unfreeze_modules"})
    if (Found found = find("freeze_config", key); isSet(found))
      error(found.loc) << "'" << found.name
                       << "' selectors are not translated; give the frozen "
                          "module paths with --freeze";
  if (givenOnCommandLine("train.frozen"))
    return;

  struct Switch {
    const FreezeRule *rule;
    bool on;
    bool given;
  };
  SmallVector<Switch> switches;
  for (const FreezeRule &rule : kFreezeRules) {
    Switch s{&rule, rule.defaultOn, false};
    Found found = find("freeze_config", rule.key);
    if (isSet(found)) {
      std::optional<bool> on = boolean(found);
      if (!on)
        return;
      s = {&rule, *on, true};
    }
    switches.push_back(s);
  }
  if (!llvm::any_of(switches, [](const Switch &s) { return s.on; }))
    return;
  if (configPath.empty()) {
    error(fileLoc()) << "freeze_config selects modules by name, which needs "
                        "the model's config.json (--model)";
    return;
  }

  // The modules each switch selects, from the model's own module tree.
  const llvm::MemoryBuffer *config = getConfigBuffer();
  if (!config)
    return; // The reader reports the missing file at model.hf_config.
  // Planning imports the model again and reports what is wrong with it.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      importHFConfig(config->getBuffer(), configPath, context);
  if (!module)
    return;
  llvm::SetVector<std::string, std::vector<std::string>, std::set<std::string>>
      frozen;
  SmallVector<std::string> because;
  for (const Switch &s : switches) {
    if (!s.on)
      continue;
    const FreezeRule *rule = s.rule;
    size_t before = frozen.size();
    module->walk<WalkOrder::PreOrder>([&](NNModuleOp op) {
      std::string path = getDottedPath(op);
      bool selected;
      if (rule->patterns.empty()) {
        // Every nn.Embedding: a leaf whose class is one and that holds a
        // parameter (rotary "embeddings" hold none).
        selected = op.getKind() == ModuleKind::Leaf &&
                   StringRef(op.getClassName()).ends_with("Embedding") &&
                   !op.getBody()->getOps<ParamOp>().empty();
      } else {
        std::string lower = StringRef(path).lower();
        selected = llvm::any_of(rule->patterns, [&](StringRef pattern) {
          return StringRef(lower).contains(pattern);
        });
      }
      if (!selected)
        return WalkResult::advance();
      frozen.insert(path);
      return WalkResult::skip();
    });
    if (frozen.size() > before)
      because.push_back(
          (rule->key + (s.given ? "" : " (the VLM recipe's default)")).str());
  }
  if (frozen.empty())
    return;
  std::string yaml = "[";
  for (const std::string &path : frozen)
    yaml += (yaml.size() > 1 ? ", '" : "'") + path + "'";
  yaml += "]";
  Found first = find("freeze_config", "freeze_vision_tower");
  set("train.frozen", yaml,
      NameLoc::get(StringAttr::get(context, "NeMo freeze_config " +
                                                llvm::join(because, ", ")),
                   first ? first.loc : fileLoc()));
}

void NemoRecipe::translateRefusals() {
  for (const Refusal &refusal : kRefusedSections) {
    for (const auto &item : root) {
      if (item.first.as<std::string>() != refusal.section ||
          item.second.IsNull())
        continue;
      error(markLoc(item.first.Mark()))
          << "'" << refusal.section << "' is set: " << refusal.what
          << " is not modelled";
    }
  }
  warnIfCompiled(find("compile", "enabled"));
}

void NemoRecipe::warnIfCompiled(const Found &compile) {
  if (!isSet(compile))
    return;
  if (std::optional<bool> on = boolean(compile); on && *on)
    emitWarning(compile.loc)
        << "NeMo recipe: '" << compile.name
        << "' is planned as eager: parc does not model torch.compile's "
           "fusions (they save activation memory and time)";
}

FailureOr<TranslatedRecipe> NemoRecipe::translate(StringRef text) {
  recipe.framework = RecipeFramework::Nemo;
  recipe::reportRecipeExceptions(
      [&] {
        root = YAML::Load(text.str());
        if (!root.IsMap()) {
          error(fileLoc()) << "a recipe must be a mapping of sections";
          return;
        }
        checkKeys();
        translateModel();
        translateBatch(translateDistributed());
        translateRemat();
        translateSequence();
        translateLoss();
        translateOptimizer();
        translateFreeze();
        translateRefusals();
      },
      [&](const YAML::Mark &mark) { return error(markLoc(mark)); });
  if (failed)
    return failure();
  return recipe;
}

} // namespace

bool mlir::parc::isNemoRecipe(StringRef text) {
  try {
    YAML::Node root = YAML::Load(text.str());
    if (!root.IsMap())
      return false;
    for (const auto &item : root)
      if (item.first.IsScalar() &&
          llvm::is_contained(kNemoOnlySections, item.first.Scalar()))
        return true;
  } catch (const std::exception &) {
    // Not YAML: parc's reader reports it.
  }
  return false;
}

FailureOr<TranslatedRecipe> mlir::parc::translateNemoRecipe(
    StringRef text, StringRef filename, StringRef baseDir, StringRef modelsDir,
    ArrayRef<RecipeSetting> settings, MLIRContext *context) {
  return NemoRecipe(context, filename, baseDir, modelsDir, settings)
      .translate(text);
}
