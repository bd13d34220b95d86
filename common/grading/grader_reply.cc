// Grader-reply parsing, byte-compatible with the reference's `parse_json_to_dict` plus its
// acceptance loop (SPEC §5.1):
//
//   cleaned = re.sub(r"^```json\s*|\s*```$", "", reply.strip())
//   value = json.loads(cleaned)   # JSONDecodeError -> {} -> retry
//   accept iff "criteria_met" in value and value["criteria_met"] is True/False
//
// Whitespace is Python's Py_UNICODE_ISSPACE set both for str.strip() and for `\s`.
//
// JSON: RapidJSON's SAX reader with numbers delivered as raw text. Every raw number is checked
// against Python's number grammar, which closes RapidJSON's extra NaN/Inf spellings ("Inf",
// "-Inf", "-NaN", "NaN.5", "Infe3"), and the values are collected into a small tree whose
// objects behave like Python dicts (a repeated key keeps its first position and takes the last
// value). A non-string explanation is rendered as
// json.dumps(value, ensure_ascii=False, separators=(",", ":")) would render it.
//
// Differences from Python's json that RapidJSON 1.1 does not let us close (none occurs in
// practice; each one turns an accepted reply into a retry, never the reverse):
//  * numbers whose magnitude overflows a double ("1e400", integers of more than ~309 digits)
//    are rejected (kParseErrorNumberTooBig); Python gives inf / a big int;
//  * a lone high surrogate escape ("\ud800" not followed by a low one) is rejected; Python keeps
//    it. (A lone low surrogate is accepted by both; we carry it as the 3-byte WTF-8 sequence.)
//  * nesting deeper than kMaxDepth is rejected; Python raises RecursionError near depth 1000,
//    which the reference does not catch (it would crash the run).
// A raw NUL byte is rejected like Python does (RapidJSON would take it as the end of input).
#include "common/grading/grader_reply.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "rapidjson/reader.h"

namespace hb {
namespace {

constexpr int kMaxDepth = 512;

// Py_UNICODE_ISSPACE.
bool IsPythonSpace(uint32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Strictly decodes one UTF-8 sequence at `s[i]` (no overlongs, no surrogates, <= U+10FFFF).
// Returns its length; `*cp` is the code point, or UINT32_MAX for an invalid byte (length 1).
size_t DecodeUtf8(absl::string_view s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  *cp = UINT32_MAX;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len;
  uint32_t value;
  uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, value = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, value = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, value = b0 & 0x07, min = 0x10000;
  } else {
    return 1;
  }
  if (i + len > s.size()) return 1;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t b = byte(i + k);
    if ((b & 0xC0) != 0x80) return 1;
    value = (value << 6) | (b & 0x3F);
  }
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 1;
  *cp = value;
  return len;
}

// Python's str.strip().
absl::string_view PythonStrip(absl::string_view s) {
  size_t begin = s.size();
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (!IsPythonSpace(cp)) {
      if (begin == s.size()) begin = i;
      end = i + len;
    }
    i += len;
  }
  if (begin >= end) return absl::string_view();
  return s.substr(begin, end - begin);
}

// End of the run of Python whitespace starting at `i`.
size_t SkipSpaces(absl::string_view s, size_t i) {
  while (i < s.size()) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (!IsPythonSpace(cp)) break;
    i += len;
  }
  return i;
}

