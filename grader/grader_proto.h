// Proto <-> domain conversions of the grader's wire contract (healthbench.grader.v1): one place,
// used by the gRPC service (grader_service/) and the in-process client (grader_client/), so a
// caller sees exactly what hb-grader would send either way. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/healthbench/types.h"
#include "grader/grader.h"
#include "healthbench/grader/v1/grader.pb.h"
#include "llm/llm_client.h"

namespace hb {

std::vector<Message> ConversationFromProto(
    const google::protobuf::RepeatedPtrField<healthbench::grader::v1::Message>& messages);
RubricItem RubricItemFromProto(const healthbench::grader::v1::RubricItem& item);
GradeItemInput GradeItemInputFromProto(const healthbench::grader::v1::GradeItemRequest& request);

void UsageToProto(const ChatUsage& usage, healthbench::grader::v1::TokenUsage* out);
// The verdict, its usage, attempts and the upstream's relayed rate-limit headers.
void ItemVerdictToProto(const ItemVerdict& verdict,
                        healthbench::grader::v1::GradeItemResponse* response);
// The GradeItem reply for `verdict`: ItemVerdictToProto plus the request's id. The gRPC service
// and the in-process client (grader_client/in_process_grader_client.h) both answer with it.
void GradeItemResponseToProto(const ItemVerdict& verdict, const std::string& request_id,
                              healthbench::grader::v1::GradeItemResponse* response);

}  // namespace hb
