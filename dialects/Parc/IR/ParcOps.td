//===- ParcOps.td - parc dialect operations ----------------*- tablegen -*-===//
//
// Structure ops (model, module, param, tie) describe what named_modules() and
// named_parameters() show; forward ops describe what autograd saves.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCOPS_TD
#define PARC_DIALECT_PARC_IR_PARCOPS_TD

include "Parc/IR/ParcBase.td"
include "Parc/IR/ParcInterfaces.td"
include "Parc/IR/ParcPlanAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Model structure
//===----------------------------------------------------------------------===//

def Parc_ModelOp : Parc_Op<"model", [
    Symbol, SymbolTable, IsolatedFromAbove, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "A model: the root of a module tree";
  let description = [{
    The root `nn.Module` of a model (the `""` entry of `named_modules()`),
    with its class name. Its body holds the child modules, the root's own
    parameters, its `func.func @forward`, the `parc.tie` groups and, for an
    imported model, its `parc.hf_config`. Dotted
    paths of everything below are relative to this op.

    ```mlir
    parc.model @llama class "LlamaForCausalLM" {
      parc.hf_config "hf:llama" {model_type = "llama"} defaulted []
      parc.module @lm_head "Linear" leaf {
        parc.param @weight : tensor<128256x4096xbf16>
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$class_name);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = [{
    $sym_name `class` $class_name attr-dict-with-keyword $bodyRegion
  }];
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::llvm::StringRef":$className)>];
  let skipDefaultBuilders = 1;
  let hasRegionVerifier = 1;
}

def Parc_HFConfigOp : Parc_Op<"hf_config", [HasParent<"ModelOp">]> {
  let summary = "The Hugging Face config a model was imported from";
  let description = [{
    The effective `config.json` of an imported model: every key the
    importer read, with the config class's default filled in where the file
    had none (`defaulted` lists those keys), and the source it came from
    (`hf:<model_type>`). Passes that refuse a plan name the config key a
    value came from (apply-tp's head counts, for instance); keeping the
    dictionary on its own op keeps it off the `parc.model` line, which is
    the excerpt of every diagnostic on the model.

    ```mlir
    parc.hf_config "hf:llama" {hidden_size = 4096 : i64, model_type = "llama"}
        defaulted ["head_dim"]
    ```
  }];
  let arguments = (ins StrAttr:$source, DictionaryAttr:$config,
                       StrArrayAttr:$defaulted);
  let assemblyFormat = [{
    $source $config `defaulted` $defaulted attr-dict
  }];
}

def Parc_NNModuleOp : Parc_Op<"module", [
    Symbol, SymbolTable, NoTerminator, SingleBlock, NoRegionArguments,
    ParentOneOf<["ModelOp", "NNModuleOp"]>]> {
  let summary = "An nn.Module in the model tree";
  let description = [{
    One entry of `named_modules()`: its local name (the last component of the
    dotted path), its Python class and its kind. `leaf` modules have no child
    modules; `list` and `sequential` containers hold children named `0..n-1`
    in order, `dict` containers children with any names; containers hold no
    parameters and no forward of their own. A module with computation holds a
    `func.func @forward`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$class_name,
                       Parc_ModuleKind:$kind);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = [{
    $sym_name $class_name $kind attr-dict-with-keyword $bodyRegion
  }];
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::llvm::StringRef":$className,
                                 "ModuleKind":$kind)>];
  let skipDefaultBuilders = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    bool isContainer() {
      return getKind() == ModuleKind::List || getKind() == ModuleKind::Dict ||
             getKind() == ModuleKind::Sequential;
    }
    /// The forward of this module, if it has one.
    ::mlir::func::FuncOp getForward();
  }];
}

def Parc_ParamOp : Parc_Op<"param", [
    Symbol, ParentOneOf<["ModelOp", "NNModuleOp"]>]> {
  let summary = "An nn.Parameter of the enclosing module";
  let description = [{
    A parameter with its static shape and dtype. Its dotted path is the path
    of the enclosing module followed by its name (`self_attn.q_proj.weight`).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<AnyStaticShapeTensor>:$type);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bounds every analysis relies on: a parameter's dims are positive and
    /// at most kMaxDim, its elements at most kMaxElements, so that element
    /// and byte counts (x 16 for master weights, gradients and moments, x
    /// ranks) stay far inside int64.
    static constexpr int64_t kMaxDim = int64_t(1) << 32;
    static constexpr int64_t kMaxElements = int64_t(1) << 44;
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// Number of scalar elements.
    int64_t getNumElements() { return getTensorType().getNumElements(); }
  }];
}

def Parc_TieOp : Parc_Op<"tie", [
    HasParent<"ModelOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Parameters that share one storage";
  let description = [{
    A tie group: the listed parameters are one tensor (as `lm_head.weight` is
    `model.embed_tokens.weight` when `tie_word_embeddings` is set). The first
    entry owns the storage, as `named_parameters()` reports it; the group is
    counted, sharded and stored once. All entries must have the same type.
  }];
  let arguments = (ins SymbolRefArrayAttr:$params);
  let assemblyFormat = "$params attr-dict";
}

//===----------------------------------------------------------------------===//
// Forward ops
//===----------------------------------------------------------------------===//

def Parc_CallOp : Parc_Op<"call", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<CallOpInterface,
        ["resolveCallable", "resolveCallableInTable"]>]> {
  let summary = "Run a descendant module's forward";
  let description = [{
    Calls the `@forward` of the module named by `callee`, a nested reference
    relative to the module that holds this op (`@layers::@"3"`). The
    callable it resolves to (CallOpInterface) is that module's
    `func.func @forward`, so MLIR's call-graph utilities and parc's forward
    walker follow it.
  }];
  let arguments = (ins SymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let results = (outs Variadic<AnyType>:$results);
  let builders = [OpBuilder<(ins "::mlir::TypeRange":$results,
                                 "::mlir::SymbolRefAttr":$callee,
                                 "::mlir::ValueRange":$args), [{
    build($_builder, $_state, results, callee, args, /*arg_attrs=*/nullptr,
          /*res_attrs=*/nullptr);
  }]>];
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict `:` functional-type($args, $results)
  }];
}

class Parc_ParamUserOp<string mnemonic, list<Trait> traits = []>
    : Parc_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>])>;

def Parc_EmbeddingOp : Parc_ParamUserOp<"embedding", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves"]>]> {
  let summary = "Token embedding lookup";
  let description = [{
    Gathers rows of `weight` (vocab x hidden) for integer `ids`; `scale`
    multiplies the result (Gemma scales by sqrt(hidden)).
  }];
  let arguments = (ins RankedTensorOf<[AnySignlessInteger]>:$ids,
                       SymbolRefAttr:$weight, OptionalAttr<F64Attr>:$scale);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $ids `,` $weight attr-dict `:` type($ids) `->` type($result)
  }];
}

def Parc_LinearOp : Parc_ParamUserOp<"linear", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves",
        "getSaveListClass"]>]> {
  let summary = "y = x W^T (+ b), as torch.nn.Linear";
  let arguments = (ins AnyNon0RankedTensor:$input, SymbolRefAttr:$weight,
                       OptionalAttr<SymbolRefAttr>:$bias);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Parc_MatmulOp : Parc_ParamUserOp<"matmul", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves",
        "getSaveListClass"]>]> {
  let summary = "y = x W with a raw (in x out) weight parameter";
  let description = [{
    A matrix product with a parameter stored input-major, as Gemma 3's
    `mm_input_projection_weight`; unlike `parc.linear` it is not transposed.
  }];
  let arguments = (ins AnyNon0RankedTensor:$input, SymbolRefAttr:$weight);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `->` type($result)
  }];
}

def Parc_PatchEmbeddingOp : Parc_ParamUserOp<"patch_embedding", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves"]>]> {
  let summary = "Non-overlapping patch projection (Conv2d with stride = kernel)";
  let arguments = (ins AnyNon0RankedTensor:$pixels, SymbolRefAttr:$weight,
                       OptionalAttr<SymbolRefAttr>:$bias);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $pixels `,` $weight (`bias` $bias^)? attr-dict `:` type($pixels) `->`
    type($result)
  }];
}

def Parc_PositionEmbeddingOp : Parc_ParamUserOp<"position_embedding", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Add a learned position table to a token sequence";
  let description = [{
    Adds, to each token, its row of the parameter `weight`: a table
    [positions, width] indexed by the token's position, or one table per
    axis of an image's patch grid [axes, positions, width] whose rows at the
    patch's coordinates are summed (Gemma 4's `position_embedding_table`).
  }];
  let arguments = (ins AnyNon0RankedTensor:$input, SymbolRefAttr:$weight);
  let extraClassDeclaration = [{
    /// How many tables `table` holds (1 for a rank-2 table).
    static int64_t getTableAxes(::mlir::RankedTensorType table);
  }];
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input)";
}

def Parc_RmsNormOp : Parc_ParamUserOp<"rms_norm", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over groups of the last dimension";
  let description = [{
    Normalises each group of `weight`'s size along the last dimension: the
    whole hidden vector for a layer norm, one head for Gemma's and Qwen3's
    q/k norms. `unit_offset` scales by (1 + weight) as Gemma does.
  }];
  let arguments = (ins AnyNon0RankedTensor:$input, SymbolRefAttr:$weight,
                       F64Attr:$eps, UnitAttr:$unit_offset);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input)";
}

def Parc_RmsNormalizeOp : Parc_Op<"rms_normalize", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over groups of the last dimension, unscaled";
  let description = [{
    Normalises each group of `group_size` elements along the last dimension
    in fp32, with no learned scale: Gemma 4's `v_norm`
    (`Gemma4RMSNorm(with_scale=False)`) over each value head.
  }];
  let arguments = (ins AnyNon0RankedTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$group_size,
                       F64Attr:$eps);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Parc_LayerNormOp : Parc_ParamUserOp<"layer_norm", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalisation over the last dimension";
  let arguments = (ins AnyNon0RankedTensor:$input, SymbolRefAttr:$weight,
                       OptionalAttr<SymbolRefAttr>:$bias, F64Attr:$eps);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` type($input)
  }];
}

