//===- HFConfigImporter.cpp - Hugging Face config.json to parc IR ---------===//
//
// Each family reads its config with the defaults of its transformers config
// class and fills in a ModelSpec; ModelBuilder does the rest. The keys that
// fix a model's size (hidden_size, intermediate_size, num_hidden_layers) are
// required: a default there would plan a different model than the user has,
// silently. Real configs do omit num_attention_heads (Gemma 3's text_config),
// so it takes its class default like every other key, and is listed.
//
//===----------------------------------------------------------------------===//

#include "parc/Import/HFConfig.h"

#include "ConfigReader.h"
#include "ModelBuilder.h"

#include "Parc/IR/ParcDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>

using namespace mlir;
using namespace mlir::parc;

namespace {

//===----------------------------------------------------------------------===//
// The families: one row per model_type
//===----------------------------------------------------------------------===//

/// Which reader builds a model type's spec.
enum class FamilyReader { LlamaLike, GemmaText, GemmaMultimodal };

/// Which attention projections carry a bias.
enum class AttentionBias {
  FromConfig, // q/k/v and o from `attention_bias` (Llama, Qwen3)
  QkvOnly,    // q/k/v always, o never (Qwen2Attention)
  None,       // never (MistralAttention)
};

/// Which layers use sliding-window attention when `layer_types` is absent.
enum class WindowRule {
  None,          // all full attention (Llama)
  All,           // every layer when `sliding_window` is set (Mistral)
  FromMaxLayers, // layers >= max_window_layers when use_sliding_window (Qwen)
};

/// A model family as its transformers classes define it: the class-name
/// prefix, the config class's defaults for the keys a config may omit (each
/// from that class's signature), and how its layers differ. Adding a
/// Llama-like family is a row here (docs/ARCHITECTURE.md).
struct FamilyRow {
  StringLiteral modelType, classPrefix;
  FamilyReader reader;
  int64_t defaultVocab = 0, defaultHeads = 0;
  /// Unset: num_attention_heads (kv), hidden_size / heads (head_dim).
  std::optional<int64_t> defaultKvHeads, defaultHeadDim;
  AttentionBias attentionBias = AttentionBias::FromConfig;
  /// LlamaConfig's `mlp_bias`.
  bool mlpBiasKey = false;
  /// Per-head RMSNorm of q and k (Qwen3).
  QkNormKind qkNorm = QkNormKind::None;
  WindowRule window = WindowRule::None;
};

// clang-format off
constexpr FamilyRow kFamilies[] = {
    // LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config.
    {"llama",   "Llama",   FamilyReader::LlamaLike, 32000,  32, std::nullopt, std::nullopt,
     AttentionBias::FromConfig, /*mlpBiasKey=*/true,  QkNormKind::None,    WindowRule::None},
    {"mistral", "Mistral", FamilyReader::LlamaLike, 32000,  32, 8,            std::nullopt,
     AttentionBias::None,       /*mlpBiasKey=*/false, QkNormKind::None,    WindowRule::All},
    {"qwen2",   "Qwen2",   FamilyReader::LlamaLike, 151936, 32, 32,           std::nullopt,
     AttentionBias::QkvOnly,    /*mlpBiasKey=*/false, QkNormKind::None,    WindowRule::FromMaxLayers},
    {"qwen3",   "Qwen3",   FamilyReader::LlamaLike, 151936, 32, 32,           128,
     AttentionBias::FromConfig, /*mlpBiasKey=*/false, QkNormKind::PerHead, WindowRule::FromMaxLayers},
    // Gemma3TextConfig / Gemma4TextConfig, and their multimodal wrappers:
    // the same heads, KV heads and head_dim; Gemma 4's vocabulary is 262144.
    {"gemma3",      "Gemma3", FamilyReader::GemmaMultimodal, 262208, 8, 4, 256},
    {"gemma3_text", "Gemma3", FamilyReader::GemmaText,       262208, 8, 4, 256},
    {"gemma4",      "Gemma4", FamilyReader::GemmaMultimodal, 262144, 8, 4, 256},
    {"gemma4_text", "Gemma4", FamilyReader::GemmaText,       262144, 8, 4, 256},
};
// clang-format on

const FamilyRow *findFamily(StringRef modelType) {
  for (const FamilyRow &row : kFamilies)
    if (row.modelType == modelType)
      return &row;
  return nullptr;
}

} // namespace

