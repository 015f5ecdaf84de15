//===- ParcPlanAttrs.td - typed plan decisions -------------*- tablegen -*-===//
//
// The decisions the passes record on the model (a layer's remat, a
// parameter's TP role) as typed attributes: parsed and verified by the
// dialect once, read by every consumer as an enum.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCPLANATTRS_TD
#define PARC_DIALECT_PARC_IR_PARCPLANATTRS_TD

include "Parc/IR/ParcBase.td"

/// What a layer's backward has of its forward (apply-remat).
def Parc_RematKind : I32EnumAttr<"RematKind",
    "activation checkpointing of one layer", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Selective", 1, "selective">,
  I32EnumAttrCase<"Full", 2, "full">,
  I32EnumAttrCase<"Op", 3, "op">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}

def Parc_RematKindAttr : EnumAttr<Parc_Dialect, Parc_RematKind, "remat"> {
  let summary = "A layer's remat decision";
  let description = [{
    `parc.remat = #parc.remat<full>` on a layer's `parc.module`: `none` keeps
    everything the forward saves, `selective` recomputes the ops whose
    AutogradOpInterface says they are cheap (and keeps the rest), `full`
    keeps only the layer's input and reruns its forward in backward, and `op`
    is torchtitan's op-level selective checkpointing: like `full`, but the
    outputs of the ops marked `parc.remat_save` (every second matmul and
    attention) are kept from the forward, so the rerun skips them.
  }];
  let assemblyFormat = "`<` $value `>`";
}

/// How apply-tp splits a parameter over the TP ranks.
/// When FSDP reduce-scatters a unit's gradients under gradient
/// accumulation (apply-fsdp's grad-sync).
def Parc_GradSync : I32EnumAttr<"GradSync", "FSDP gradient sync", [
  /// After every micro-batch's backward: the gradients accumulate sharded.
  I32EnumAttrCase<"EveryMicroBatch", 0, "every_micro_batch">,
  /// After the last micro-batch's only: the unsharded gradients accumulate
  /// across micro-batches in the reduce dtype (FSDP2 under
  /// set_requires_gradient_sync(False), NeMo's defer_fsdp_grad_sync).
  I32EnumAttrCase<"LastMicroBatch", 1, "last_micro_batch">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}

def Parc_GradSyncAttr : EnumAttr<Parc_Dialect, Parc_GradSync, "grad_sync"> {
  let summary = "When an FSDP unit's gradients are reduce-scattered";
  let assemblyFormat = "`<` $value `>`";
}

def Parc_TpRole : I32EnumAttr<"TpRole", "tensor-parallel role of a parameter",
    [
  I32EnumAttrCase<"Colwise", 0, "colwise">,
  I32EnumAttrCase<"Rowwise", 1, "rowwise">,
  I32EnumAttrCase<"Vocab", 2, "vocab">,
  I32EnumAttrCase<"Replicated", 3, "replicated">,
  I32EnumAttrCase<"Sequence", 4, "sequence">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}

def Parc_TpRoleAttr : EnumAttr<Parc_Dialect, Parc_TpRole, "tp"> {
  let summary = "A parameter's tensor-parallel role";
  let description = [{
    `parc.tp = #parc.tp<colwise>` on a `parc.param`: `colwise` splits a
    linear's output features (dim 0 of its weight), `rowwise` its input
    features (dim 1), `vocab` an embedding's or the logits linear's
    vocabulary rows (padded to a multiple of the TP size), `sequence` a norm
    weight that sequence parallelism runs on sequence shards (replicated,
    its gradient all-reduced), `replicated` everything else.
  }];
  let assemblyFormat = "`<` $value `>`";
}

/// How a pipeline orders its stages' forwards and backwards (apply-pp).
def Parc_PpSchedule : I32EnumAttr<"PpSchedule", "pipeline schedule", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Gpipe", 1, "gpipe">,
  I32EnumAttrCase<"OneFOneB", 2, "1f1b">,
  I32EnumAttrCase<"Interleaved1F1B", 3, "interleaved-1f1b">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}

/// A schedule name as a quoted string: "1f1b" is no MLIR keyword.
def Parc_PpScheduleParameter
    : AttrParameter<"::mlir::parc::PpSchedule", "pipeline schedule"> {
  let parser = [{ ::mlir::parc::parsePpSchedule($_parser) }];
  let printer = [{
    $_printer << '"' << ::mlir::parc::stringifyPpSchedule($_self) << '"'
  }];
}

