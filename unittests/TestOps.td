//===- TestOps.td - an op added outside the parc dialect ---*- tablegen -*-===//
//
// The "how to add an op" walkthrough of docs/ARCHITECTURE.md, followed by a
// test: parc_test.square is defined here with its two parc interfaces and
// nothing else, and OpInterfacesTest checks that the cost model, the
// activation trace and apply-remat's selective mode all count it without a
// line of theirs naming it.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_UNITTESTS_TESTOPS_TD
#define PARC_UNITTESTS_TESTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "Parc/IR/ParcInterfaces.td"

def Test_Dialect : Dialect {
  let name = "parc_test";
  let cppNamespace = "::parc_test";
}

def Test_SquareOp : Op<Test_Dialect, "square", [
    Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Parc_FlopsOpInterface, ["getFlopsPerElement"]>,
    DeclareOpInterfaceMethods<Parc_AutogradOpInterface,
        ["recordSaves", "isCheapToRecompute"]>]> {
  let summary = "y = x * x: one FLOP per element, its backward needs x";
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // PARC_UNITTESTS_TESTOPS_TD