ArrayRef<StringRef> mlir::parc::getSupportedModelTypes() {
  static const SmallVector<StringRef> types = [] {
    SmallVector<StringRef> list;
    for (const FamilyRow &row : kFamilies)
      list.push_back(row.modelType);
    return list;
  }();
  return types;
}

namespace {

/// The architecture of a decoder as its config states it, before the family
/// decides how layers differ.
struct DecoderShape {
  int64_t vocab, hidden, intermediate, layers, heads, kvHeads, headDim;
};

class HFConfigImporter {
public:
  HFConfigImporter(ConfigReader &reader) : reader(reader) {}

  OwningOpRef<mlir::ModuleOp> import(StringRef symbolName);

private:
  Type readDtype(const ConfigSection &config);
  DecoderShape readDecoderShape(const ConfigSection &config,
                                int64_t defaultVocab, int64_t defaultHeads,
                                std::optional<int64_t> defaultKvHeads,
                                std::optional<int64_t> defaultHeadDim);
  ActivationKind readActivation(const ConfigSection &config, StringRef key,
                                StringRef defaultValue, std::string &className);
  DictionaryAttr readRopeScaling(const ConfigSection &config);
  std::vector<std::string> readLayerTypes(const ConfigSection &config,
                                          int64_t layers,
                                          std::vector<std::string> derived);
  void checkHeads(const ConfigSection &config, StringRef kvKey, int64_t heads,
                  int64_t kvHeads);

  void readGemma4Rope(const ConfigSection &params, StringRef layerType,
                      double &theta, double &partial);
  void readLlamaFamily(const ConfigSection &config, const FamilyRow &family,
                       TextModelSpec &text);
  void readGemmaText(const ConfigSection &config, const FamilyRow &row,
                     TextModelSpec &text);
  void readSiglipVision(std::optional<ConfigSection> config,
                        const ConfigSection &root, int64_t textHidden,
                        VisionSpec &vision);
  void readGemma4Vision(std::optional<ConfigSection> config,
                        VisionSpec &vision);

  ConfigReader &reader;
};

} // namespace

//===----------------------------------------------------------------------===//
// Shared readers
//===----------------------------------------------------------------------===//

Type HFConfigImporter::readDtype(const ConfigSection &config) {
  Builder b(reader.getContext());
  // transformers 5 writes "dtype", earlier versions "torch_dtype".
  StringRef key = config.has("dtype") ? "dtype" : "torch_dtype";
  std::string name = config.getString(key, "float32");
  if (name == "bfloat16")
    return b.getBF16Type();
  if (name == "float16")
    return b.getF16Type();
  if (name == "float32")
    return b.getF32Type();
  config.error(key) << "unsupported " << key << " '" << name
                    << "' (supported: bfloat16, float16, float32)";
  return b.getF32Type();
}

void HFConfigImporter::checkHeads(const ConfigSection &config, StringRef kvKey,
                                  int64_t heads, int64_t kvHeads) {
  if (kvHeads > 0 && heads > 0 && heads % kvHeads != 0)
    config.error(kvKey) << "num_attention_heads " << heads
                        << " is not a multiple of " << config.keyPath(kvKey)
                        << " " << kvHeads;
}

DecoderShape
HFConfigImporter::readDecoderShape(const ConfigSection &config,
                                   int64_t defaultVocab, int64_t defaultHeads,
                                   std::optional<int64_t> defaultKvHeads,
                                   std::optional<int64_t> defaultHeadDim) {
  DecoderShape shape;
  shape.vocab = config.getSize("vocab_size", defaultVocab);
  shape.hidden = config.requireSize("hidden_size");
  shape.intermediate = config.requireSize("intermediate_size");
  shape.layers =
      config.requireSize("num_hidden_layers", ConfigSection::kMaxLayers);
  shape.heads = config.getSize("num_attention_heads", defaultHeads);
  shape.kvHeads = config.getSize("num_key_value_heads",
                                 defaultKvHeads.value_or(shape.heads));
  checkHeads(config, "num_key_value_heads", shape.heads, shape.kvHeads);

  if (config.has("head_dim") || defaultHeadDim) {
    shape.headDim = config.getSize("head_dim", defaultHeadDim.value_or(0));
  } else {
    // The config class derives head_dim = hidden_size / num_attention_heads.
    config.getInt("head_dim", 0); // records the default
    if (shape.heads > 0 && shape.hidden % shape.heads != 0)
      config.error("hidden_size")
          << "hidden_size " << shape.hidden
          << " is not divisible by num_attention_heads " << shape.heads
          << " and '" << config.keyPath("head_dim")
          << "' is absent: set head_dim explicitly";
    shape.headDim = shape.heads > 0 ? shape.hidden / shape.heads : 1;
    reader.recordValue(
        config.keyPath("head_dim"),
        Builder(reader.getContext()).getI64IntegerAttr(shape.headDim));
  }
  return shape;
}

