//===- Recipe.cpp - read a training recipe from YAML ----------------------===//
//
// The recipe is flattened to dotted keys first, each with the location of its
// key; settings (--set, flags) then replace entries, and one typed reader
// checks every value wherever it came from. yaml-cpp throws on malformed
// input and on bad node access: every such exception is caught here and
// becomes a diagnostic at the line it names, so none escapes into the rest of
// parc, which is built without exceptions.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/Recipe.h"

#include "RecipeReader.h"

#include "parc/Analysis/HardwareProfile.h"
#include "parc/Plan/NemoRecipe.h"
#include "parc/Plan/TorchtitanJob.h"
#include "parc/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <yaml-cpp/yaml.h>

#include <optional>

using namespace mlir;
using namespace mlir::parc;
using namespace mlir::parc::recipe;

StringRef mlir::parc::getRecipeFrameworkName(RecipeFramework framework) {
  switch (framework) {
  case RecipeFramework::Parc:
    return "parc";
  case RecipeFramework::Torchtitan:
    return "torchtitan";
  case RecipeFramework::Nemo:
    return "nemo-automodel";
  }
  llvm_unreachable("unknown framework");
}

StringRef mlir::parc::getParcScheduleName(StringRef torchName) {
  std::string lower = torchName.lower();
  if (lower == "1f1b")
    return "1f1b";
  if (lower == "gpipe")
    return "gpipe";
  if (lower == "interleaved1f1b" || lower == "interleaved_1f1b")
    return "interleaved-1f1b";
  return "";
}

StringRef mlir::parc::getParcDtypeName(StringRef torchName) {
  torchName.consume_front("torch.");
  if (torchName == "bfloat16")
    return "bf16";
  if (torchName == "float16")
    return "fp16";
  if (torchName == "float32")
    return "fp32";
  return "";
}

Location PlanRequest::getLocation(StringRef key) const {
  auto it = origins.find(key.str());
  return it != origins.end() ? Location(it->second) : Location(recipeLoc);
}

static constexpr llvm::StringLiteral kSections[] = {"model", "train", "cluster",
                                                    "parallel", "search"};

FailureOr<RecipeSetting> mlir::parc::parseSetOption(StringRef text,
                                                    MLIRContext *context) {
  Location loc = NameLoc::get(StringAttr::get(context, "--set " + text));
  auto [key, value] = text.split('=');
  key = key.trim();
  if (!text.contains('=') || key.empty())
    return emitError(loc) << "--set expects key=value (e.g. "
                             "train.seq_len=8192), got '"
                          << text << "'";
  if (!findRecipeKey(key)) {
    SmallVector<StringRef> known = llvm::map_to_vector(
        getRecipeKeys(), [](const RecipeKey &k) { return StringRef(k.key); });
    return emitError(loc) << "unknown recipe key '" << key
                          << "' (known: " << llvm::join(known, ", ") << ")";
  }
  RecipeSetting setting;
  setting.key = key.str();
  setting.value = value.str();
  setting.origin = ("--set " + text).str();
  return setting;
}

/// Describes a node for "must be X, got Y" messages.
static std::string describe(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Null:
    return "nothing";
  case YAML::NodeType::Scalar:
    return "'" + node.Scalar() + "'";
  case YAML::NodeType::Sequence:
    return "a list";
  case YAML::NodeType::Map:
    return "a mapping";
  case YAML::NodeType::Undefined:
    break;
  }
  return "nothing";
}

static std::string joinKnownKeys(StringRef section) {
  SmallVector<StringRef> names;
  for (const RecipeKey &key : getRecipeKeys()) {
    auto [keySection, name] = StringRef(key.key).split('.');
    if (keySection == section)
      names.push_back(name);
  }
  return llvm::join(names, ", ");
}

