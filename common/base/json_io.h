// Reading and writing JSON with RapidJSON. Reading is safe by construction: every JSON parse in the
// tree goes through ParseJson (a DOM) or ParseJsonEvents (a SAX handler). Both parse iteratively
// (rapidjson::kParseIterativeFlag: no recursion, so no stack overflow on hostile input) and reject
// nesting deeper than a limit (kMaxJsonDepth by default), so code that walks the result recursively
// stays bounded too.
//
//   rapidjson::Document doc;
//   absl::Status parsed = ParseJson(line, doc);
//   if (!parsed.ok()) return WithMessagePrefix(parsed, absl::StrCat(path, ":", n, ": "));
//
// The input is UTF-8 without a byte-order mark (a BOM is an error, as in Python's json.loads).
// Errors are kInvalidArgument with a message "<reason> at offset N" (N is the byte offset in
// `text`); callers add what they know (file and line, "upstream reply", ...). Thread-safe: no
// shared state.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/json.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb {

// The deepest nesting of arrays and objects accepted by default. HealthBench inputs, upstream
// replies, summaries and chat requests nest at most 5 levels; 64 leaves room and keeps any
// recursive walk of a parsed document shallow.
inline constexpr int kMaxJsonDepth = 64;

struct JsonParseOptions {
  // Parse decimals with full precision (kParseFullPrecisionFlag).
  bool full_precision = false;
  // Reject invalid UTF-8 in strings (kParseValidateEncodingFlag).
  bool validate_utf8 = false;
  // Nesting deeper than this is an error ("nesting deeper than 64 levels at offset N").
  int max_depth = kMaxJsonDepth;
};

namespace json_internal {

// Forwards SAX events to `inner`, failing the parse when arrays and objects nest deeper than
// `max_depth`.
template <typename Handler>
class DepthLimit {
 public:
  using Ch = char;
  DepthLimit(Handler& inner, int max_depth) : inner_(inner), max_depth_(max_depth) {}

  bool Null() { return inner_.Null(); }
  bool Bool(bool b) { return inner_.Bool(b); }
  bool Int(int i) { return inner_.Int(i); }
  bool Uint(unsigned u) { return inner_.Uint(u); }
  bool Int64(int64_t i) { return inner_.Int64(i); }
  bool Uint64(uint64_t u) { return inner_.Uint64(u); }
  bool Double(double d) { return inner_.Double(d); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return inner_.RawNumber(s, n, copy);
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool copy) { return inner_.String(s, n, copy); }
  bool Key(const Ch* s, rapidjson::SizeType n, bool copy) { return inner_.Key(s, n, copy); }
  bool StartObject() { return Enter() && inner_.StartObject(); }
  bool EndObject(rapidjson::SizeType n) {
    --depth_;
    return inner_.EndObject(n);
  }
  bool StartArray() { return Enter() && inner_.StartArray(); }
  bool EndArray(rapidjson::SizeType n) {
    --depth_;
    return inner_.EndArray(n);
  }

  bool exceeded() const { return exceeded_; }

 private:
  bool Enter() {
    if (++depth_ <= max_depth_) return true;
    exceeded_ = true;
    return false;
  }

  Handler& inner_;
  const int max_depth_;
  int depth_ = 0;
  bool exceeded_ = false;
};

}  // namespace json_internal