ActivationKind HFConfigImporter::readActivation(const ConfigSection &config,
                                                StringRef key,
                                                StringRef defaultValue,
                                                std::string &className) {
  std::string name = config.getString(key, defaultValue);
  if (name == "silu" || name == "swish") {
    className = "SiLU";
    return ActivationKind::Silu;
  }
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") {
    className = "GELUTanh";
    return ActivationKind::GeluTanh;
  }
  if (name == "gelu") {
    className = "GELU";
    return ActivationKind::Gelu;
  }
  if (name == "relu") {
    className = "ReLU";
    return ActivationKind::Relu;
  }
  config.error(key) << "unsupported activation '" << name << "' in '"
                    << config.keyPath(key)
                    << "' (supported: silu, gelu_pytorch_tanh, gelu, relu)";
  className = "Identity";
  return ActivationKind::Silu;
}

/// One entry of Gemma 4's rope_parameters: "default" rotates the whole head,
/// "proportional" the `partial_rotary_factor` share of its frequency pairs.
void HFConfigImporter::readGemma4Rope(const ConfigSection &params,
                                      StringRef layerType, double &theta,
                                      double &partial) {
  std::optional<ConfigSection> entry = params.section(layerType);
  if (!entry) {
    params.error(layerType) << "'" << params.keyPath(layerType)
                            << "' is missing; Gemma 4 needs a rotary "
                               "embedding for each layer type";
    return;
  }
  std::string kind = entry->getString("rope_type", "default");
  theta = entry->getFloat("rope_theta", theta);
  if (!(theta > 0) || !std::isfinite(theta))
    entry->error("rope_theta")
        << "'" << entry->keyPath("rope_theta") << "' must be positive";
  partial = 1.0;
  if (kind == "proportional") {
    partial = entry->getFloat("partial_rotary_factor", 1.0);
    if (!(partial > 0 && partial <= 1)) {
      entry->error("partial_rotary_factor")
          << "'" << entry->keyPath("partial_rotary_factor")
          << "' must be in (0, 1]";
      partial = 1.0;
    }
  } else if (kind != "default") {
    entry->error("rope_type")
        << "'" << entry->keyPath("rope_type") << "' is '" << kind
        << "'; Gemma 4 layers use default or proportional";
  }
  if (entry->getFloat("factor", 1.0) != 1.0)
    entry->error("factor") << "'" << entry->keyPath("factor")
                           << "' other than 1 is not supported";
}

DictionaryAttr HFConfigImporter::readRopeScaling(const ConfigSection &config) {
  const llvm::json::Value *raw = config.getRaw("rope_scaling");
  if (!raw)
    return nullptr;
  const llvm::json::Object *object = raw->getAsObject();
  if (!object) {
    config.error("rope_scaling")
        << "key '" << config.keyPath("rope_scaling") << "' must be an object";
    return nullptr;
  }
  Builder b(reader.getContext());
  NamedAttrList entries;
  for (const auto &[key, value] : *object) {
    // JSON does not tell 8 from 8.0 once parsed; rope parameters are read as
    // reals by every rope implementation, so keep them all f64.
    if (std::optional<double> d = value.getAsNumber())
      entries.set(key, b.getF64FloatAttr(*d));
    else if (std::optional<StringRef> s = value.getAsString())
      entries.set(key, b.getStringAttr(*s));
    else if (std::optional<bool> flag = value.getAsBoolean())
      entries.set(key, b.getBoolAttr(*flag));
  }
  return entries.getDictionary(reader.getContext());
}