def Parc_PipelinePlanAttr : AttrDef<Parc_Dialect, "PipelinePlan"> {
  let mnemonic = "pp";
  let summary = "The pipeline plan of a model (apply-pp)";
  let description = [{
    `parc.pp` on a `parc.model`: `stages` ranks on the pp axis, each running
    `chunks` virtual stages (interleaved 1F1B), `microbatches` per step in
    the order of `schedule`; what apply-pp balanced (layers and FLOPs per
    virtual stage, the micro-batches each stage holds in flight at most)
    and the schedule's bubble. The steps themselves are
    `parc.pp_schedule`, checked against these counts.

    ```mlir
    parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1,
                       microbatches = 4, stage_layers = array<i64: 2, 2>,
                       in_flight = array<i64: 2, 1>, bubble = 2.5e-01 : f64>
    ```
  }];
  let parameters = (ins
    "int64_t":$stages,
    Parc_PpScheduleParameter:$schedule,
    "int64_t":$chunks,
    "int64_t":$microbatches,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$stage_layers,
    OptionalParameter<"::mlir::DenseF64ArrayAttr">:$stage_costs,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$in_flight,
    OptionalParameter<"::mlir::FloatAttr">:$bubble
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bounds on the counts, so that nothing sized from them (the per-stage
    /// schedules, the unrolled micro-batches) is unbounded.
    static constexpr int64_t kMaxStages = int64_t(1) << 17;
    static constexpr int64_t kMaxChunks = 1024;
    static constexpr int64_t kMaxMicrobatches = 4096;
  }];
}

def Parc_LayerStackAttr : AttrDef<Parc_Dialect, "LayerStack"> {
  let mnemonic = "stack";
  let summary = "One stack of repeated layers (discover-layers)";
  let description = [{
    An entry of `parc.stacks` on a `parc.model`: the stack `name`
    ("language", "vision", ...), the dotted `path` of the container that
    holds its layers, and how many there are. Each layer carries
    `parc.stack` (the name) and `parc.layer_index`.

    ```mlir
    parc.stacks = [#parc.stack<name = "language", path = "model.layers",
                               layers = 32>]
    ```
  }];
  let parameters = (ins
    StringRefParameter<"stack name">:$name,
    StringRefParameter<"container's dotted path">:$path,
    "int64_t":$layers
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// At most as many layers as a config may have (the importer's bound),
    /// so that nothing sized from the count is unbounded.
    static constexpr int64_t kMaxLayers = 4096;
  }];
}

/// A bracketed list of enum cases, integers or pipeline steps, `[features, full]`.
class Parc_ListParameter<string element, string desc>
    : OptionalArrayRefParameter<element, desc> {
  let parser = "::mlir::parc::parseBracketedList<" # element # ">($_parser)";
  let printer = "::mlir::parc::printBracketedList($_printer, $_self)";
}

