//===- Safetensors.cpp - the safetensors index, read strictly -------------===//
//
// A small strict parser of the one JSON shape the header has: an object
// whose values are tensor entries ({"dtype", "shape", "data_offsets"}) and
// one optional "__metadata__" object of strings. Every size is checked
// before it is used, so a hostile header is refused, never trusted.
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Safetensors.h"

#include <cstring>
#include <limits>
#include <stdexcept>

using namespace parc::runtime;

namespace {

/// The header length's bound: the format's own (100 MB).
constexpr uint64_t kMaxHeaderBytes = 100 * 1000 * 1000;

class HeaderParser {
public:
  HeaderParser(const std::string &path, const std::string &text)
      : path(path), text(text) {}

  std::map<std::string, SafetensorsEntry> parse(uint64_t dataBytes) {
    std::map<std::string, SafetensorsEntry> index;
    expect('{');
    if (!consume('}')) {
      do {
        std::string name = string();
        expect(':');
        if (name == "__metadata__") {
          metadata();
          continue;
        }
        if (index.count(name))
          fail("tensor '" + printable(name) + "' is named twice");
        index[name] = entry(name, dataBytes);
      } while (consume(','));
      expect('}');
    }
    skipSpace();
    if (at != text.size())
      fail("bytes after the header's JSON object");
    return index;
  }

private:
  [[noreturn]] void fail(const std::string &message) const {
    throw std::runtime_error(path + ": not a safetensors file: " + message);
  }

  static std::string printable(const std::string &s) {
    std::string out;
    for (unsigned char c : s.substr(0, 200))
      out += c >= 0x20 && c < 0x7f ? char(c) : '?';
    return out;
  }

  void skipSpace() {
    while (at < text.size() && std::strchr(" \t\r\n", text[at]) && text[at])
      ++at;
  }
  bool consume(char c) {
    skipSpace();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      fail(std::string("expected '") + c + "' at header byte " +
           std::to_string(at));
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (at >= text.size())
        fail("unterminated string");
      char c = text[at++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at >= text.size())
        fail("unterminated escape");
      char e = text[at++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (at + 4 > text.size())
          fail("a short \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text[at++];
          code <<= 4;
          if (h >= '0' && h <= '9')
            code |= h - '0';
          else if (h >= 'a' && h <= 'f')
            code |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F')
            code |= h - 'A' + 10;
          else
            fail("a \\u escape that is not hexadecimal");
        }
        // UTF-8 of the code unit (names are ASCII in practice).
        if (code < 0x80) {
          out += char(code);
        } else if (code < 0x800) {
          out += char(0xc0 | (code >> 6));
          out += char(0x80 | (code & 0x3f));
        } else {
          out += char(0xe0 | (code >> 12));
          out += char(0x80 | ((code >> 6) & 0x3f));
          out += char(0x80 | (code & 0x3f));
        }
        break;
      }
      default:
        fail("an unknown escape in a string");
      }
    }
  }

  /// A non-negative integer below 2^62.
  uint64_t integer() {
    skipSpace();
    size_t start = at;
    uint64_t value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      value = value * 10 + (text[at++] - '0');
      if (value >= (uint64_t(1) << 62))
        fail("an integer over 2^62");
    }
    if (at == start)
      fail("expected a non-negative integer at header byte " +
           std::to_string(start));
    return value;
  }

  std::vector<uint64_t> integers() {
    std::vector<uint64_t> out;
    expect('[');
    if (consume(']'))
      return out;
    do {
      if (out.size() >= 64)
        fail("a list of more than 64 integers");
      out.push_back(integer());
    } while (consume(','));
    expect(']');
    return out;
  }

  void metadata() {
    expect('{');
    if (consume('}'))
      return;
    do {
      string();
      expect(':');
      string();
    } while (consume(','));
    expect('}');
  }

  SafetensorsEntry entry(const std::string &name, uint64_t dataBytes) {
    SafetensorsEntry e;
    bool dtype = false, shape = false, offsets = false;
    std::vector<uint64_t> range;
    expect('{');
    do {
      std::string key = string();
      expect(':');
      if (key == "dtype" && !dtype) {
        e.dtype = string();
        dtype = true;
      } else if (key == "shape" && !shape) {
        for (uint64_t d : integers())
          e.shape.push_back(static_cast<int64_t>(d));
        shape = true;
      } else if (key == "data_offsets" && !offsets) {
        range = integers();
        offsets = true;
      } else {
        fail("tensor '" + printable(name) +
             "' has an unknown or repeated key '" + printable(key) + "'");
      }
    } while (consume(','));
    expect('}');
    if (!dtype || !shape || !offsets || range.size() != 2)
      fail("tensor '" + printable(name) +
           "' needs dtype, shape and data_offsets [begin, end]");
    int bytes = safetensorsDtypeBytes(e.dtype);
    if (!bytes)
      fail("tensor '" + printable(name) + "' has dtype '" + printable(e.dtype) +
           "' (read: F32, BF16, F16, I64)");
    uint64_t size = static_cast<uint64_t>(bytes);
    for (int64_t d : e.shape) {
      if (d != 0 && size > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
        fail("tensor '" + printable(name) + "' has a shape over 2^62 bytes");
      size *= static_cast<uint64_t>(d);
    }
    if (range[0] > range[1] || range[1] > dataBytes ||
        range[1] - range[0] != size)
      fail("tensor '" + printable(name) + "' has data_offsets [" +
           std::to_string(range[0]) + ", " + std::to_string(range[1]) +
           "], which is not its " + std::to_string(size) +
           " bytes inside the file's " + std::to_string(dataBytes));
    e.begin = range[0];
    e.end = range[1];
    return e;
  }

  const std::string &path;
  const std::string &text;
  size_t at = 0;
};

} // namespace

int parc::runtime::safetensorsDtypeBytes(const std::string &dtype) {
  if (dtype == "F32")
    return 4;
  if (dtype == "BF16" || dtype == "F16")
    return 2;
  if (dtype == "I64")
    return 8;
  return 0;
}

std::map<std::string, SafetensorsEntry>
parc::runtime::readSafetensorsIndex(const std::string &path,
                                    std::string_view bytes) {
  uint64_t size = bytes.size();
  if (size < 8)
    throw std::runtime_error(path + ": not a safetensors file: shorter than "
                                    "its 8-byte header length");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  if (length > kMaxHeaderBytes || length > size - 8)
    throw std::runtime_error(path + ": not a safetensors file: a header of " +
                             std::to_string(length) + " bytes in a file of " +
                             std::to_string(size));
  std::string header(bytes.substr(8, length));
  std::map<std::string, SafetensorsEntry> index =
      HeaderParser(path, header).parse(size - 8 - length);
  for (auto &[name, entry] : index) {
    entry.begin += 8 + length;
    entry.end += 8 + length;
  }
  return index;
}
