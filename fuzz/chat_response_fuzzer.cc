// InterpretChatResponse (llm/openai_llm_client.h) on arbitrary chat-completions bodies, as a
// 200 (the completion parser) and as a 429 and a 400 (the error-body parser).
#include <cstddef>
#include <cstdint>
#include <string>

#include "llm/openai_llm_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hb::HttpResponse response;
  response.body.assign(reinterpret_cast<const char*>(data), size);
  for (int status : {200, 429, 400}) {
    response.status_code = status;
    hb::InterpretChatResponse(response, "sk-fuzz").IgnoreError();
  }
  return 0;
}
