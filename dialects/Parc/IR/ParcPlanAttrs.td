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
  I32EnumAttrCase<"Full", 2, "full">
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
    keeps only the layer's input and reruns its forward in backward.
  }];
  let assemblyFormat = "`<` $value `>`";
}

/// How apply-tp splits a parameter over the TP ranks.
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

#endif // PARC_DIALECT_PARC_IR_PARCPLANATTRS_TD