def Parc_PipelineStepsAttr : AttrDef<Parc_Dialect, "PipelineSteps"> {
  let mnemonic = "pp_steps";
  let summary = "One pipeline stage's schedule (apply-pp)";
  let description = [{
    An entry of `parc.pp_schedule`: the forwards and backwards stage `stage`
    runs, in order, each of a micro-batch on one of its model chunks (`.c1`:
    chunk 1; chunk 0 is left out). The dialect checks the entries against
    the model's `#parc.pp`: every (micro-batch, chunk) forward once, its
    backward once after it.

    ```mlir
    parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, B1]>,
                        #parc.pp_steps<stage = 1, steps = [F0, B0, F1, B1]>]
    ```
  }];
  let parameters = (ins
    "int64_t":$stage,
    Parc_ListParameter<"::mlir::parc::PipelineStep", "steps">:$steps
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Parc_PpTiedCopiesAttr : AttrDef<Parc_Dialect, "PpTiedCopies"> {
  let mnemonic = "pp_tied";
  let summary = "A tie group kept as one copy per pipeline stage (apply-pp)";
  let description = [{
    An entry of `parc.pp_tied_copies` on a `parc.model`: a `parc.tie` group
    whose parameters (`params`, the tie's references) land on more than one
    pipeline stage. Each stage in `stages` (ascending, at least two) keeps
    its own copy, and the copies' gradients are all-reduced over the
    pipeline grid `@pp` before the optimizer step, as Megatron-LM does for
    tied embeddings.

    ```mlir
    parc.pp_tied_copies = [#parc.pp_tied<params = [@model::@embed::@weight,
                                                   @lm_head::@weight],
                                         stages = [0, 1]>]
    ```
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$params,
    Parc_ListParameter<"int64_t", "stages">:$stages
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

/// What one TP rank holds of a value (apply-tp records it on every op).
def Parc_TpShard : I32EnumAttr<"TpShard", "what a TP rank holds of a value", [
  I32EnumAttrCase<"Full", 0, "full">,
  I32EnumAttrCase<"Features", 1, "features">,
  I32EnumAttrCase<"Vocab", 2, "vocab">,
  I32EnumAttrCase<"Sequence", 3, "sequence">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}

/// The collectives an op's TP split needs, each in Megatron's terms.
def Parc_TpComm : I32EnumAttr<"TpComm", "a collective of one op's TP split", [
  /// Identity forward, all-reduce of the input gradient backward (a
  /// column-parallel linear on a replicated input; Megatron's f).
  I32EnumAttrCase<"CopyInput", 0, "copy_input">,
  /// All-gather the sequence shards of the input first (backward:
  /// reduce-scatter), under sequence parallel.
  I32EnumAttrCase<"GatherSequence", 1, "gather_sequence">,
  /// All-reduce the partial output (a row-parallel linear, a vocab
  /// embedding; Megatron's g).
  I32EnumAttrCase<"Reduce", 2, "reduce">,
  /// Reduce-scatter the partial output over the sequence (backward:
  /// all-gather), under sequence parallel.
  I32EnumAttrCase<"ScatterSequence", 3, "scatter_sequence">,
  /// All-reduce the replicated weight's gradient: each rank saw part of the
  /// features or of the sequence (q/k norms, sequence-parallel norms).
  I32EnumAttrCase<"WeightGrad", 4, "weight_grad">,
  /// Vocab-parallel cross-entropy: all-reduce the logit max, the target
  /// logit and the sum of exponentials rather than gather the logits.
  I32EnumAttrCase<"VocabLoss", 5, "vocab_loss">,
  /// All-reduce the replicated bias's gradient (after a sequence-parallel
  /// reduce-scatter, or with a weight_grad).
  I32EnumAttrCase<"BiasGrad", 6, "bias_grad">
]> {
  let cppNamespace = "::mlir::parc";
  let genSpecializedAttr = 0;
}


def Parc_TpShardsAttr : AttrDef<Parc_Dialect, "TpShards"> {
  let mnemonic = "tp_shards";
  let summary = "How one op runs under tensor parallelism (apply-tp)";
  let description = [{
    `parc.tp_shards` on every forward op of a TP plan, decided once by
    apply-tp from each op's TpShardingOpInterface: what a rank holds of each
    value the op defines, the collectives the op needs, and the operands it
    all-gathers over the vocabulary first. On a module's `func.func
    @forward`, `values` are its arguments as its call passes them. The memory model, the lowering and plan.bin
    read it; parc-run executes it without re-deriving it.

    ```mlir
    %0 = parc.linear %x {weight = @q_proj, parc.tp_shards =
        #parc.tp_shards<values = [features], comms = [copy_input]>} ...
    %1 = parc.cross_entropy %logits, %labels {parc.tp_shards =
        #parc.tp_shards<values = [full], gather = [0]>} ...
    ```
  }];
  let parameters = (ins
    Parc_ListParameter<"::mlir::parc::TpShard", "value shards">:$values,
    Parc_ListParameter<"::mlir::parc::TpComm", "collectives">:$comms,
    Parc_ListParameter<"int32_t", "operands gathered over the vocabulary">:
        $gather
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool hasComm(::mlir::parc::TpComm comm) const {
      return ::llvm::is_contained(getComms(), comm);
    }
    bool gathers(unsigned operand) const {
      return ::llvm::is_contained(getGather(), int32_t(operand));
    }
  }];
}

#endif // PARC_DIALECT_PARC_IR_PARCPLANATTRS_TD