std::vector<std::string>
HFConfigImporter::readLayerTypes(const ConfigSection &config, int64_t layers,
                                 std::vector<std::string> derived) {
  std::optional<std::vector<std::string>> given =
      config.getStringList("layer_types");
  if (!given)
    return derived;
  if (static_cast<int64_t>(given->size()) != layers) {
    config.error("layer_types")
        << "'" << config.keyPath("layer_types") << "' lists " << given->size()
        << " layers but num_hidden_layers is " << layers;
    return derived;
  }
  for (const std::string &type : *given)
    if (type != "sliding_attention" && type != "full_attention") {
      config.error("layer_types")
          << "unknown layer type '" << type << "' in '"
          << config.keyPath("layer_types")
          << "' (expected sliding_attention or full_attention)";
      return derived;
    }
  return *given;
}

//===----------------------------------------------------------------------===//
// Llama, Mistral, Qwen2, Qwen3
//===----------------------------------------------------------------------===//

void HFConfigImporter::readLlamaFamily(const ConfigSection &config,
                                       const FamilyRow &family,
                                       TextModelSpec &text) {
  DecoderShape shape =
      readDecoderShape(config, family.defaultVocab, family.defaultHeads,
                       family.defaultKvHeads, family.defaultHeadDim);
  StringRef prefix = family.classPrefix;
  text.causalLMClass = (prefix + "ForCausalLM").str();
  text.modelClass = (prefix + "Model").str();
  text.embeddingClass = "Embedding";
  text.rotaryClass = (prefix + "RotaryEmbedding").str();
  text.vocab = shape.vocab;
  text.tieEmbeddings = config.getBool("tie_word_embeddings", false);

  StackSpec &stack = text.stack;
  stack.layerClass = (prefix + "DecoderLayer").str();
  stack.attentionClass = (prefix + "Attention").str();
  stack.mlpClass = (prefix + "MLP").str();
  stack.normClass = (prefix + "RMSNorm").str();
  stack.hidden = shape.hidden;
  stack.intermediate = shape.intermediate;
  stack.norm = NormKind::Rms;
  stack.normEps = config.getFloat("rms_norm_eps", 1e-6);
  stack.activation =
      readActivation(config, "hidden_act", "silu", stack.activationClass);
  stack.mlpBias = family.mlpBiasKey && config.getBool("mlp_bias", false);

  AttentionSpec attention;
  attention.numHeads = shape.heads;
  attention.numKvHeads = shape.kvHeads;
  attention.headDim = shape.headDim;
  attention.scale = 1.0 / std::sqrt(double(shape.headDim));
  attention.ropeTheta = config.getFloat("rope_theta", 10000.0);
  attention.ropeScaling = readRopeScaling(config);
  switch (family.attentionBias) {
  case AttentionBias::QkvOnly:
    attention.qkvBias = true;
    break;
  case AttentionBias::FromConfig:
    attention.qkvBias = attention.outBias =
        config.getBool("attention_bias", false);
    break;
  case AttentionBias::None:
    break;
  }
  attention.qkNorm = family.qkNorm;

  std::vector<std::string> derived(shape.layers, "full_attention");
  std::optional<int64_t> window;
  // A window that is given must be a size; null disables it.
  auto readWindow = [&]() -> std::optional<int64_t> {
    std::optional<int64_t> w = config.getOptionalInt("sliding_window", 4096);
    if (w && (*w < 1 || *w > ConfigSection::kMaxDimension)) {
      config.getSize("sliding_window", 4096); // reports it
      return 1;
    }
    return w;
  };
  if (family.window == WindowRule::All) {
    window = readWindow();
    if (window)
      derived.assign(shape.layers, "sliding_attention");
  } else if (family.window == WindowRule::FromMaxLayers) {
    bool useWindow = config.getBool("use_sliding_window", false);
    window = readWindow();
    int64_t maxWindowLayers = config.getInt("max_window_layers", 28);
    if (maxWindowLayers < 0) {
      config.error("max_window_layers")
          << "key '" << config.keyPath("max_window_layers")
          << "' must be >= 0, got " << maxWindowLayers;
      maxWindowLayers = shape.layers;
    }
    if (useWindow && window)
      for (int64_t i = maxWindowLayers; i < shape.layers; ++i)
        derived[i] = "sliding_attention";
  }
  std::vector<std::string> types =
      readLayerTypes(config, shape.layers, std::move(derived));
  for (const std::string &type : types) {
    LayerSpec layer{type, attention};
    if (type == "sliding_attention") {
      if (!window) {
        config.error("layer_types")
            << "sliding_attention layers need 'sliding_window'";
        break;
      }
      layer.attention.slidingWindow = window;
    }
    stack.layers.push_back(std::move(layer));
  }
}