def Parc_RopeOp : Parc_Op<"rope", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["isCheapToRecompute"]>,
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Rotary position embedding applied per head";
  let description = [{
    Rotates each `head_dim` slice of the last dimension by its position;
    `scaling` carries the config's `rope_scaling` (llama3, linear, ...).
    With `rotated_pairs`, only the first that many of the head's
    `head_dim / 2` frequencies are non-zero (exponents still over
    `head_dim`), the rest rotate by nothing: Gemma 4's proportional RoPE,
    `int(partial_rotary_factor * head_dim // 2)` pairs.
  }];
  let arguments = (ins AnyNon0RankedTensor:$input, I64Attr:$head_dim,
                       F64Attr:$theta, OptionalAttr<DictionaryAttr>:$scaling,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:
                           $rotated_pairs);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Parc_AttentionOp : Parc_Op<"attention", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves",
        "getSaveListClass"]>,
    Pure]> {
  let summary = "Scaled dot-product attention over heads";
  let description = [{
    softmax(q k^T * scale [softcapped]) v per head, with grouped-query sharing
    (`num_heads` query heads over `num_kv_heads` key/value heads), optional
    causal and sliding-window masks and attention-logit softcap. `k_eq_v`
    marks layers whose values are their keys' projection (Gemma 4's
    full-attention layers), so `key` and `value` come from one projection.
  }];
  let arguments = (ins AnyNon0RankedTensor:$query, AnyNon0RankedTensor:$key,
                       AnyNon0RankedTensor:$value, I64Attr:$num_heads,
                       I64Attr:$num_kv_heads, I64Attr:$head_dim, F64Attr:$scale,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$sliding_window,
                       OptionalAttr<F64Attr>:$softcap, UnitAttr:$k_eq_v);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` `(` type($query) `,` type($key)
    `,` type($value) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Parc_AddOp : Parc_Op<"add", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["isCheapToRecompute"]>,
    Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise addition (residual connections)";
  let arguments = (ins AnyNon0RankedTensor:$lhs, AnyNon0RankedTensor:$rhs);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Parc_MulOp : Parc_Op<"mul", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise multiplication (gated MLPs)";
  let arguments = (ins AnyNon0RankedTensor:$lhs, AnyNon0RankedTensor:$rhs);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Parc_ActivationOp : Parc_Op<"activation", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Pointwise activation";
  let arguments = (ins Parc_ActivationKind:$kind, AnyNon0RankedTensor:$input);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
}

def Parc_SoftcapOp : Parc_Op<"softcap", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["keepsVocabShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface,
        ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>,
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "cap * tanh(x / cap): Gemma's final logit softcap";
  let arguments = (ins AnyNon0RankedTensor:$input, F64Attr:$cap);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Parc_AvgPoolTokensOp : Parc_Op<"avg_pool_tokens", [
    Parc_TpShardingOpInterface,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    Pure]> {
  let summary = "Average-pool a square grid of tokens by kernel x kernel";
  let arguments = (ins AnyNon0RankedTensor:$input, I64Attr:$kernel);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Parc_MergeImageFeaturesOp : Parc_Op<"merge_image_features", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface, ["inferTpShards"]>,
    Pure, AllTypesMatch<["text", "result"]>]> {
  let summary = "Place image features at the image-token positions";
  let arguments = (ins AnyNon0RankedTensor:$text, AnyNon0RankedTensor:$image);
  let results = (outs AnyNon0RankedTensor:$result);
  let assemblyFormat = [{
    $text `,` $image attr-dict `:` type($text) `,` type($image)
  }];
  let hasVerifier = 1;
}

def Parc_CrossEntropyOp : Parc_Op<"cross_entropy", [
    DeclareOpInterfaceMethods<Parc_TpShardingOpInterface,
        ["keepsVocabShards", "inferTpShards"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface, ["recordSaves"]>,
    Pure]> {
  let summary = "Mean next-token cross-entropy of logits against labels";
  let arguments = (ins AnyRankedTensor:$logits,
                       RankedTensorOf<[AnySignlessInteger]>:$labels);
  let results = (outs 0DTensorOf<[AnyFloat]>:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($loss)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parallelisation plan
//===----------------------------------------------------------------------===//

def Parc_FsdpUnitOp : Parc_Op<"fsdp_unit", [
    Symbol, HasParent<"ModelOp">, SingleBlock, NoTerminator,
    NoRegionArguments]> {
  let summary = "One FSDP unit: parameters all-gathered and freed together";
  let description = [{
    The parameters of one module subtree (a layer, or the root: everything
    outside the layers) that FSDP all-gathers before the module's forward and
    backward and reduce-scatters gradients for afterwards, as one
    `fully_shard` call in PyTorch does. `path` is the wrapped module's dotted
    path ("" for the root). The body shards each parameter with
    `parc.shard_param` on a `shard.grid`. The dtypes are the mixed-precision
    policy: unsharded compute copy, sharded master copy, gradient reduction,
    optimizer moments. `grad_sync` says when the unit's gradients are
    reduce-scattered under gradient accumulation (after every micro-batch,
    the default, or only after the last, keeping the unsharded gradients
    across micro-batches as FSDP2 does without gradient sync).

    ```mlir
    shard.grid @fsdp(shape = 8)
    parc.fsdp_unit @unit_3 path "model.layers.3" attributes {
        compute_dtype = bf16, master_dtype = f32, reduce_dtype = f32,
        optim_dtype = f32, prefetch = 1 : i64, reshard_after_forward = true} {
      %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
      parc.shard_param @model::@layers::@"3"::@mlp::@up_proj::@weight to %s
          {padded_dim0 = 14336 : i64}
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$path,
                       TypeAttr:$compute_dtype, TypeAttr:$master_dtype,
                       TypeAttr:$reduce_dtype, TypeAttr:$optim_dtype,
                       BoolAttr:$reshard_after_forward, I64Attr:$prefetch,
                       DefaultValuedAttr<Parc_GradSyncAttr,
                           "::mlir::parc::GradSync::EveryMicroBatch">:
                           $grad_sync);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = [{
    $sym_name `path` $path attr-dict-with-keyword $bodyRegion
  }];
}

def Parc_ShardParamOp : Parc_Op<"shard_param", [
    HasParent<"FsdpUnitOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Shard one parameter as its FSDP unit stores it";
  let description = [{
    `param` (relative to the model) is stored sharded as `sharding` says;
    `padded_dim0` is dim 0 rounded up to a multiple of the shards along the
    split axes, so every rank holds an equal slice (the padding is memory the
    plan counts).
  }];
  let arguments = (ins SymbolRefAttr:$param, AnyType:$sharding,
                       I64Attr:$padded_dim0);
  let assemblyFormat = "$param `to` $sharding attr-dict `:` type($sharding)";
}

include "Parc/IR/ParcScheduleOps.td"

#endif // PARC_DIALECT_PARC_IR_PARCOPS_TD
