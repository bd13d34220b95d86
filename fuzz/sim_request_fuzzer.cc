// The simulator's request handling (simulator/sim_core.h, Simulator::Handle, what
// simulator/main.cc calls for every HTTP request) on arbitrary chat-completions bodies, with
// authentication, rate limits and the prompt cache on.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "common/base/clock.h"
#include "simulator/sim_core.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hb::sim::Simulator* simulator = [] {
    hb::sim::SimulatorOptions options;
    options.api_key = "sk-fuzz";
    options.rate_limits.rpm = 1000000;
    options.rate_limits.tpm = 1000000000;
    return new hb::sim::Simulator(options, &hb::Clock::Real());
  }();
  hb::sim::SimHttpRequest request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.authorization = "Bearer sk-fuzz";
  request.body = absl::string_view(reinterpret_cast<const char*>(data), size);
  simulator->Handle(request);
  return 0;
}
