//===- ModelBuilder.h - parc IR for transformer families --------*- C++ -*-===//
//
// The importer reads a config into these specs; ModelBuilder turns a spec into
// the module tree, parameters and forwards transformers would instantiate.
// Families differ only in the specs they fill in, so the IR of every family
// comes from one place.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_IMPORT_MODELBUILDER_H
#define PARC_LIB_IMPORT_MODELBUILDER_H

#include "Parc/IR/ParcOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::parc {

enum class NormKind {
  Rms,           // x / rms(x) * w
  RmsUnitOffset, // x / rms(x) * (1 + w), Gemma
  Layer          // LayerNorm with weight and bias, SigLIP
};

/// How a decoder or encoder layer arranges its norms and names its parts.
enum class LayerLayout {
  /// Llama: input_layernorm before attention, post_attention_layernorm
  /// before the gated MLP (gate_proj, up_proj, down_proj).
  PreNorm,
  /// Gemma: pre-norm as Llama, plus post_attention_layernorm after
  /// attention and pre_/post_feedforward_layernorm around the MLP.
  Sandwich,
  /// SigLIP: layer_norm1, self_attn (k, v, q, out_proj), layer_norm2,
  /// mlp (fc1, activation_fn, fc2).
  Siglip
};

/// Normalisation of queries and keys before rotary.
enum class QkNormKind {
  None,
  /// One RMSNorm over each head's head_dim (Qwen3, Gemma 3/4).
  PerHead
};

struct AttentionSpec {
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  bool qkvBias = false, outBias = false;
  QkNormKind qkNorm = QkNormKind::None;
  /// Values are the key projection (Gemma 4 full attention): no v_proj.
  bool kEqV = false;
  /// Values are RMS-normalised per head without a scale (Gemma 4's v_norm).
  bool vNorm = false;
  bool causal = true;
  std::optional<int64_t> slidingWindow;
  std::optional<double> logitSoftcap;
  double scale = 1.0;
  /// No value: the stack uses no rotary embedding (vision encoders).
  std::optional<double> ropeTheta;
  DictionaryAttr ropeScaling;
  /// Proportional RoPE: how many of a head's frequency pairs rotate (no
  /// value: all of them).
  std::optional<int64_t> ropeRotatedPairs;
};

struct LayerSpec {
  std::string layerType;
  AttentionSpec attention;
};

/// What the layers of one stack share, and the layers themselves.
struct StackSpec {
  std::string layerClass, attentionClass, mlpClass, normClass, activationClass;
  int64_t hidden = 0, intermediate = 0;
  NormKind norm = NormKind::Rms;
  double normEps = 1e-6;
  ActivationKind activation = ActivationKind::Silu;
  LayerLayout layout = LayerLayout::PreNorm;
  bool mlpBias = false;
  /// The module class each attention and MLP linear is wrapped in (its
  /// nn.Linear a child named `linear`); empty: plain nn.Linear modules.
  std::string linearWrapperClass;
  std::vector<LayerSpec> layers;
};

struct TextModelSpec {
  std::string causalLMClass, modelClass, embeddingClass, rotaryClass;
  int64_t vocab = 0;
  StackSpec stack;
  std::optional<double> embedScale, finalSoftcap;
  bool tieEmbeddings = false;
};

struct VisionSpec {
  enum class Style { Siglip, Gemma4 };
  Style style = Style::Siglip;
  std::string towerClass, projectorName, projectorClass;
  int64_t channels = 3, patchSize = 0, imageSize = 0, numPositions = 0;
  /// Average pooling of the token grid before projection.
  int64_t poolKernel = 1;
  StackSpec stack;
};

struct ModelSpec {
  std::string symbolName, source;
  Type dtype;
  TextModelSpec text;
  std::optional<VisionSpec> vision;
  /// The conditional-generation wrapper and its inner model, for
  /// vision-language configs.
  std::string wrapperClass, wrapperModelClass;
  DictionaryAttr config;
  std::vector<std::string> defaultedKeys;
};

/// Builds a builtin.module holding the parc.model of `spec`.
OwningOpRef<mlir::ModuleOp> buildModel(MLIRContext *context,
                                       const ModelSpec &spec, Location loc);

} // namespace mlir::parc

#endif // PARC_LIB_IMPORT_MODELBUILDER_H