//===----------------------------------------------------------------------===//
// Gemma 3 and Gemma 4 text models
//===----------------------------------------------------------------------===//

void HFConfigImporter::readGemmaText(const ConfigSection &config,
                                     const FamilyRow &row,
                                     TextModelSpec &text) {
  StringRef family = row.classPrefix;
  bool isGemma4 = family == "Gemma4";
  DecoderShape shape =
      readDecoderShape(config, row.defaultVocab, row.defaultHeads,
                       row.defaultKvHeads, row.defaultHeadDim);
  std::string textPrefix = isGemma4 ? "Gemma4Text" : "Gemma3";
  text.causalLMClass = (family + "ForCausalLM").str();
  text.modelClass = (family + "TextModel").str();
  text.embeddingClass = (family + "TextScaledWordEmbedding").str();
  text.rotaryClass = textPrefix + "RotaryEmbedding";
  text.vocab = shape.vocab;
  text.embedScale = std::sqrt(double(shape.hidden));
  text.finalSoftcap =
      config.getOptionalFloat("final_logit_softcapping", std::nullopt);
  text.tieEmbeddings = config.getBool("tie_word_embeddings", true);

  StackSpec &stack = text.stack;
  stack.layerClass = textPrefix + "DecoderLayer";
  stack.attentionClass = textPrefix + "Attention";
  stack.mlpClass = textPrefix + "MLP";
  stack.normClass = (family + "RMSNorm").str();
  stack.hidden = shape.hidden;
  stack.intermediate = shape.intermediate;
  // Gemma 3 normalises by (1 + w) with w from 0; Gemma4RMSNorm by w from 1.
  stack.norm = isGemma4 ? NormKind::Rms : NormKind::RmsUnitOffset;
  stack.normEps = config.getFloat("rms_norm_eps", 1e-6);
  stack.layout = LayerLayout::Sandwich;
  stack.activation = readActivation(config, "hidden_activation",
                                    "gelu_pytorch_tanh", stack.activationClass);

  bool bias = config.getBool("attention_bias", false);
  std::optional<double> attnSoftcap =
      config.getOptionalFloat("attn_logit_softcapping", std::nullopt);
  int64_t window = config.getSize("sliding_window", isGemma4 ? 512 : 4096);
  double globalTheta = config.getFloat("rope_theta", 1000000.0);
  double localTheta = config.getFloat("rope_local_base_freq", 10000.0);
  // rope_scaling stretches the global (full-attention) rope only.
  DictionaryAttr globalScaling = readRopeScaling(config);
  // Gemma4TextConfig keeps one rotary embedding per layer type in
  // rope_parameters; without the key, sliding layers rotate fully at 1e4 and
  // full layers proportionally, a quarter of each head, at 1e6.
  double localPartial = 1.0, globalPartial = isGemma4 ? 0.25 : 1.0;
  if (isGemma4)
    if (std::optional<ConfigSection> params =
            config.section("rope_parameters")) {
      readGemma4Rope(*params, "sliding_attention", localTheta, localPartial);
      readGemma4Rope(*params, "full_attention", globalTheta, globalPartial);
    }
  std::optional<double> queryScalar =
      config.getOptionalFloat("query_pre_attn_scalar", std::nullopt);

  // Gemma 4's full-attention layers have their own head_dim and KV heads and
  // may share the key projection as values.
  int64_t globalHeadDim = shape.headDim, globalKvHeads = shape.kvHeads;
  bool kEqV = false;
  if (isGemma4) {
    globalHeadDim = config.getSize("global_head_dim", 512);
    globalKvHeads = config.getSize("num_global_key_value_heads", shape.kvHeads);
    checkHeads(config, "num_global_key_value_heads", shape.heads,
               globalKvHeads);
    kEqV = config.getBool("attention_k_eq_v", false);
    // Refuse the Gemma 4 variants whose structure parc does not model rather
    // than import a model with different parameters.
    // Gemma4TextConfig defaults to per-layer input embeddings of 256.
    if (int64_t perLayer = config.getInt("hidden_size_per_layer_input", 256))
      config.error("hidden_size_per_layer_input")
          << "per-layer input embeddings (hidden_size_per_layer_input = "
          << perLayer
          << (config.has("hidden_size_per_layer_input")
                  ? ""
                  : ", Gemma4TextConfig's default where the key is absent")
          << ") are not supported; only 0 is";
    if (config.getBool("enable_moe_block", false))
      config.error("enable_moe_block")
          << "mixture-of-experts blocks (enable_moe_block) are not supported";
    if (int64_t shared = config.getInt("num_kv_shared_layers", 0))
      config.error("num_kv_shared_layers")
          << "KV sharing across layers (num_kv_shared_layers = " << shared
          << ") is not supported; only 0 is";
  }

  int64_t pattern = config.getSize("sliding_window_pattern", 6);
  std::vector<std::string> derived;
  for (int64_t i = 0; i < shape.layers; ++i)
    derived.push_back(pattern > 0 && (i + 1) % pattern == 0
                          ? "full_attention"
                          : "sliding_attention");
  std::vector<std::string> types =
      readLayerTypes(config, shape.layers, std::move(derived));
  // Gemma4TextConfig makes the last layer full attention whatever the list
  // says, with a warning; so does the import.
  if (isGemma4 && !types.empty() && types.back() != "full_attention") {
    mlir::emitWarning(config.loc("layer_types"))
        << "the last layer of '" << config.keyPath("layer_types") << "' is '"
        << types.back()
        << "'; Gemma 4 makes it full_attention, as transformers does";
    types.back() = "full_attention";
  }
  for (const std::string &type : types) {
    bool full = type == "full_attention";
    AttentionSpec attention;
    attention.numHeads = shape.heads;
    attention.numKvHeads = full ? globalKvHeads : shape.kvHeads;
    attention.headDim = full ? globalHeadDim : shape.headDim;
    attention.qkvBias = attention.outBias = bias;
    attention.qkNorm = QkNormKind::PerHead;
    attention.kEqV = full && kEqV;
    attention.logitSoftcap = attnSoftcap;
    // Gemma 4 normalises q, k and v per head (v without a scale) and scales
    // the logits by 1, as transformers' Gemma4TextAttention does.
    attention.vNorm = isGemma4;
    attention.scale =
        isGemma4
            ? 1.0
            : 1.0 / std::sqrt(queryScalar.value_or(double(attention.headDim)));
    attention.ropeTheta = full ? globalTheta : localTheta;
    // _compute_proportional_rope_parameters: int(factor * head_dim // 2)
    // pairs rotate, the rest of the head's frequencies are zero.
    int64_t pairs = int64_t(std::floor((full ? globalPartial : localPartial) *
                                       attention.headDim / 2));
    if (pairs < 1)
      config.error("rope_parameters")
          << "the partial_rotary_factor of '" << type << "' rotates no pair "
          << "of a " << attention.headDim << "-wide head";
    else if (pairs < attention.headDim / 2)
      attention.ropeRotatedPairs = pairs;
    if (full)
      attention.ropeScaling = globalScaling;
    if (!full)
      attention.slidingWindow = window;
    stack.layers.push_back(LayerSpec{type, attention});
  }
}

