//===- FuzzSupport.h - what every parc fuzz target shares -------*- C++ -*-===//
//
// Each target is one LLVMFuzzerTestOneInput calling the library entry point
// a tool calls; no reader logic lives here. Diagnostics are dropped (the
// fuzzer looks for crashes, leaks, timeouts and OOMs, not for messages), and
// stdout, where --estimate-memory prints its report, goes to /dev/null
// unless PARC_FUZZ_STDOUT is set.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_FUZZ_FUZZSUPPORT_H
#define PARC_FUZZ_FUZZSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace parc_fuzz {

/// Sends stdout to /dev/null (libFuzzer reports on stderr).
inline void silenceStdout() {
  if (std::getenv("PARC_FUZZ_STDOUT"))
    return;
  int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
}

/// Drops every diagnostic of `context` for its lifetime.
class DropDiagnostics {
public:
  explicit DropDiagnostics(mlir::MLIRContext *context)
      : handler(context, [](mlir::Diagnostic &) { return mlir::success(); }) {}

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// A single-threaded context with `Dialects` loaded lazily, as the tool's
/// registry would, and its diagnostics dropped.
template <typename... Dialects>
class FuzzContext {
public:
  FuzzContext()
      : context(makeRegistry(), mlir::MLIRContext::Threading::DISABLED),
        drop(&context) {}
  mlir::MLIRContext *get() { return &context; }

private:
  static mlir::DialectRegistry makeRegistry() {
    mlir::DialectRegistry registry;
    registry.insert<Dialects...>();
    return registry;
  }
  mlir::MLIRContext context;
  DropDiagnostics drop;
};

/// What mlir-translate does with a translation's result: verify, then
/// print (to nowhere: the printer is exercised, not read).
inline void verifyAndPrint(mlir::OwningOpRef<mlir::ModuleOp> &module) {
  if (module && mlir::succeeded(mlir::verify(*module)))
    module->print(llvm::nulls());
}

inline llvm::StringRef asText(const uint8_t *data, size_t size) {
  return llvm::StringRef(reinterpret_cast<const char *>(data), size);
}

} // namespace parc_fuzz

#endif // PARC_FUZZ_FUZZSUPPORT_H