// re.sub(r"^```json\s*|\s*```$", "", t) without flags. The first alternative can only match at
// offset 0, where it is tried first. The second needs "```" followed by the end of the string
// or by a final "\n"; at most one such "```" exists (at n-3 or n-4), so the leftmost match
// starts where the run of whitespace before it starts (but not before the previous match's
// end). Neither alternative matches the empty string, so no empty-match rules apply.
std::string RemoveFences(absl::string_view t) {
  size_t cur = 0;
  if (absl::StartsWith(t, "```json")) cur = SkipSpaces(t, 7);
  const size_t n = t.size();
  size_t q = std::string::npos;
  if (n >= 3 && t.substr(n - 3) == "```") {
    q = n - 3;
  } else if (n >= 4 && t[n - 1] == '\n' && t.substr(n - 4, 3) == "```") {
    q = n - 4;
  }
  if (q == std::string::npos || q < cur) return std::string(t.substr(cur));
  // Leftmost p in [cur, q] with t[p, q) all whitespace. `q` is an ASCII byte, so a strict
  // UTF-8 decode from `cur` lands on it.
  size_t run_start = cur;
  for (size_t i = cur; i < q;) {
    uint32_t cp;
    const size_t len = DecodeUtf8(t, i, &cp);
    i += len;
    if (!IsPythonSpace(cp)) run_start = i;
  }
  return absl::StrCat(t.substr(cur, run_start - cur), t.substr(q + 3));
}

// A parsed JSON value with Python-dict object semantics.
struct Node {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  std::string text;  // kNumber: the raw literal; kString: the decoded bytes
  std::vector<Node> items;
  std::vector<std::pair<std::string, Node>> members;
};

// Python's json number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?, or a constant.
bool IsPythonJsonNumber(absl::string_view s) {
  if (s == "NaN" || s == "Infinity" || s == "-Infinity") return true;
  size_t i = 0;
  const auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (i < s.size() && s[i] >= '1' && s[i] <= '9') {
    while (digit(i)) ++i;
  } else {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == s.size();
}

// SAX handler building a Node tree.
class TreeBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TreeBuilder> {
 public:
  bool Null() { return Put(Node::kNull); }
  bool Bool(bool b) {
    Node* node = Put(Node::kBool);
    node->boolean = b;
    return true;
  }
  bool RawNumber(const char* str, rapidjson::SizeType length, bool /*copy*/) {
    absl::string_view text(str, length);
    if (!IsPythonJsonNumber(text)) {
      error_ = absl::StrCat("invalid number '", text, "'");
      return false;
    }
    Put(Node::kNumber)->text = std::string(text);
    return true;
  }
  bool String(const char* str, rapidjson::SizeType length, bool /*copy*/) {
    Put(Node::kString)->text.assign(str, length);
    return true;
  }
  bool StartObject() { return Open(Node::kObject); }
  bool Key(const char* str, rapidjson::SizeType length, bool /*copy*/) {
    Frame& frame = stack_.back();
    std::string key(str, length);
    auto [it, inserted] = frame.index.try_emplace(key, frame.node->members.size());
    if (inserted) {
      frame.node->members.emplace_back(std::move(key), Node());
    } else {
      frame.node->members[it->second].second = Node();  // last value wins, first position
    }
    frame.pending = &frame.node->members[it->second].second;
    return true;
  }
  bool EndObject(rapidjson::SizeType /*count*/) {
    stack_.pop_back();
    return true;
  }
  bool StartArray() { return Open(Node::kArray); }
  bool EndArray(rapidjson::SizeType /*count*/) {
    stack_.pop_back();
    return true;
  }

  Node& root() { return root_; }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    Node* node;
    Node* pending = nullptr;  // an object's slot for the value after the last key
    absl::flat_hash_map<std::string, size_t> index;
  };

  // The slot for the next value. Pointers stay valid: a container's vector only grows while it
  // is the innermost open one.
  Node* Put(Node::Kind kind) {
    Node* slot;
    if (stack_.empty()) {
      slot = &root_;
    } else if (stack_.back().node->kind == Node::kObject) {
      slot = stack_.back().pending;
    } else {
      slot = &stack_.back().node->items.emplace_back();
    }
    slot->kind = kind;
    return slot;
  }
  bool Open(Node::Kind kind) {
    Node* node = Put(kind);
    stack_.push_back(Frame{node, nullptr, {}});
    return true;
  }

  Node root_;
  std::vector<Frame> stack_;
  std::string error_;
};