void RecipeReader::flatten(StringRef text) {
  YAML::Node root = YAML::Load(text.str());
  if (root.IsNull())
    return;
  if (!root.IsMap()) {
    error(markLoc(root.Mark())) << "a recipe must be a mapping of sections ("
                                << llvm::join(ArrayRef(kSections), ", ") << ")";
    return;
  }
  for (const auto &section : root) {
    std::string name = section.first.as<std::string>();
    Location sectionLoc = markLoc(section.first.Mark());
    if (!llvm::is_contained(kSections, name)) {
      error(sectionLoc) << "unknown section '" << name
                        << "' (known: " << llvm::join(ArrayRef(kSections), ", ")
                        << ")";
      continue;
    }
    if (section.second.IsNull())
      continue;
    if (!section.second.IsMap()) {
      error(sectionLoc) << "section '" << name
                        << "' must be a mapping of keys ("
                        << joinKnownKeys(name) << ")";
      continue;
    }
    for (const auto &item : section.second) {
      std::string key = name + "." + item.first.as<std::string>();
      Location keyLoc = markLoc(item.first.Mark());
      if (!findRecipeKey(key)) {
        error(keyLoc) << "unknown key '" << item.first.as<std::string>()
                      << "' in section '" << name
                      << "' (known: " << joinKnownKeys(name) << ")";
        continue;
      }
      auto [it, isNew] =
          entries.try_emplace(key, Entry{item.second, keyLoc, true});
      if (!isNew) {
        error(keyLoc) << "key '" << key << "' is given twice";
        emitRemark(it->second.loc) << "first given here";
      }
    }
  }
}

void RecipeReader::load(const TranslatedRecipe &translated) {
  framework = translated.framework;
  for (const TranslatedEntry &entry : translated.entries)
    entries.insert_or_assign(entry.key,
                             Entry{YAML::Load(entry.yaml), Location(entry.loc),
                                   true, entry.replacedBy});
}

void RecipeReader::applyFrameworkDefaults(PlanRequest &request) {
  request.framework = framework;
  if (framework == RecipeFramework::Nemo) {
    // FSDP2Config's defaults: reshard_after_forward None is AutoModel's
    // heuristic (pipeline stages keep their parameters gathered), and
    // defer_fsdp_grad_sync True keeps unsharded gradients across
    // micro-batches. The default loss, MaskedCrossEntropy, upcasts the
    // logits to fp32 (fp32_upcast True).
    // The heuristic reshards every layer but the last, whose backward runs
    // first.
    if (!lookup("parallel.fsdp_reshard_after_forward")) {
      request.reshardAfterForward = request.pp == 1;
      if (!lookup("parallel.fsdp_reshard_last_layer") && request.pp == 1)
        request.reshardLastLayer = false;
    }
    if (!lookup("parallel.fsdp_grad_sync"))
      request.fsdpGradSync = "last-micro-batch";
    if (!lookup("train.loss_kernel"))
      request.lossKernel = "eager";
    return;
  }
  if (framework != RecipeFramework::Torchtitan)
    return;
  // torchtitan's "default" reshard_after_forward keeps a pipeline stage's
  // parameters gathered; its PipelineStage turns gradient sync off for all
  // but the last micro-batch; its TP plan shards norms over the sequence and
  // the loss over the vocabulary.
  if (!lookup("parallel.fsdp_reshard_after_forward"))
    request.reshardAfterForward = request.pp == 1;
  if (!lookup("parallel.fsdp_grad_sync") && request.pp > 1)
    request.fsdpGradSync = "last-micro-batch";
  if (!lookup("parallel.sequence_parallel"))
    request.sequenceParallel = request.tp > 1;
  if (!lookup("parallel.loss_parallel"))
    request.lossParallel = request.tp > 1;
  // Its loss is cross_entropy(pred.flatten(0, 1).float(), labels): an fp32
  // copy of the logits and an fp32 gradient.
  if (!lookup("train.loss_kernel"))
    request.lossKernel = "eager";
  // Its launcher (run_train.sh) sets
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
  if (!lookup("train.allocator"))
    request.allocator = "expandable-segments";
  // Its apply_fsdp keeps the last block gathered after forward without a
  // pipeline, "since FSDP would prefetch it immediately".
  if (!lookup("parallel.fsdp_reshard_after_forward") &&
      !lookup("parallel.fsdp_reshard_last_layer") && request.pp == 1)
    request.reshardLastLayer = false;
}