//===----------------------------------------------------------------------===//
// Vision towers
//===----------------------------------------------------------------------===//

/// Fills the shared fields of a vision encoder stack.
static void readVisionStack(const ConfigSection *config, StackSpec &stack,
                            int64_t defaults[4], double eps, StringRef epsKey,
                            int64_t &heads) {
  auto get = [&](StringRef key, int64_t value,
                 int64_t max = ConfigSection::kMaxDimension) {
    return config ? config->requireSize(key, max) : value;
  };
  stack.hidden = get("hidden_size", defaults[0]);
  stack.intermediate = get("intermediate_size", defaults[1]);
  stack.layers.resize(
      get("num_hidden_layers", defaults[2], ConfigSection::kMaxLayers));
  heads = get("num_attention_heads", defaults[3]);
  stack.normEps = config ? config->getFloat(epsKey, eps) : eps;
}

void HFConfigImporter::readSiglipVision(std::optional<ConfigSection> config,
                                        const ConfigSection &root,
                                        int64_t textHidden,
                                        VisionSpec &vision) {
  // Defaults of SiglipVisionConfig, which Gemma3Config falls back to.
  int64_t defaults[4] = {768, 3072, 12, 12};
  StackSpec &stack = vision.stack;
  int64_t heads;
  const ConfigSection *section = config ? &*config : nullptr;
  readVisionStack(section, stack, defaults, 1e-6, "layer_norm_eps", heads);
  vision.style = VisionSpec::Style::Siglip;
  vision.towerClass = "SiglipVisionModel";
  vision.projectorName = "multi_modal_projector";
  vision.projectorClass = "Gemma3MultiModalProjector";
  vision.channels = section ? section->getSize("num_channels", 3) : 3;
  vision.imageSize = section ? section->getSize("image_size", 224) : 224;
  vision.patchSize = section ? section->getSize("patch_size", 16) : 16;
  stack.layerClass = "SiglipEncoderLayer";
  stack.attentionClass = "SiglipAttention";
  stack.mlpClass = "SiglipMLP";
  stack.normClass = "LayerNorm";
  stack.norm = NormKind::Layer;
  stack.layout = LayerLayout::Siglip;
  stack.mlpBias = true;
  stack.activation =
      section ? readActivation(*section, "hidden_act", "gelu_pytorch_tanh",
                               stack.activationClass)
              : ActivationKind::GeluTanh;
  if (!section)
    stack.activationClass = "GELUTanh";

  const ConfigSection &where = section ? *section : root;
  if (heads <= 0 || stack.hidden % heads != 0)
    where.error("num_attention_heads")
        << "vision hidden_size " << stack.hidden
        << " is not divisible by num_attention_heads " << heads;
  if (vision.patchSize <= 0 || vision.imageSize % vision.patchSize != 0) {
    where.error("patch_size")
        << "vision image_size " << vision.imageSize
        << " is not a multiple of patch_size " << vision.patchSize;
    return;
  }
  int64_t side = vision.imageSize / vision.patchSize;
  int64_t tokensPerImage = root.getSize("mm_tokens_per_image", 256);
  auto pooledSide =
      static_cast<int64_t>(std::llround(std::sqrt(double(tokensPerImage))));
  if (tokensPerImage <= 0 || pooledSide * pooledSide != tokensPerImage ||
      side % pooledSide != 0) {
    root.error("mm_tokens_per_image")
        << "mm_tokens_per_image " << tokensPerImage
        << " must be a square that divides the " << side << "x" << side
        << " patch grid";
    return;
  }
  vision.poolKernel = side / pooledSide;
  AttentionSpec attention;
  attention.numHeads = attention.numKvHeads = heads;
  attention.headDim = heads > 0 ? stack.hidden / heads : 1;
  attention.qkvBias = attention.outBias = true;
  attention.causal = false;
  attention.scale = 1.0 / std::sqrt(double(attention.headDim));
  for (LayerSpec &layer : stack.layers)
    layer.attention = attention;
  (void)textHidden;
}

