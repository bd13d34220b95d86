#include "common/base/json_io.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace hb {
namespace {

template <unsigned kFlags>
absl::Status ParseInto(absl::string_view text, rapidjson::Document& doc, int max_depth) {
  absl::Status status;
  // The document is its own SAX handler; Populate adopts the root once the parse succeeded.
  auto generate = [&](rapidjson::Document& handler) {
    status = ParseJsonEvents<kFlags>(text, handler, max_depth);
    return status.ok();
  };
  doc.SetNull();
  doc.Populate(generate);
  return status;
}

}  // namespace

absl::Status ParseJson(absl::string_view text, rapidjson::Document& doc,
                       const JsonParseOptions& options) {
  constexpr unsigned kFull = rapidjson::kParseFullPrecisionFlag;
  constexpr unsigned kUtf8 = rapidjson::kParseValidateEncodingFlag;
  if (options.full_precision && options.validate_utf8) {
    return ParseInto<kFull | kUtf8>(text, doc, options.max_depth);
  }
  if (options.full_precision) return ParseInto<kFull>(text, doc, options.max_depth);
  if (options.validate_utf8) return ParseInto<kUtf8>(text, doc, options.max_depth);
  return ParseInto<rapidjson::kParseDefaultFlags>(text, doc, options.max_depth);
}

absl::Status ParseJsonObjectFlag(absl::string_view flag, absl::string_view text,
                                 absl::string_view example, rapidjson::Document& doc) {
  if (absl::Status parsed = ParseJson(text, doc); !parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " is not valid JSON: ", parsed.message()));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " must be a JSON object, e.g. '", example,
                                                   "', got ", JsonTypeName(doc)));
  }
  return absl::OkStatus();
}

const char* JsonTypeName(const rapidjson::Value& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "boolean";
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
  }
  return "unknown";
}

const rapidjson::Value* FindJsonMember(const rapidjson::Value& object, absl::string_view name) {
  const rapidjson::Value* found = nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (absl::string_view(it->name.GetString(), it->name.GetStringLength()) == name) {
      found = &it->value;
    }
  }
  return found;
}

absl::StatusOr<const rapidjson::Value*> RequireJsonMember(const rapidjson::Value& object,
                                                          absl::string_view name) {
  const rapidjson::Value* value = FindJsonMember(object, name);
  if (value == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("field '", name, "': missing"));
  return value;
}

absl::Status JsonTypeError(absl::string_view field, absl::string_view expected,
                           const rapidjson::Value& value) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", field, "': expected ", expected, ", got ", JsonTypeName(value)));
}

absl::StatusOr<std::string> JsonString(const rapidjson::Value& value, absl::string_view field) {
  if (!value.IsString()) return JsonTypeError(field, "a string", value);
  return std::string(value.GetString(), value.GetStringLength());
}

absl::StatusOr<int64_t> JsonInt(const rapidjson::Value& value, absl::string_view field) {
  if (!value.IsInt64()) return JsonTypeError(field, "an integer", value);
  return value.GetInt64();
}

absl::StatusOr<double> JsonDouble(const rapidjson::Value& value, absl::string_view field) {
  if (!value.IsNumber()) return JsonTypeError(field, "a number", value);
  return value.GetDouble();
}

absl::StatusOr<bool> JsonBool(const rapidjson::Value& value, absl::string_view field) {
  if (!value.IsBool()) return JsonTypeError(field, "a boolean", value);
  return value.GetBool();
}

absl::StatusOr<std::string> JsonStringMember(const rapidjson::Value& object,
                                             absl::string_view name) {
  absl::StatusOr<const rapidjson::Value*> value = RequireJsonMember(object, name);
  if (!value.ok()) return value.status();
  return JsonString(**value, name);
}

}  // namespace hb
