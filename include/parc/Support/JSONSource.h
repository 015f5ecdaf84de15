//===- JSONSource.h - a JSON file with source locations ---------*- C++ -*-===//
//
// llvm::json keeps no positions, but every JSON input of parc (configs,
// hardware profiles) must be refused at the line of the offending key. This
// keeps the text beside the parsed value and maps keys back to lines.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_SUPPORT_JSONSOURCE_H
#define PARC_SUPPORT_JSONSOURCE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::parc {

class JSONSource {
public:
  JSONSource(MLIRContext *context, StringRef filename, StringRef text)
      : context(context), filename(filename.str()), text(text) {}

  /// Parses the text; a syntax error is emitted as "malformed JSON: ..." at
  /// its line and column, and so is nesting deeper than kMaxNesting (the
  /// parser recurses per level: a hostile file must not overflow the stack).
  FailureOr<llvm::json::Value> parse() const;

  /// Arrays and objects nested deeper than this are refused; real configs
  /// nest three or four levels.
  static constexpr unsigned kMaxNesting = 256;

  /// `filename:line:column`; on a line longer than kMaxExcerpt characters
  /// without the column (0), so that tools print no excerpt of it.
  Location fileLoc(unsigned line = 1, unsigned column = 1) const;
  static constexpr size_t kMaxExcerpt = 200;

  /// The location of `"key":` for a dotted key path ("text_config.hidden_size"
  /// is the hidden_size after text_config); the file when it is absent.
  Location locate(StringRef dottedKey) const;

  MLIRContext *getContext() const { return context; }

private:
  MLIRContext *context;
  std::string filename;
  StringRef text;
};

} // namespace mlir::parc

#endif // PARC_SUPPORT_JSONSOURCE_H