void RecipeReader::apply(const RecipeSetting &setting) {
  Location loc = NameLoc::get(StringAttr::get(context, setting.origin));
  if (!findRecipeKey(setting.key)) {
    error(loc) << "unknown recipe key '" << setting.key << "'";
    return;
  }
  YAML::Node value;
  if (setting.hasItems) {
    value = YAML::Node(YAML::NodeType::Sequence);
    for (const std::string &item : setting.items)
      value.push_back(item);
  } else if (!setting.isYaml) {
    value = YAML::Node(setting.value);
  } else {
    try {
      value = YAML::Load(setting.value);
    } catch (const YAML::Exception &e) {
      error(loc) << "malformed value for '" << setting.key << "': " << e.msg;
      return;
    }
  }
  // A setting replaces what the recipe says, including the key's
  // alternative: --model over a recipe with model.mlir plans the config.
  // Two settings given together both hold (--gpus 512 --gpus-per-node 8 is
  // 64 nodes).
  static constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral>
      kAlternatives[] = {{"model.hf_config", "model.mlir"},
                         {"cluster.gpus", "cluster.gpus_per_node"}};
  for (auto [first, second] : kAlternatives) {
    auto eraseFromFile = [&](llvm::StringLiteral key) {
      auto it = entries.find(key.str());
      if (it != entries.end() && it->second.fromFile)
        entries.erase(it);
    };
    if (setting.key == first)
      eraseFromFile(second);
    if (setting.key == second)
      eraseFromFile(first);
  }
  // A translated value that followed from another key yields to a setting
  // of that key (a torchtitan pipeline's micro-batch count, from its local
  // batch, to a global batch given on the command line).
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->second.replacedBy == setting.key)
      it = entries.erase(it);
    else
      ++it;
  }
  entries.insert_or_assign(setting.key, Entry{value, loc, false});
}

void RecipeReader::missing(StringRef key) {
  const RecipeKey *known = findRecipeKey(key);
  error(fileLoc()) << "missing required key '" << key << "' (flag --"
                   << known->flag << ")";
}

std::optional<std::string> RecipeReader::scalar(StringRef key,
                                                StringRef expected) {
  const Entry *entry = lookup(key);
  if (!entry)
    return std::nullopt;
  if (!entry->value.IsScalar()) {
    error(*entry) << "key '" << key << "' must be " << expected << ", got "
                  << describe(entry->value);
    return std::nullopt;
  }
  return entry->value.Scalar();
}

void RecipeReader::readNonNegative(StringRef key, double &out) {
  const Entry *entry = lookup(key);
  std::optional<std::string> text = scalar(key, "a number >= 0");
  if (!text)
    return;
  double value;
  if (entry->value.Tag() == "!" || StringRef(*text).getAsDouble(value) ||
      !(value >= 0) || std::isinf(value)) {
    error(*entry) << "key '" << key << "' must be a number >= 0, got '" << *text
                  << "'";
    return;
  }
  out = value;
}

void RecipeReader::readAtLeast(StringRef key, int64_t &out, int64_t minimum) {
  const Entry *entry = lookup(key);
  StringRef what =
      minimum > 0 ? "a positive integer" : "a non-negative integer";
  std::optional<std::string> text = scalar(key, what);
  if (!text)
    return;
  int64_t value;
  // A quoted "8" is a string in YAML; yaml-cpp tags non-plain scalars "!".
  if (entry->value.Tag() == "!") {
    error(*entry) << "key '" << key << "' must be " << what
                  << ", got the quoted string '" << *text << "'";
    return;
  }
  if (StringRef(*text).getAsInteger(10, value)) {
    error(*entry) << "key '" << key << "' must be " << what << ", got '"
                  << *text << "'";
    return;
  }
  if (value < minimum) {
    error(*entry) << "key '" << key << "' must be "
                  << (minimum > 0 ? "positive" : "non-negative") << ", got "
                  << value;
    return;
  }
  if (!checkMax(*entry, key, value))
    return;
  out = value;
}

bool RecipeReader::checkMax(const Entry &entry, StringRef key, int64_t value) {
  const RecipeKey *known = findRecipeKey(key);
  if (!known || !known->max || value <= known->max)
    return true;
  error(entry) << "key '" << key << "' must be at most " << known->max
               << ", got " << value;
  return false;
}