// Parses `text` into SAX events for `handler` with RapidJSON flags `kFlags` (kParseIterativeFlag
// is always added). Errors: kInvalidArgument "<reason> at offset N", where reason is "nesting
// deeper than <max_depth> levels" or RapidJSON's (a handler returning false gives "Terminate
// parsing due to Handler error."; `error_offset`, when given, receives N either way so a
// handler can explain its own refusal).
template <unsigned kFlags, typename Handler>
absl::Status ParseJsonEvents(absl::string_view text, Handler& handler,
                             int max_depth = kMaxJsonDepth, size_t* error_offset = nullptr) {
  json_internal::DepthLimit<Handler> limited(handler, max_depth);
  // A plain byte stream: a UTF-8 byte-order mark is an error, as in Python's json.loads.
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::Reader reader;
  const rapidjson::ParseResult result =
      reader.Parse<kFlags | rapidjson::kParseIterativeFlag>(stream, limited);
  if (!result.IsError()) return absl::OkStatus();
  if (error_offset != nullptr) *error_offset = result.Offset();
  if (limited.exceeded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("nesting deeper than ", max_depth, " levels at offset ", result.Offset()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(rapidjson::GetParseError_En(result.Code()), " at offset ", result.Offset()));
}

// Parses `text` into `doc` (replacing its content; on error `doc` is left null). Errors as
// ParseJsonEvents.
absl::Status ParseJson(absl::string_view text, rapidjson::Document& doc,
                       const JsonParseOptions& options = {});

// Parses `text` into `doc` as the JSON object an extra-body flag holds (--llm-extra-body,
// --policy-extra-body). kInvalidArgument naming `flag`: "<flag> is not valid JSON: <why>", or
// "<flag> must be a JSON object, e.g. <example>, got <type>".
absl::Status ParseJsonObjectFlag(absl::string_view flag, absl::string_view text,
                                 absl::string_view example, rapidjson::Document& doc);

// ---------------------------------------------------------------------------------------------
// Typed reading
//
// One error shape for every reader of parsed JSON, kInvalidArgument:
//   "field '<field>': missing"
//   "field '<field>': expected a string, got number"
// Callers put their context in front (WithMessagePrefix: "data.jsonl:3: ").

// "null", "boolean", "number", "string", "array" or "object".
const char* JsonTypeName(const rapidjson::Value& value);

// The member `name` of `object` (an object), or nullptr. When a key repeats, the last one wins,
// as in Python's json.loads.
const rapidjson::Value* FindJsonMember(const rapidjson::Value& object, absl::string_view name);

// The member `name` of `object`, or "field '<name>': missing".
absl::StatusOr<const rapidjson::Value*> RequireJsonMember(const rapidjson::Value& object,
                                                          absl::string_view name);

// "field '<field>': expected <expected>, got <type of value>".
absl::Status JsonTypeError(absl::string_view field, absl::string_view expected,
                           const rapidjson::Value& value);

// `value` as a string (embedded NULs kept), integer (int64), number or boolean; otherwise the
// JsonTypeError for `field`.
absl::StatusOr<std::string> JsonString(const rapidjson::Value& value, absl::string_view field);
absl::StatusOr<int64_t> JsonInt(const rapidjson::Value& value, absl::string_view field);
absl::StatusOr<double> JsonDouble(const rapidjson::Value& value, absl::string_view field);
absl::StatusOr<bool> JsonBool(const rapidjson::Value& value, absl::string_view field);

// The member `name` of `object` as a string: missing or of another type is an error.
absl::StatusOr<std::string> JsonStringMember(const rapidjson::Value& object,
                                             absl::string_view name);

// ---------------------------------------------------------------------------------------------
// Writing

// The compact writer most output uses.
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Writes `value` as a JSON string (any bytes; RapidJSON escapes what JSON requires) with any
// RapidJSON writer (JsonWriter, PrettyWriter).
template <typename Writer>
void WriteJsonString(Writer& writer, absl::string_view value) {
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

// Writes the JSON text `json` (already valid JSON of type `type`, e.g. from JsonNumber) as the
// next value.
template <typename Writer>
void WriteRawJson(Writer& writer, absl::string_view json, rapidjson::Type type) {
  writer.RawValue(json.data(), json.size(), type);
}

// Writes `value` as Python's repr prints it (what the reference's json.dumps writes: "0.5",
// "10.0", "1e-05"), or null when it is not finite.
template <typename Writer>
void WritePythonFloat(Writer& writer, double value) {
  if (!std::isfinite(value)) {
    writer.Null();
    return;
  }
  WriteRawJson(writer, PythonFloatRepr(value), rapidjson::kNumberType);
}

// Writes `value` as a JSON string, or null when absent.
template <typename Writer>
void WriteOptionalJsonString(Writer& writer, const std::optional<std::string>& value) {
  if (value.has_value()) {
    WriteJsonString(writer, *value);
  } else {
    writer.Null();
  }
}

// Writes every member of `object` (a JSON object; anything else writes nothing) as a key and its
// value, in order: an extra body merged into a request body being written.
template <typename Writer>
void WriteJsonMembers(Writer& writer, const rapidjson::Value& object) {
  if (!object.IsObject()) return;
  for (const auto& member : object.GetObject()) {
    writer.Key(member.name.GetString(), member.name.GetStringLength());
    member.value.Accept(writer);
  }
}

// Runs `write` on a compact JsonWriter and returns what it wrote.
//   std::string body = WriteJson([&](JsonWriter& w) { w.StartObject(); ... w.EndObject(); });
template <typename Fn>
std::string WriteJson(Fn&& write) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  write(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace hb