// json.dumps(str, ensure_ascii=False).
void AppendPythonJsonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out->append("\\u00");
          out->push_back(kHex[(c >> 4) & 0xF]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// How Python's json.dumps prints the number json.loads made of `raw`.
std::string PythonJsonNumberText(const std::string& raw) {
  if (raw == "NaN" || raw == "Infinity" || raw == "-Infinity") return raw;
  if (raw.find_first_of(".eE") == std::string::npos) {
    return raw == "-0" ? "0" : raw;  // a Python int; JSON forbids leading zeros
  }
  const double value = std::strtod(raw.c_str(), nullptr);
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return PythonFloatRepr(value);
}

// json.dumps(node, ensure_ascii=False, separators=(",", ":")). Depth is bounded by kMaxDepth.
void AppendCompactJson(const Node& node, std::string* out) {
  switch (node.kind) {
    case Node::kNull:
      out->append("null");
      break;
    case Node::kBool:
      out->append(node.boolean ? "true" : "false");
      break;
    case Node::kNumber:
      out->append(PythonJsonNumberText(node.text));
      break;
    case Node::kString:
      AppendPythonJsonString(node.text, out);
      break;
    case Node::kArray:
      out->push_back('[');
      for (size_t i = 0; i < node.items.size(); ++i) {
        if (i > 0) out->push_back(',');
        AppendCompactJson(node.items[i], out);
      }
      out->push_back(']');
      break;
    case Node::kObject:
      out->push_back('{');
      for (size_t i = 0; i < node.members.size(); ++i) {
        if (i > 0) out->push_back(',');
        AppendPythonJsonString(node.members[i].first, out);
        out->push_back(':');
        AppendCompactJson(node.members[i].second, out);
      }
      out->push_back('}');
      break;
  }
}

const Node* FindMember(const Node& object, absl::string_view key) {
  for (const auto& [name, value] : object.members) {
    if (name == key) return &value;
  }
  return nullptr;
}

}  // namespace

std::string StripGraderReplyFences(absl::string_view reply) {
  return RemoveFences(PythonStrip(reply));
}

absl::StatusOr<Verdict> ParseGraderReply(absl::string_view reply) {
  const std::string cleaned = StripGraderReplyFences(reply);
  if (const size_t nul = cleaned.find('\0'); nul != std::string::npos) {
    return absl::DataLossError(
        absl::StrCat("grader reply is not valid JSON: NUL character at offset ", nul));
  }
  constexpr unsigned kFlags = rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNanAndInfFlag |
                              rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseIterativeFlag;
  TreeBuilder builder;
  size_t offset = 0;
  if (absl::Status parsed = ParseJsonEvents<kFlags>(cleaned, builder, kMaxDepth, &offset);
      !parsed.ok()) {
    return absl::DataLossError(absl::StrCat(
        "grader reply is not valid JSON: ",
        builder.error().empty() ? parsed.message()
                                : absl::StrCat(builder.error(), " at offset ", offset)));
  }
  const Node& root = builder.root();
  if (root.kind != Node::kObject) {
    return absl::DataLossError("grader reply is not a JSON object");
  }
  const Node* criteria_met = FindMember(root, "criteria_met");
  if (criteria_met == nullptr) {
    return absl::DataLossError("grader reply has no 'criteria_met'");
  }
  if (criteria_met->kind != Node::kBool) {
    return absl::DataLossError("'criteria_met' is not a JSON boolean");
  }
  Verdict verdict;
  verdict.criteria_met = criteria_met->boolean;
  const Node* explanation = FindMember(root, "explanation");
  if (explanation == nullptr) {
    verdict.explanation = kNoExplanation;
  } else if (explanation->kind == Node::kString) {
    verdict.explanation = explanation->text;
  } else {
    AppendCompactJson(*explanation, &verdict.explanation);
  }
  return verdict;
}

}  // namespace hb