void RecipeReader::readString(StringRef key, std::string &out) {
  std::optional<std::string> text = scalar(key, "a string");
  if (!text)
    return;
  if (text->empty()) {
    error(*lookup(key)) << "key '" << key << "' must not be empty";
    return;
  }
  out = *text;
}

void RecipeReader::readChoice(StringRef key, ArrayRef<StringRef> choices,
                              std::string &out) {
  std::optional<std::string> text =
      scalar(key, ("one of " + llvm::join(choices, ", ")));
  if (!text)
    return;
  if (!llvm::is_contained(choices, *text)) {
    error(*lookup(key)) << "key '" << key << "' must be one of "
                        << llvm::join(choices, ", ") << ", got '" << *text
                        << "'";
    return;
  }
  out = *text;
}

void RecipeReader::readDtype(StringRef key, StorageDtype &out) {
  std::string name;
  readChoice(key, {"bf16", "fp16", "fp32"}, name);
  if (name == "bf16")
    out = StorageDtype::BF16;
  else if (name == "fp16")
    out = StorageDtype::FP16;
  else if (name == "fp32")
    out = StorageDtype::FP32;
}

void RecipeReader::readList(StringRef key, std::vector<std::string> &out,
                            StringRef what) {
  const Entry *entry = lookup(key);
  if (!entry || entry->value.IsNull())
    return;
  // A single path is a list of one: `stacks: model.layers`.
  if (entry->value.IsScalar()) {
    out = {entry->value.Scalar()};
    return;
  }
  if (entry->value.IsSequence()) {
    std::vector<std::string> items;
    for (const YAML::Node &item : entry->value) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        error(item.Mark().is_null() || !entry->fromFile ? entry->loc
                                                        : markLoc(item.Mark()))
            << "key '" << key << "' must be a list of " << what << ", got "
            << describe(item) << " in it";
        return;
      }
      items.push_back(item.Scalar());
    }
    out = std::move(items);
    return;
  }
  error(*entry) << "key '" << key << "' must be a list of " << what << ", got "
                << describe(entry->value);
}

void RecipeReader::readPositiveList(StringRef key, std::vector<int64_t> &out) {
  std::vector<std::string> items;
  readList(key, items, "positive integers");
  for (const std::string &item : items) {
    int64_t value;
    if (StringRef(item).getAsInteger(10, value) || value <= 0) {
      error(*lookup(key)) << "key '" << key
                          << "' must be a list of positive integers, got '"
                          << item << "' in it";
      return;
    }
    if (!checkMax(*lookup(key), key, value))
      return;
    out.push_back(value);
  }
}

void RecipeReader::readRemat(StringRef key, std::string &out) {
  std::optional<std::string> text =
      scalar(key, "one of full, selective, every:N, budget, op, none");
  if (!text)
    return;
  // apply-remat's own reading of the recipe's spelling, normalised.
  ApplyRematOptions remat;
  if (setRematMode(remat, *text)) {
    out = getRematModeName(remat.mode, remat.every);
    return;
  }
  error(*lookup(key)) << "key '" << key
                      << "' must be one of full, selective, every:N (N > 0), "
                         "budget, op, none, got '"
                      << *text << "'";
}

std::string RecipeReader::readPath(StringRef key) {
  std::string text;
  readString(key, text);
  if (text.empty())
    return text;
  const Entry *entry = lookup(key);
  llvm::SmallString<256> path(text);
  if (entry->fromFile && llvm::sys::path::is_relative(path)) {
    path = baseDir;
    llvm::sys::path::append(path, text);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  }
  if (!llvm::sys::fs::is_regular_file(path)) {
    InFlightDiagnostic diag = error(*entry) << "key '" << key << "' names '"
                                            << text << "', which ";
    diag << (llvm::sys::fs::exists(path) ? "is not a file" : "does not exist");
    if (StringRef(path) != text)
      diag << " (resolved against the recipe's directory: '" << path << "')";
  }
  return std::string(path);
}

