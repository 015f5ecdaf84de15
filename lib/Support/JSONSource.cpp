//===- JSONSource.cpp - a JSON file with source locations -----------------===//

#include "parc/Support/JSONSource.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::parc;
namespace json = llvm::json;

Location JSONSource::fileLoc(unsigned line, unsigned column) const {
  // MLIR's tools print the whole source line under a diagnostic with a
  // column; a config written on one line (or a minified one) would put the
  // file on the terminal. Over kMaxExcerpt characters, the line alone.
  StringRef rest = text;
  for (unsigned i = 1; i < line && !rest.empty(); ++i)
    rest = rest.drop_until([](char c) { return c == '\n'; }).drop_front();
  if (rest.find('\n') > kMaxExcerpt && rest.size() > kMaxExcerpt)
    column = 0;
  return FileLineColLoc::get(context, filename, line, column);
}

FailureOr<json::Value> JSONSource::parse() const {
  // Bound the nesting before the recursive parser sees it.
  unsigned depth = 0, line = 1, column = 1;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        emitError(fileLoc(line, column - 1))
            << "malformed JSON: nested deeper than " << kMaxNesting
            << " levels";
        return failure();
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (parsed)
    return std::move(*parsed);
  // json::ParseError prints "[line:column, byte=offset]: message".
  std::string message = llvm::toString(parsed.takeError());
  SmallVector<StringRef> groups;
  llvm::Regex pattern("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
  line = 1;
  column = 1;
  StringRef detail = message;
  if (pattern.match(message, &groups)) {
    groups[1].getAsInteger(10, line);
    groups[2].getAsInteger(10, column);
    detail = groups[3];
  }
  emitError(fileLoc(line, column)) << "malformed JSON: " << detail;
  return failure();
}

/// Finds `"key"` followed by `:` at or after `from`; npos if absent.
static size_t findKey(StringRef text, StringRef key, size_t from) {
  std::string quoted = ("\"" + key + "\"").str();
  for (size_t pos = text.find(quoted, from); pos != StringRef::npos;
       pos = text.find(quoted, pos + 1)) {
    size_t after = pos + quoted.size();
    while (after < text.size() && llvm::isSpace(text[after]))
      ++after;
    if (after < text.size() && text[after] == ':')
      return pos;
  }
  return StringRef::npos;
}

Location JSONSource::locate(StringRef dottedKey) const {
  SmallVector<StringRef> parts;
  dottedKey.split(parts, '.');
  size_t pos = 0, found = StringRef::npos;
  for (StringRef part : parts) {
    size_t next = findKey(text, part, pos);
    if (next == StringRef::npos)
      break;
    found = pos = next;
  }
  if (found == StringRef::npos)
    return fileLoc();
  StringRef before = text.take_front(found);
  size_t lineStart = before.rfind('\n');
  unsigned column =
      found - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
  return fileLoc(before.count('\n') + 1, column);
}