void HFConfigImporter::readGemma4Vision(std::optional<ConfigSection> config,
                                        VisionSpec &vision) {
  int64_t defaults[4] = {1152, 4304, 27, 16};
  StackSpec &stack = vision.stack;
  int64_t heads;
  const ConfigSection *section = config ? &*config : nullptr;
  readVisionStack(section, stack, defaults, 1e-6, "rms_norm_eps", heads);
  auto get = [&](StringRef key, int64_t value) {
    return section ? section->getSize(key, value) : value;
  };
  int64_t kvHeads = get("num_key_value_heads", heads);
  int64_t headDim = get("head_dim", heads > 0 ? stack.hidden / heads : 1);
  vision.style = VisionSpec::Style::Gemma4;
  vision.towerClass = "Gemma4VisionModel";
  vision.projectorName = "embed_vision";
  vision.projectorClass = "Gemma4MultimodalEmbedder";
  vision.patchSize = get("patch_size", 16);
  vision.poolKernel = get("pooling_kernel_size", 3);
  vision.numPositions = get("position_embedding_size", 10240);
  stack.layerClass = "Gemma4VisionEncoderLayer";
  stack.attentionClass = "Gemma4VisionAttention";
  stack.mlpClass = "Gemma4VisionMLP";
  // Every encoder linear is a Gemma4ClippableLinear around its nn.Linear
  // (`self_attn.q_proj.linear.weight` in the checkpoint).
  stack.linearWrapperClass = "Gemma4ClippableLinear";
  stack.normClass = "Gemma4RMSNorm";
  stack.norm = NormKind::Rms;
  stack.layout = LayerLayout::Sandwich;
  stack.activation =
      section ? readActivation(*section, "hidden_activation",
                               "gelu_pytorch_tanh", stack.activationClass)
              : ActivationKind::GeluTanh;
  if (!section)
    stack.activationClass = "GELUTanh";
  if (section)
    checkHeads(*section, "num_key_value_heads", heads, kvHeads);
  AttentionSpec attention;
  attention.numHeads = heads;
  attention.numKvHeads = kvHeads;
  attention.headDim = headDim;
  attention.qkNorm = QkNormKind::PerHead;
  attention.causal = false;
  // Gemma4VisionAttention: v_norm, and logits scaled by 1.
  attention.vNorm = true;
  attention.scale = 1.0;

  for (LayerSpec &layer : stack.layers)
    layer.attention = attention;
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

OwningOpRef<mlir::ModuleOp> HFConfigImporter::import(StringRef symbolName) {
  ConfigSection root = reader.root();
  std::string modelType = root.requireString("model_type");
  if (reader.hadError())
    return nullptr;

  ModelSpec spec;
  spec.symbolName = symbolName.str();
  spec.source = "hf:" + modelType;
  spec.dtype = readDtype(root);
  const FamilyRow *family = findFamily(modelType);
  if (!family) {
    std::string supported;
    llvm::raw_string_ostream os(supported);
    llvm::interleaveComma(getSupportedModelTypes(), os);
    root.error("model_type") << "unsupported model_type '" << modelType
                             << "' (supported: " << supported << ")";
    return nullptr;
  }
  StringRef type = family->modelType, prefix = family->classPrefix;
  switch (family->reader) {
  case FamilyReader::LlamaLike:
    readLlamaFamily(root, *family, spec.text);
    break;
  case FamilyReader::GemmaText:
    readGemmaText(root, *family, spec.text);
    break;
  case FamilyReader::GemmaMultimodal: {
    bool isGemma4 = prefix == "Gemma4";
    std::optional<ConfigSection> textConfig = root.section("text_config");
    if (!textConfig) {
      root.error("text_config") << "missing required key 'text_config' for "
                                   "model_type '"
                                << type << "'";
      return nullptr;
    }
    readGemmaText(*textConfig, *family, spec.text);
    if (root.has("tie_word_embeddings"))
      spec.text.tieEmbeddings = root.getBool("tie_word_embeddings", true);
    spec.wrapperClass = (prefix + "ForConditionalGeneration").str();
    spec.wrapperModelClass = (prefix + "Model").str();
    spec.vision.emplace();
    std::optional<ConfigSection> visionConfig = root.section("vision_config");
    if (isGemma4)
      readGemma4Vision(visionConfig, *spec.vision);
    else
      readSiglipVision(visionConfig, root, spec.text.stack.hidden,
                       *spec.vision);
    break;
  }
  }
  if (reader.hadError())
    return nullptr;
  spec.defaultedKeys = reader.getDefaultedKeys();
  spec.config = reader.getEffectiveConfig();
  return buildModel(reader.getContext(), spec, reader.fileLoc());
}

/// A symbol name from the config's file name: "llama-3.1-8b.json" ->
/// "llama_3_1_8b"; a file named config.json is named after its model type.
static std::string symbolNameFor(StringRef filename) {
  StringRef stem = llvm::sys::path::stem(filename);
  if (stem.empty() || stem == "config" || stem == "-" || stem == "<stdin>")
    stem = "model";
  std::string name;
  for (char c : stem)
    name.push_back(llvm::isAlnum(c) ? c : '_');
  return name;
}

OwningOpRef<mlir::ModuleOp> mlir::parc::importHFConfig(StringRef text,
                                                       StringRef filename,
                                                       MLIRContext *context) {
  context->loadDialect<ParcDialect, func::FuncDialect>();
  ConfigReader reader(context, filename, text);
  if (failed(reader.parse()))
    return nullptr;
  OwningOpRef<mlir::ModuleOp> module =
      HFConfigImporter(reader).import(symbolNameFor(filename));
  if (module && failed(verify(*module)))
    return nullptr;
  return module;
}

void mlir::parc::registerImportHFConfigTranslation() {
  TranslateToMLIRRegistration registration(
      "import-hf-config", "import a Hugging Face config.json as a parc.model",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        OwningOpRef<mlir::ModuleOp> module = importHFConfig(
            buffer->getBuffer(), buffer->getBufferIdentifier(), context);
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<ParcDialect, func::FuncDialect>();
      });
}