void RecipeReader::build(PlanRequest &request) {
  bool hasConfig = lookup("model.hf_config"), hasMlir = lookup("model.mlir");
  if (hasConfig && hasMlir)
    error(*lookup("model.mlir"))
        << "a recipe names its model once: 'model.hf_config' or "
           "'model.mlir', not both";
  else if (!hasConfig && !hasMlir)
    error(fileLoc()) << "missing required key 'model.hf_config' or "
                        "'model.mlir' (flag --model or --mlir)";
  else if (hasConfig)
    request.hfConfigPath = readPath("model.hf_config");
  else
    request.mlirPath = readPath("model.mlir");

  if (!lookup("train.seq_len"))
    missing("train.seq_len");
  readPositive("train.seq_len", request.seqLen);
  readCount("train.image_tokens", request.imageTokens);
  readPositive("train.micro_batch_size", request.microBatchSize);
  readPositive("train.global_batch_size", request.globalBatchSize);
  readDtype("train.compute_dtype", request.computeDtype);
  readDtype("train.master_dtype", request.masterDtype);
  readDtype("train.grad_reduce_dtype", request.gradReduceDtype);
  readDtype("train.optim_dtype", request.optimDtype);
  readChoice("train.optimizer", {"adamw"}, request.optimizer);
  readNonNegative("train.max_norm", request.maxNorm);
  readList("train.frozen", request.frozen);

  if (!lookup("cluster.hardware"))
    missing("cluster.hardware");
  readString("cluster.hardware", request.hardware);
  readPositive("cluster.nodes", request.nodes);
  readPositive("cluster.gpus_per_node", request.gpusPerNode);
  readPositive("cluster.gpus", totalGpus);

  readPositive("parallel.dp", request.dp);
  readPositive("parallel.fsdp", request.fsdp);
  readPositive("parallel.tp", request.tp);
  readPositive("parallel.pp", request.pp);
  readChoice("parallel.pp_schedule", {"gpipe", "1f1b", "interleaved-1f1b"},
             request.ppSchedule);
  readPositive("parallel.pp_chunks", request.ppChunks);
  readPositive("parallel.microbatches", request.microbatches);
  readPositiveList("parallel.pp_split", request.ppSplit);
  readCount("parallel.fsdp_prefetch", request.fsdpPrefetch);
  std::string reshard = "true";
  readChoice("parallel.fsdp_reshard_after_forward", {"true", "false"}, reshard);
  request.reshardAfterForward = reshard == "true";
  std::string reshardLast = "true";
  readChoice("parallel.fsdp_reshard_last_layer", {"true", "false"},
             reshardLast);
  request.reshardLastLayer = reshardLast == "true";
  readChoice("parallel.fsdp_grad_sync",
             {"every-micro-batch", "last-micro-batch"}, request.fsdpGradSync);
  std::string sequenceParallel = "false", lossParallel = "false";
  readChoice("parallel.sequence_parallel", {"true", "false"}, sequenceParallel);
  readChoice("parallel.loss_parallel", {"true", "false"}, lossParallel);
  request.sequenceParallel = sequenceParallel == "true";
  request.lossParallel = lossParallel == "true";
  readRemat("parallel.remat", request.remat);
  readChoice("train.attention_kernel", {"profile", "flash", "eager"},
             request.attentionKernel);
  readChoice("train.norm_kernel", {"profile", "fused", "eager"},
             request.normKernel);
  readChoice("train.loss_kernel", {"profile", "fused", "eager"},
             request.lossKernel);
  readChoice("train.optimizer_impl", {"foreach", "for-loop", "fused"},
             request.optimizerImpl);
  readChoice("train.allocator",
             {"profile", "caching", "expandable-segments", "direct"},
             request.allocator);
  readChoice("parallel.remat_scope", {"all", "language", "vision"},
             request.rematScope);
  readNonNegative("parallel.remat_margin", request.rematMargin);
  readList("parallel.stacks", request.stacks);

  std::string searchAuto = "false";
  readChoice("search.auto", {"true", "false"}, searchAuto);
  request.searchAuto = searchAuto == "true";
  readPositive("search.top", request.searchTop);
}

bool mlir::parc::recipe::reportRecipeExceptions(
    llvm::function_ref<void()> body,
    llvm::function_ref<InFlightDiagnostic(const YAML::Mark &)> errorAt) {
  try {
    body();
    return true;
  } catch (const YAML::Exception &e) {
    errorAt(e.mark) << "malformed recipe: " << e.msg;
  } catch (const std::exception &e) {
    errorAt(YAML::Mark::null_mark()) << "cannot read recipe: " << e.what();
  }
  return false;
}

/// The relations between keys, once each value is valid on its own.
FailureOr<PlanRequest> RecipeReader::read(StringRef text,
                                          ArrayRef<RecipeSetting> settings) {
  PlanRequest request;
  // Nothing after a syntax error is worth reporting: the keys it would call
  // missing are most likely in the part that did not parse.
  if (!reportRecipeExceptions([&] { flatten(text); }, errorAtMark()))
    return failure();
  return finish(request, settings);
}

FailureOr<PlanRequest> RecipeReader::read(const TranslatedRecipe &translated,
                                          ArrayRef<RecipeSetting> settings) {
  PlanRequest request;
  request.ignoredKeys = translated.ignoredKeys;
  try {
    load(translated);
  } catch (const std::exception &e) {
    error(fileLoc()) << "cannot read recipe: " << e.what();
  }
  return finish(request, settings);
}

FailureOr<PlanRequest> RecipeReader::finish(PlanRequest &request,
                                            ArrayRef<RecipeSetting> settings) {
  request.recipeLoc = fileLoc();
  reportRecipeExceptions(
      [&] {
        for (const RecipeSetting &setting : settings)
          apply(setting);
        build(request);
        applyFrameworkDefaults(request);
        if (!failed)
          check(request);
      },
      errorAtMark());
  if (failed)
    return failure();
  for (const auto &[key, entry] : entries)
    request.origins[key] = entry.loc;
  return request;
}

FailureOr<PlanRequest>
mlir::parc::readRecipe(StringRef text, StringRef filename, StringRef baseDir,
                       ArrayRef<RecipeSetting> settings, MLIRContext *context) {
  if (isNemoRecipe(text)) {
    FailureOr<TranslatedRecipe> translated = translateNemoRecipe(
        text, filename, baseDir, getDefaultModelsDir(), settings, context);
    if (failed(translated))
      return failure();
    return readTranslatedRecipe(*translated, filename, settings, context);
  }
  return RecipeReader(context, filename, baseDir).read(text, settings);
}

FailureOr<PlanRequest>
mlir::parc::readRecipeFile(StringRef path, ArrayRef<RecipeSetting> settings,
                           MLIRContext *context) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return emitError(UnknownLoc::get(context))
           << "cannot read recipe '" << path
           << "': " << buffer.getError().message();
  if (llvm::sys::path::extension(path) == ".toml") {
    bool modelGiven = llvm::any_of(settings, [](const RecipeSetting &s) {
      return s.key == "model.hf_config" || s.key == "model.mlir";
    });
    FailureOr<TranslatedRecipe> translated =
        translateTorchtitanJob((*buffer)->getBuffer(), path,
                               getDefaultModelsDir(), modelGiven, context);
    if (failed(translated))
      return failure();
    return readTranslatedRecipe(*translated, path, settings, context);
  }
  StringRef dir = llvm::sys::path::parent_path(path);
  return readRecipe((*buffer)->getBuffer(), path, dir.empty() ? "." : dir,
                    settings, context);
}

FailureOr<PlanRequest> mlir::parc::readTranslatedRecipe(
    const TranslatedRecipe &translated, StringRef filename,
    ArrayRef<RecipeSetting> settings, MLIRContext *context) {
  // The translation resolved its paths: nothing is relative to the file.
  return RecipeReader(context, filename, ".").read(translated, settings);
}

std::string mlir::parc::getDefaultModelsDir() {
  return getDefaultDataDir("models");
}

FailureOr<PlanRequest>
mlir::parc::buildPlanRequest(ArrayRef<RecipeSetting> settings,
                             MLIRContext *context) {
  return readRecipe("", "", ".", settings, context);
}
